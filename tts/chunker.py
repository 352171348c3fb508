"""Text chunker: decides when committed target text is worth speaking.

Speaking every word as it is committed gives the lowest latency but choppy prosody (each call to a
synthesiser is a little sentence of its own, with its own final intonation); waiting for the whole
sentence sounds natural but adds seconds. The chunker speaks at the first natural break:

- a sentence end (. ! ? ...) or a `final` update: everything that waits is spoken;
- a clause boundary (, ; :) once at least `min_words` words wait;
- `max_words` words waiting without any break;
- a time-out: no new commit for `timeout_s` (the translator is stuck waiting for source words)
  while words wait; `short_timeout_s` while fewer than `min_words` wait, since a word or two
  spoken alone get a sentence's intonation and are the hardest to follow. Waiting pays only when
  the translator's next update can come before the time-out: its updates follow the
  recogniser's, a second apart with whisper-base, so 0.8 s after a commit nothing new has come
  and the same words are spoken 0.8 s later. With `cadence` on, `min_words` or more are spoken at
  once when the next update is due (the median of the last gaps between updates) no sooner than
  the time-out; fewer keep waiting `short_timeout_s` for company.

Only committed words enter: tentative words may still change and are never spoken.
Times are the session's wall times (computation-aware), so the same rules hold on the simulated
clock (a time-out is noticed when the next update arrives after the deadline) and live.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from speech.types import TextUpdate, Word

from .text import ends_clause, ends_sentence


@dataclass(frozen=True)
class ChunkerConfig:
    min_words: int = 3  # fewest words spoken at a clause boundary (sentence ends always speak)
    max_words: int = 10  # speak at the latest after this many words without a break
    timeout_s: float = 0.8  # speak what waits when no word was committed for this long
    short_timeout_s: float = 1.2  # the same while fewer than min_words wait (0: timeout_s)
    # When one update commits many words at once (a translator that commits whole sentences), cut
    # the first piece after this many words (0: max_words): its audio starts sooner, and the rest
    # is synthesised while it plays.
    first_words: int = 0
    # Split every piece longer than this (plus at least 2 more words) into a short lead, up to its
    # first clause boundary or `lead_words` words, and the rest (0: never). For engines that
    # synthesise a call whole before its first sample (Piper): the lead's audio starts sooner and
    # the rest is synthesised while it plays, at the cost of one more prosodic break.
    lead_words: int = 0
    # While the listener hears nothing (the start of a talk, or after a pause), speak as soon as
    # this many words wait (0: no special case): the first audio comes sooner, and the words
    # after it are synthesised while it plays.
    idle_words: int = 0
    # Skip a time-out that no update can beat (see the module doc): the next update is expected one
    # median gap (of the last `CADENCE_GAPS`) after the latest; False: always wait the time-out.
    cadence: bool = True

    def __post_init__(self) -> None:
        if self.first_words < 0 or self.lead_words < 0 or self.idle_words < 0:
            raise ValueError(
                f"chunker first_words, lead_words and idle_words must be >= 0, got {self.first_words}, "
                f"{self.lead_words}, {self.idle_words}"
            )
        if self.min_words < 1 or self.max_words < self.min_words:
            raise ValueError(
                f"chunker needs 1 <= min_words <= max_words, got {self.min_words} and {self.max_words}"
            )
        if self.timeout_s <= 0 or self.short_timeout_s < 0:
            raise ValueError(
                f"chunker time-outs must be positive, got {self.timeout_s} and {self.short_timeout_s}"
            )


@dataclass(frozen=True)
class SpeechPiece:
    """A run of committed words to synthesise as one call."""

    words: tuple[Word, ...]
    reason: str  # "sentence", "clause", "max_words", "timeout", "final"
    ready_time: float  # wall time at which the piece became speakable
    commit_time: float  # wall time of the update that committed its last word
    first_commit_time: float  # wall time of the update that committed its first word
    source_time: float  # source seconds consumed when its last word was committed
    # per word: when the newest source word behind it was spoken (None: unknown)
    spoken_times: tuple[float | None, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)


@dataclass
class _Pending:
    word: Word
    wall_time: float
    source_time: float
    spoken_time: float | None = None


CADENCE_GAPS = 4  # gaps between updates whose median is the translator's cadence


@dataclass
class TextChunker:
    config: ChunkerConfig = field(default_factory=ChunkerConfig)
    _pending: list[_Pending] = field(default_factory=list)
    _updates: list[float] = field(default_factory=list)  # wall times of the latest updates

    @property
    def waiting(self) -> int:
        return len(self._pending)

    def waiting_words(self) -> list[tuple[str, float | None]]:
        """The words that wait, each with when its source word was spoken."""
        return [(p.word.text, p.spoken_time) for p in self._pending]

    def deadline(self) -> float | None:
        """When the words that wait will be spoken if nothing else arrives (None: nothing waits)."""
        if not self._pending:
            return None
        last = self._pending[-1].wall_time
        if self.config.short_timeout_s and len(self._pending) < self.config.min_words:
            # a word or two wait for company: the next update is not always as late as the
            # cadence says, and a lone word is the worst heard (docs/synthesis.md)
            return last + self.config.short_timeout_s
        gap = self.cadence() if self.config.cadence else None
        if gap is not None and self._updates[-1] + gap >= last + self.config.timeout_s:
            return last  # the next update is due after the time-out: waiting would only delay the same words
        return last + self.config.timeout_s

    def cadence(self) -> float | None:
        """The median gap between the latest updates (None: fewer than two seen)."""
        times = self._updates
        if len(times) < 2:
            return None
        gaps = sorted(b - a for a, b in zip(times, times[1:]))
        return gaps[len(gaps) // 2]

    def expire(self, now: float) -> list[SpeechPiece]:
        """Speak what waits if its time-out has passed at `now`."""
        deadline = self.deadline()
        if deadline is None or now < deadline:
            return []
        return self._take(len(self._pending), "timeout", deadline)

    def push(self, update: TextUpdate, idle: bool = False) -> list[SpeechPiece]:
        """Take an update's committed words; `idle`: the listener hears nothing at the moment."""
        pieces = self.expire(update.wall_time)
        self._updates = (self._updates + [update.wall_time])[-(CADENCE_GAPS + 1):]
        words = update.committed
        # A burst starts when nothing waits: its first piece may be cut short (first_words).
        limit = (self.config.first_words or self.config.max_words) if not self._pending else self.config.max_words
        if idle and self.config.idle_words:
            limit = min(limit, self.config.idle_words)
        for i, word in enumerate(words):
            spoken = word.end if word.end is not None else update.spoken_time
            self._pending.append(_Pending(word, update.wall_time, update.source_time, spoken))
            n = len(self._pending)
            if ends_sentence(word.text):
                pieces += self._take(n, "sentence", update.wall_time)
            elif ends_clause(word.text) and n >= self.config.min_words:
                pieces += self._take(n, "clause", update.wall_time)
            elif n >= limit and not self._short_tail(words[i + 1 :], update.final):
                pieces += self._take(n, "max_words", update.wall_time)
            if not self._pending:
                limit = self.config.max_words
        if (update.final or update.end_of_stream) and self._pending:
            pieces += self._take(len(self._pending), "final", update.wall_time)
        return pieces

    def _short_tail(self, rest: tuple[Word, ...], final: bool) -> bool:
        """Whether cutting here would leave fewer than `min_words` words before a break that is
        already known (a sentence end in the same update, or the update's end when it is final):
        those few words would then be spoken alone, with a sentence's intonation."""
        for j, word in enumerate(rest):
            if j + 1 >= self.config.min_words:
                return False
            if ends_sentence(word.text):
                return True
        return final and 0 < len(rest) < self.config.min_words

    def flush(self, now: float) -> list[SpeechPiece]:
        """End of stream: speak everything that waits."""
        if not self._pending:
            return []
        return self._take(len(self._pending), "final", now)

    def _take(self, n: int, reason: str, ready: float) -> list[SpeechPiece]:
        """The first `n` waiting words as one piece, or two (lead + rest, see `lead_words`). Both
        parts keep the commit that made the piece speakable (`commit_time`): the lead is that
        commit's first audio."""
        taken, self._pending = self._pending[:n], self._pending[n:]
        cut = self._lead_cut(taken)
        parts = [taken[:cut], taken[cut:]] if cut else [taken]
        return [
            SpeechPiece(
                words=tuple(p.word for p in part),
                reason=reason,
                ready_time=ready,
                commit_time=taken[-1].wall_time,
                first_commit_time=part[0].wall_time,
                source_time=taken[-1].source_time,
                spoken_times=tuple(p.spoken_time for p in part),
            )
            for part in parts
        ]

    def _lead_cut(self, taken: list[_Pending]) -> int:
        """Where to split off the lead (0: no split): after its first clause boundary within
        `lead_words` words (at least 2), else after `lead_words`; the rest keeps >= 2 words."""
        lead = self.config.lead_words
        if not lead or len(taken) < lead + 2:
            return 0
        for i in range(1, lead):
            if ends_clause(taken[i].word.text) or ends_sentence(taken[i].word.text):
                return i + 1
        return lead
