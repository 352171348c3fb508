"""Condensation: the words a listener misses least (fillers, a word repeated at once, a clause
just heard), dropped by the duration control (tts.pace) when the listener is far behind at full
speed."""

from __future__ import annotations

import re

from speech.types import Word


# Words a listener misses least: hesitations a recogniser writes out, in the languages spoken here.
FILLERS = frozenset({
    "uh", "um", "uhm", "erm", "er", "ah", "eh", "hmm", "mm", "em", "ehm", "mhm", "uhh", "umm", "é", "ã", "hum",
})
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def clauses(words: list[Word]) -> list[str]:
    """The normalised clauses of a run of words (split after , ; : . ! ?)."""
    out, current = [], []
    for w in words:
        current.append(w.text)
        if w.text.rstrip("\"'”’)»").endswith((",", ";", ":", ".", "!", "?")):
            out.append(_norm(" ".join(current)))
            current = []
    if current:
        out.append(_norm(" ".join(current)))
    return [c for c in out if c]


def condense(words: list[Word], recent_clauses: list[str], budget: int) -> tuple[list[Word], tuple[str, ...]]:
    """Drop at most `budget` words, least missed first: fillers, a word repeated at once ("the
    the"), then a whole clause of at least 2 words that the listener has just heard. Punctuation
    of a dropped word moves to the word before it, so the sentence keeps its shape."""
    kept: list[Word] = []
    dropped: list[str] = []
    for w in words:
        core = _norm(w.text)
        repeat = bool(kept) and core and _norm(kept[-1].text) == core
        if len(dropped) < budget and core and (core in FILLERS or repeat):
            dropped.append(w.text)
            trail = w.text[len(w.text.rstrip(",;:.!?")):]
            if trail and kept and not kept[-1].text.endswith(trail):
                kept[-1] = Word(kept[-1].text.rstrip(",;:") + trail, kept[-1].start, kept[-1].end, kept[-1].probability)
            continue
        kept.append(w)
    if len(dropped) < budget and recent_clauses:
        kept, more = _drop_repeated_clauses(kept, set(recent_clauses), budget - len(dropped))
        dropped += more
    return kept, tuple(dropped)


def _drop_repeated_clauses(words: list[Word], heard: set[str], budget: int) -> tuple[list[Word], list[str]]:
    out: list[Word] = []
    dropped: list[str] = []
    current: list[Word] = []

    def close() -> None:
        nonlocal current
        text = _norm(" ".join(w.text for w in current))
        if len(current) >= 2 and text in heard and len(dropped) + len(current) <= budget and len(current) < len(words):
            dropped.extend(w.text for w in current)
        else:
            out.extend(current)
        current = []

    for w in words:
        current.append(w)
        if w.text.rstrip("\"'”’)»").endswith((",", ";", ":", ".", "!", "?")):
            close()
    close()
    return out, dropped
