"""Erasure: how much displayed text a stream takes back (Arivazhagan et al. 2020, as simulstream
computes it).

The display after each update is the committed words plus the tentative tail. Each update erases
the words of the previous display that are not a prefix of the new one (a word rewritten counts as
erased). Normalised erasure divides the total by the number of words in the final output. Applied
to the committed words alone it must be 0: a committed word is never retracted.
"""

from __future__ import annotations

from typing import Sequence


def erased_words(displays: Sequence[Sequence[str]]) -> int:
    """Words deleted from the display over successive updates."""
    erased = 0
    for prev, cur in zip(displays, displays[1:]):
        common = 0
        for a, b in zip(prev, cur):
            if a != b:
                break
            common += 1
        erased += len(prev) - common
    return erased


def erasure_rate(displays: Sequence[Sequence[str]], final_words: int) -> float | None:
    """Erased words over the final output's length; None for an empty output (not measurable)."""
    return erased_words(displays) / final_words if final_words else None
