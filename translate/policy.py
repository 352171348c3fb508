"""Target commit policies: how many words of a hypothesis become committed (never retracted).

Each policy is per stream and per sentence (`reset()` at a sentence start). At the end of a source
sentence and at end of stream the translator commits everything regardless of the policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from .hypothesis import Hypothesis
from .segment import ends_clause


class TargetPolicy(Protocol):
    def commit(self, committed: int, hyp: Hypothesis, source_words: int, source: Sequence[str] = (),
               ahead: Hypothesis | None = None) -> int:
        """The new total number of committed words (>= `committed`, <= hyp.stable).

        `source` is the current sentence's source words so far (for boundary-aware policies);
        `ahead` the hypothesis of the same source plus the recogniser's tentative tail, when the
        policy asks for one (`lookahead`).
        """
        ...

    def reset(self) -> None: ...


@dataclass(frozen=True)
class LocalAgreementConfig:
    n: int = 2  # commit the prefix on which the last n hypotheses agree
    # At a source clause boundary (the last source word ends with , ; :) the translation of the
    # prefix is a finished clause, not a guess at the rest: the last `boundary_n` hypotheses
    # suffice there (1: commit the stable hypothesis). 0: no special case.
    boundary_n: int = 0
    # A wait-k floor: when > 0, at least `source words - k + 1` words of the stable hypothesis are
    # committed even without agreement, so a model that keeps changing its mind still keeps pace.
    k: int = 0
    # Target words the floor allows per source word past k: the target language runs longer
    # than the source (Spanish ~1.2 words per English word), so a floor of one word per source
    # word falls further behind along the sentence. 1.0: one for one.
    ratio: float = 1.0
    # Also agree with a look-ahead: the translation of the source plus the recogniser's tentative
    # words (its best guess of what comes next). A prefix that the next words do not change is
    # committed now, instead of one source update later when the next hypothesis confirms it.
    lookahead: bool = False
    # Words at the end of that shared prefix still held back: the look-ahead is a guess, and the
    # last shared word is the one the next words most often change (an article, a verb ending).
    lookahead_hold: int = 1


@dataclass
class LocalAgreement:
    """LocalAgreement-n: commit the longest common prefix of the last n hypotheses' stable words."""

    config: LocalAgreementConfig = field(default_factory=LocalAgreementConfig)
    _history: list[list[str]] = field(default_factory=list)

    @property
    def lookahead(self) -> bool:
        return self.config.lookahead

    def commit(self, committed: int, hyp: Hypothesis, source_words: int, source: Sequence[str] = (),
               ahead: Hypothesis | None = None) -> int:
        current = hyp.words[: hyp.stable]
        floor = 0
        if ahead is not None:
            floor = max(committed, agreement(committed, [current, ahead.words[: ahead.stable]]) - self.config.lookahead_hold)
        self._history.append(current)
        self._history = self._history[-self.config.n :]
        n = self.config.n
        if self.config.boundary_n and source and ends_clause(source[-1]):
            n = min(n, self.config.boundary_n)
        if self.config.k and source_words >= self.config.k:
            floor = max(floor, min(len(current), int(self.config.ratio * (source_words - self.config.k + 1))))
        if len(self._history) < n:
            return max(committed, floor)
        return max(committed, agreement(committed, self._history[-n:]), floor)

    def reset(self) -> None:
        self._history = []


def agreement(committed: int, hypotheses: Sequence[Sequence[str]]) -> int:
    """Length of the common prefix of `hypotheses` (at least `committed`: those words stand)."""
    agreed = committed
    while all(len(h) > agreed for h in hypotheses) and len({h[agreed] for h in hypotheses}) == 1:
        agreed += 1
    return agreed


@dataclass(frozen=True)
class WaitKConfig:
    k: int = 3  # source words read before the first target word


@dataclass
class WaitK:
    """wait-k: after k source words, one target word per further source word."""

    config: WaitKConfig = field(default_factory=WaitKConfig)

    def commit(self, committed: int, hyp: Hypothesis, source_words: int, source: Sequence[str] = (),
               ahead: Hypothesis | None = None) -> int:
        allowed = source_words - self.config.k + 1
        return max(committed, min(hyp.stable, allowed))

    def reset(self) -> None:
        pass


def local_agreement(config: LocalAgreementConfig, registry) -> LocalAgreement:  # noqa: ANN001
    if config.n < 1:
        raise ValueError("local-agreement needs n >= 1")
    if config.boundary_n < 0 or config.k < 0 or config.lookahead_hold < 0:
        raise ValueError("local-agreement needs boundary_n >= 0, k >= 0 and lookahead_hold >= 0")
    if config.ratio <= 0:
        raise ValueError("local-agreement needs ratio > 0")
    return LocalAgreement(config)


def wait_k(config: WaitKConfig, registry) -> WaitK:  # noqa: ANN001
    if config.k < 1:
        raise ValueError("wait-k needs k >= 1")
    return WaitK(config)
