"""What a translation backend returns for one update, and the per-stream backend protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class BadHypothesis(ValueError):
    """A translation backend returned something that is not a hypothesis (words that are not
    non-empty strings, a stable count outside 0..len(words)): it ends the session, never reaches
    the committed text."""


class EngineFailed(RuntimeError):
    """A translation engine failed twice on one request (a restart did not help): it ends the
    session that asked, not the process."""


@dataclass
class Hypothesis:
    """A full target hypothesis for the current sentence (the committed words first).

    `stable` counts the leading words the backend vouches for: a hypothesis cut by the token
    budget may end inside a word, so its last word is not stable.
    """

    words: list[str]
    stable: int
    tokens_evaluated: int = 0  # model tokens evaluated (prompt + generated)
    rewound: int = 0  # tokens dropped from the cache and so re-evaluated
    generated: int = 0
    looped: bool = False
    cache_tokens: int = 0  # tokens held in the KV cache afterwards (memory)
    copied: bool = False  # a finished sentence that repeats the source instead of translating it

    def __post_init__(self) -> None:
        if not isinstance(self.words, list):
            raise BadHypothesis(f"the translator returned {type(self.words).__name__}, not a list of words")
        for w in self.words:
            if not isinstance(w, str) or not w or w.isspace():
                raise BadHypothesis(f"the translator returned a word that is not text: {w!r}")
        if not isinstance(self.stable, int) or not 0 <= self.stable <= len(self.words):
            raise BadHypothesis(f"the translator vouched for {self.stable!r} of {len(self.words)} words")

    @staticmethod
    def empty() -> "Hypothesis":
        return Hypothesis([], 0)


class TranslationStream(Protocol):
    """One stream's translation state (a KV cache, the recent sentences); one per session."""

    def hypothesis(self, source: list[str], committed: list[str], complete: bool) -> Hypothesis:
        """Translate `source` (one sentence, maybe unfinished), continuing the `committed` words."""
        ...

    def end_sentence(self, source: list[str], target: list[str]) -> None:
        """The sentence is done: it leaves the working area (and may stay as context)."""
        ...

    def reset(self) -> None: ...

    def close(self) -> None: ...
