"""What a translation backend returns for one update, and the per-stream backend protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


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
