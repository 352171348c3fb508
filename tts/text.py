"""What a voice can speak: markup, entities, emoji and control characters are removed before synthesis.

Engines read such characters aloud ("grinning face", "less than b greater than") or choke on them;
a translator or a user can put them in the text, so every synthesiser cleans its input here.
"""

from __future__ import annotations

import html
import re
import unicodedata

_TAG = re.compile(r"<[^<>]{0,200}>")
_SPACES = re.compile(r"\s+")
# Letters, marks, numbers, punctuation and spaces are speakable; symbols (emoji, arrows, math),
# controls, private-use and unassigned code points are not. Currency and a few common signs stay.
_KEEP_SYMBOLS = set("$€£¥%&+@#")
SENTENCE_END = ".!?…。！？"
CLAUSE_END = ",;:—–、，；："


def clean_text(text: str) -> str:
    """The speakable part of `text` (may be empty)."""
    text = html.unescape(_TAG.sub(" ", text))
    out = []
    for ch in unicodedata.normalize("NFC", text):
        cat = unicodedata.category(ch)
        if cat[0] in "LMNP" or ch in _KEEP_SYMBOLS:
            out.append(ch)
        elif cat[0] == "Z" or ch in "\t\n\r":
            out.append(" ")
    cleaned = _SPACES.sub(" ", "".join(out)).strip()
    return cleaned if any(c.isalnum() for c in cleaned) else ""


def ends_sentence(word: str) -> bool:
    w = word.rstrip("\"'”’»)]")
    return bool(w) and w[-1] in SENTENCE_END


def ends_clause(word: str) -> bool:
    w = word.rstrip("\"'”’»)]")
    return bool(w) and w[-1] in CLAUSE_END
