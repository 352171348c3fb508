"""A simultaneous translation's trace (what was displayed after each source word) and the checks
for output that copies the source instead of translating it.

The measures themselves live in `speech.eval`: AL, LAAL and the other latencies in
`speech.eval.latency` (SimulEval's conventions; `Trace.delays` in source words), erasure in
`speech.eval.erasure`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Trace:
    """One sentence's simultaneous output: what was displayed after each source word."""

    source_words: int = 0
    delays: list[int] = field(default_factory=list)  # per committed target word
    displays: list[list[str]] = field(default_factory=list)  # committed + tentative, per update
    committed: list[list[str]] = field(default_factory=list)  # committed only, per update

    def record(self, read: int, committed: list[str], tentative: list[str], new: int) -> None:
        self.delays += [read] * new
        self.committed.append(list(committed))
        self.displays.append(list(committed) + list(tentative))


def _norm_seq(words: list[str]) -> list[str]:
    """Each word lower-cased without surrounding punctuation (positions kept: may be empty)."""
    return [w.strip(".,;:!?\"'()").lower() for w in words]


def _norm_words(text: str) -> list[str]:
    return [w for w in _norm_seq(text.split()) if w]


def _mostly_from(src: list[str], out: list[str]) -> bool:
    vocab = set(src)
    return sum(w in vocab for w in out) / len(out) >= 0.6


def looks_copied(source: str, output: str) -> bool:
    """The output repeats the source instead of translating it (Gemma does, out of English)."""
    src, out = _norm_words(source), _norm_words(output)
    if len(src) < 4 or not out:
        return False
    return _mostly_from(src, out)


def copy_run_start(source: list[str], output: list[str], start: int = 0, run: int = 3) -> int | None:
    """Where `output` (from word `start` on) begins repeating `run` consecutive source words of
    which at least two are lower-case words, not names or numbers ("appeared on shopping" in a
    German sentence that began "In 2017, Siminoff"): Gemma slipping into a copy of the English
    after a word or two that both languages share. Returns the index of the run's first
    lower-case word (the first copied word that needed translating); None: no such run."""
    src, out = _norm_seq(source), _norm_seq(output)
    grams = {tuple(src[i : i + run]) for i in range(len(src) - run + 1)}
    for i in range(max(start, 0), len(out) - run + 1):
        gram = tuple(out[i : i + run])
        lower = [k for k, w in enumerate(output[i : i + run]) if w.isalpha() and w.islower()]
        if gram in grams and len(lower) >= 2:
            return i + lower[0]  # names before it are shared by both languages: keep them
    return None


def starts_as_copy(source: str, output: str) -> bool:
    """A sentence start too short for `looks_copied` whose output begins by repeating the source.

    With one to three source words a copy ("The" -> "The") and a translation cannot be told apart
    for sure; the caller holds such a start uncommitted until `looks_copied` can judge it."""
    src, out = _norm_words(source), _norm_words(output)
    if not src or len(src) >= 4 or not out or out[0] != src[0]:
        return False
    return _mostly_from(src, out)
