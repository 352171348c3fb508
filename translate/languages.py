"""Languages the translators know, their names in prompts, and the FLORES-101 file codes."""

from __future__ import annotations

from itertools import permutations

from speech.errors import UserError

NAMES = {"en": "English", "es": "Spanish", "pt": "Portuguese", "de": "German", "fr": "French",
         "it": "Italian", "ca": "Catalan", "gl": "Galician", "ro": "Romanian"}
FLORES_CODES = {"en": "eng", "es": "spa", "pt": "por", "de": "deu", "fr": "fra",
                "it": "ita", "ca": "cat", "gl": "glg", "ro": "ron"}
# The languages the LLM's built-in few-shot prompts cover (translate/examples.py); the others are
# reached through the translation graph (translate/graph.py).
LLM_LANGUAGES = ("en", "es", "pt", "de", "fr")
LLM_PAIRS: tuple[tuple[str, str], ...] = tuple(permutations(LLM_LANGUAGES, 2))
ALL_PAIRS: tuple[tuple[str, str], ...] = tuple(permutations(NAMES, 2))


def check_pair(source: str, target: str, supported: tuple[tuple[str, str], ...] = ALL_PAIRS, what: str = "") -> None:
    """A UserError listing the supported pairs when (source, target) is not one of them."""
    if (source, target) in supported:
        return
    if supported is ALL_PAIRS:
        unknown = [x for x in (source, target) if x not in NAMES]
        if unknown or source == target:
            known = ", ".join(NAMES)
            what_ = f"unknown language {unknown[0]!r}" if unknown else f"source and target are both {source!r}"
            raise UserError(f"unsupported language pair {source}-{target}: {what_}; languages: {known}")
    listed = ", ".join(f"{s}-{t}" for s, t in supported)
    who = f" for {what}" if what else ""
    raise UserError(f"unsupported language pair {source}-{target}{who}; supported: {listed}")


def parse_pair(text: str) -> tuple[str, str]:
    """'en-es' -> ('en', 'es'), with a clear error for anything else."""
    parts = text.strip().split("-")
    if len(parts) != 2 or not all(parts):
        raise UserError(f"language pair {text!r} should look like en-es")
    return parts[0], parts[1]
