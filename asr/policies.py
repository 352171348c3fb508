"""Commit policies: which words of a changing hypothesis are safe to commit for good.

The recogniser hands each policy the hypothesis of the words not yet committed (committed words
already removed), so a policy only decides how long a prefix of it to commit now.

- `LocalAgreement` (LocalAgreement-n, Polák et al. / whisper_streaming): commit the longest prefix
  on which the last n hypotheses agree. The baseline.
- `StableCommit` (this project): a word is committed as soon as it is either agreed by two
  successive hypotheses, or already *settled* in one: its end lies at least `margin_s` (0.3 s) before the
  end of the audio decoded and Whisper gave it probability >= `min_probability`. Words well inside
  the audio window, decoded confidently, rarely change, so most words no longer wait one more
  update. `agree_margin_s` (0.2 s): agreement counts only if the earlier sighting had right context.
  `deep_margin_s` (off unless set): a word of middling probability is settled too once that much
  audio follows it. `stale_s` (2.5 s): any word is settled once that much audio follows it, so
  one word the decoder keeps rewording cannot hold every word behind it.

At a pause found by the VAD the stage closes the segment and commits its whole tail with `flush`,
whatever the policy (as whisper_streaming's voice-activity controller does).
"""

from __future__ import annotations

from dataclasses import dataclass

from speech.types import Word

from .normalize import word_key


def agreed_prefix(hypotheses: list[list[Word]]) -> int:
    """Length of the longest prefix on which all hypotheses agree (case/punctuation-blind)."""
    if not hypotheses:
        return 0
    n = min(len(h) for h in hypotheses)
    for i in range(n):
        key = word_key(hypotheses[0][i].text)
        if any(word_key(h[i].text) != key for h in hypotheses[1:]):
            return i
    return n


@dataclass
class LocalAgreementConfig:
    n: int = 2


class LocalAgreement:
    """LocalAgreement-n: commit what the last `n` hypotheses agree on."""

    def __init__(self, n: int = 2) -> None:
        if n < 1:
            raise ValueError(f"LocalAgreement needs n >= 1, got {n}")
        self.n = n
        self._history: list[list[Word]] = []

    def update(self, hypothesis: list[Word], now: float) -> tuple[list[Word], list[Word]]:
        self._history.append(list(hypothesis))
        self._history = self._history[-self.n :]
        if len(self._history) < self.n:
            return [], list(hypothesis)
        k = agreed_prefix(self._history)
        self._history = [h[k:] for h in self._history]
        return list(hypothesis[:k]), list(hypothesis[k:])

    def observe(self, hypothesis: list[Word], now: float) -> None:
        """A hypothesis seen but not to be committed from (the warm-up): it counts for agreement."""
        self._history = (self._history + [list(hypothesis)])[-(self.n - 1):] if self.n > 1 else []

    def flush(self, hypothesis: list[Word]) -> list[Word]:
        self._history = []
        return list(hypothesis)

    def reset(self) -> None:
        self._history = []


@dataclass
class StableCommitConfig:
    margin_s: float = 0.3  # a word ending this long before the decoded audio's end has right context
    min_probability: float = 0.6
    # Agreement counts only when the word's earlier sighting already ended this long before the
    # end of the audio then decoded: a word guessed at the buffer's very edge ("the" for the first
    # 40 ms of "dividing", "hole" for "whole") is often repeated by the next decode and still wrong.
    # 0.2 measured best (docs/asr.md: tiny.en WER 8.48 -> 7.77 % at +0.03 s median lag).
    agree_margin_s: float = 0.2
    # Deep context: a word of middling probability (>= deep_min_probability) also counts as settled
    # once deep_margin_s of audio follows it. Whisper base gives the first second of a segment low
    # probabilities, so without it those words wait for a second decode. None: off (the measured
    # per-language settings are in asr/backends.py, LANGUAGE_POLICY).
    deep_margin_s: float | None = None
    deep_min_probability: float = 0.3
    # Stale words: whatever its probability, a word is settled once stale_s of audio follows it. A
    # segment that opens on a fragment (a word cut by a pause) gets a first word that every decode
    # rewords ("eis.", "eitos", "centros"), and a prefix policy holds every word behind it until
    # the segment ends. 2.5 measured best (docs/asr.md, "Stale words"); 0 or None: off.
    stale_s: float | None = 2.5


class StableCommit:
    """LocalAgreement-2, plus early commit of settled, confident words."""

    def __init__(self, margin_s: float = 0.3, min_probability: float = 0.6, agree_margin_s: float = 0.2,
                 deep_margin_s: float | None = None, deep_min_probability: float = 0.3,
                 stale_s: float | None = 2.5) -> None:
        self.deep_margin_s = deep_margin_s
        self.stale_s = stale_s
        self.deep_min_probability = deep_min_probability
        self.margin_s = margin_s
        self.min_probability = min_probability
        self.agree_margin_s = agree_margin_s
        self._previous: list[Word] = []
        self._previous_now = 0.0

    def _settled(self, word: Word, now: float) -> bool:
        if word.end is None or word.end > now - self.margin_s:
            return False
        if word.probability is None or word.probability >= self.min_probability:
            return True
        if self.stale_s and word.end <= now - self.stale_s:
            return True
        return (self.deep_margin_s is not None and word.end <= now - self.deep_margin_s
                and word.probability >= self.deep_min_probability)

    def _had_context(self, k: int) -> bool:
        """Whether the previous hypothesis's word k ended `agree_margin_s` before its audio's end."""
        end = self._previous[k].end
        return self.agree_margin_s <= 0 or (end is not None and end <= self._previous_now - self.agree_margin_s)

    def update(self, hypothesis: list[Word], now: float) -> tuple[list[Word], list[Word]]:
        agreed = agreed_prefix([self._previous, hypothesis])
        k = 0
        while k < len(hypothesis) and ((k < agreed and self._had_context(k))
                                       or self._settled(hypothesis[k], now)):
            k += 1
        # Keep the previous hypothesis aligned with what is still uncommitted.
        self._previous = list(hypothesis[k:])
        self._previous_now = now
        return list(hypothesis[:k]), list(hypothesis[k:])

    def observe(self, hypothesis: list[Word], now: float) -> None:
        """A hypothesis seen but not to be committed from (the warm-up): it counts for agreement."""
        self._previous = list(hypothesis)
        self._previous_now = now

    def flush(self, hypothesis: list[Word]) -> list[Word]:
        self._previous = []
        return list(hypothesis)

    def reset(self) -> None:
        self._previous = []


def make_local_agreement(config: LocalAgreementConfig, registry: object) -> LocalAgreement:
    return LocalAgreement(config.n)


def make_stable_commit(config: StableCommitConfig, registry: object) -> StableCommit:
    return StableCommit(config.margin_s, config.min_probability, config.agree_margin_s,
                        config.deep_margin_s, config.deep_min_probability, config.stale_s)
