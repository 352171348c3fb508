"""Sentence segmentation of a growing stream of source words.

A sentence ends at a word that ends with . ! ? (possibly followed by closing quotes or brackets),
unless the word is a known abbreviation or an initial. A sentence that reaches `max_words` with
no such word is cut (forced segmentation), preferably after the last comma or semicolon among its
final words, so the translator's context and the tentative tail stay bounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_END = re.compile(r"[.!?\u2026\u3002][\"'\u201d\u2019)\]\u00bb]*$")
_SOFT = re.compile(r"[,;:][\"'\u201d\u2019)\]\u00bb]*$")
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e no sra srta dra sr. u.s u.k a.m p.m".split()
)


def ends_clause(word: str) -> bool:
    """A clause boundary: the word ends with , ; or : (possibly followed by closing quotes)."""
    return bool(_SOFT.search(word))


def ends_sentence(word: str) -> bool:
    if not _END.search(word):
        return False
    stem = word.rstrip(".!?\"')]\u201d\u2019\u00bb").lower()
    if word.endswith(".") and (stem in ABBREVIATIONS or re.fullmatch(r"[a-z]", stem) or re.fullmatch(r"(\w\.)+\w", stem)):
        return False
    return True


@dataclass
class SentenceSegmenter:
    """Collects source words; `push` returns the sentences it completed, in order."""

    max_words: int = 40
    soft_window: int = 15  # a forced cut looks this far back for a comma
    words: list[str] = field(default_factory=list)
    forced: int = 0

    def push(self, word: str) -> list[list[str]]:
        done: list[list[str]] = []
        self.words.append(word)
        if ends_sentence(word):
            done.append(self.words)
            self.words = []
        elif len(self.words) >= self.max_words:
            done.append(self._force())
        return done

    def _force(self) -> list[str]:
        self.forced += 1
        cut = len(self.words)
        for i in range(len(self.words) - 1, max(len(self.words) - 1 - self.soft_window, 0), -1):
            if _SOFT.search(self.words[i - 1]):
                cut = i
                break
        head, self.words = self.words[:cut], self.words[cut:]
        return head

    def flush(self) -> list[str]:
        """End of speech or stream: whatever is pending is a sentence."""
        head, self.words = self.words, []
        return head

    def reset(self) -> None:
        self.words = []
