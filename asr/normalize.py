"""The one text normaliser for word error rate: the same rules on the reference and the hypothesis.

Lower case, no punctuation, and numbers spelled out in words of the text's language on both sides
(Whisper writes "25", references often write "twenty five" or "veinticinco"). English also expands
common abbreviations, reads four-digit years in pairs and spells ordinals, decimals and "%";
Spanish, Portuguese, German, French, Italian, Catalan and Galician spell integers with
`tts.numbers`. Other languages are lower-cased and stripped of punctuation only.
"""

from __future__ import annotations

import re
import unicodedata

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINAL_IRREGULAR = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
    "nine": "ninth", "twelve": "twelfth",
}
_ABBREVIATIONS = {
    "mr": "mister", "mrs": "missus", "ms": "miss", "dr": "doctor", "st": "saint", "jr": "junior",
    "vs": "versus", "etc": "et cetera",
}
_SYMBOLS = {"%": " percent ", "&": " and ", "+": " plus ", "=": " equals "}


def spell_number(n: int) -> str:
    """English words for a non-negative integer (up to the billions)."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, rest = divmod(n, 10)
        return _TENS[tens] + ("" if rest == 0 else " " + _ONES[rest])
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return _ONES[hundreds] + " hundred" + ("" if rest == 0 else " " + spell_number(rest))
    for size, name in ((10**9, "billion"), (10**6, "million"), (1000, "thousand")):
        if n >= size:
            head, rest = divmod(n, size)
            return spell_number(head) + " " + name + ("" if rest == 0 else " " + spell_number(rest))
    raise AssertionError("unreachable")


def spell_ordinal(n: int) -> str:
    words = spell_number(n).split()
    last = words[-1]
    if last in _ORDINAL_IRREGULAR:
        words[-1] = _ORDINAL_IRREGULAR[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


def _spell_token(match: re.Match[str]) -> str:
    digits, suffix = match.group(1).replace(",", ""), match.group(2)
    n = int(digits)
    if suffix:
        return " " + spell_ordinal(n) + " "
    # Four-digit years are read in pairs ("nineteen ninety"), as speakers say them.
    if 1100 <= n <= 1999 or 2010 <= n <= 2099:
        hi, lo = divmod(n, 100)
        return " " + spell_number(hi) + " " + ("hundred" if lo == 0 else ("oh " if lo < 10 else "") + spell_number(lo)) + " "
    return " " + spell_number(n) + " "


def normalize(text: str, language: str = "en") -> str:
    """Lower-case words separated by single spaces, comparable across transcription styles."""
    t = unicodedata.normalize("NFKC", text).lower()
    if language.lower().split("-")[0] != "en":
        from speech.tts.numbers import spell_numbers

        return _strip_punctuation(spell_numbers(t, language))
    for sym, word in _SYMBOLS.items():
        t = t.replace(sym, word)
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)  # 1,000 -> 1000
    t = re.sub(r"(\d+)\.(\d+)", lambda m: f"{m.group(1)} point {' '.join(m.group(2))}", t)
    t = re.sub(r"(\d+)(st|nd|rd|th)?\b", _spell_token, t)
    words = [_ABBREVIATIONS.get(w, w) for w in _strip_punctuation(t).split()]
    return " ".join(" ".join(words).split())


def _strip_punctuation(t: str) -> str:
    t = re.sub(r"[’`]", "'", t)
    t = re.sub(r"(?<=l)\.(?=l)", "·", t)  # Catalan "l·l" (also typed "l.l") is inside one word
    t = re.sub(r"[^\w\s'·]|_", " ", t)  # punctuation and hyphens become spaces
    t = re.sub(r"(?<!\w)['·]|['·](?!\w)", " ", t)  # quotes, but keep "don't", "l'homme", "col·lisió"
    return " ".join(t.split())


def word_key(text: str) -> str:
    """The form two hypotheses are compared in (case and punctuation do not count)."""
    return re.sub(r"[^\w']", "", text.lower())
