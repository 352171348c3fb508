"""The listener timeline as the TTS stage sees it, and where each word falls inside a chunk.

A synthesised chunk is heard at `play_start` = max(when it was ready, when the listener finishes
the chunk before it), with the same cross-fade overlap as the sink's rendering (`joins.place`),
so the stage knows the listener's backlog before it speaks the next piece, and every latency
figure about speech is read from `play_start` rather than from when a chunk was ready.
"""

from __future__ import annotations

from dataclasses import dataclass

from .joins import JoinConfig, place


@dataclass
class ListenerSchedule:
    """When each chunk of one stream is heard (seconds on the session's clock)."""

    sample_rate: int
    crossfade_ms: float = JoinConfig.fade_ms
    _end: int = 0
    _previous: int = 0
    _chunks: int = 0

    @property
    def end(self) -> float:
        """When the listener has heard everything scheduled so far."""
        return self._end / self.sample_rate

    def backlog(self, now: float) -> float:
        """Seconds of speech the listener still has to hear at `now`."""
        return max(0.0, self.end - now)

    def place(self, ready: float, length: int) -> float:
        """Schedule a chunk of `length` samples ready at `ready`; returns its `play_start`."""
        rate = self.sample_rate
        start = place(int(round(ready * rate)), length, self._end, self._previous,
                      int(rate * self.crossfade_ms / 1000), self._chunks > 0)
        self._end = max(self._end, start + length)
        self._previous = length
        self._chunks += 1
        return start / rate


def timed_offsets(words: list[str], duration: float, known: dict[int, float]) -> list[float]:
    """Where each word starts inside a chunk of `duration` seconds: the synthesiser's own timing
    where it gave one (`known`: word index -> seconds); a run of untimed words shares by characters
    the stretch from the word before it to the next timed word (all untimed: `word_offsets`)."""
    if not known:
        return word_offsets(words, duration)
    n = len(words)
    marks = {i: min(max(t, 0.0), duration) for i, t in known.items() if 0 <= i < n}
    out = [0.0] * n
    i = 0
    while i < n:
        if i in marks:
            out[i] = marks[i]
            i += 1
            continue
        j = i
        while j < n and j not in marks:
            j += 1
        low = out[i - 1] if i > 0 else 0.0
        span = max(0.0, (marks[j] if j < n else duration) - low)
        # the word before the run (when there is one) takes its own share of the stretch first
        shares = word_offsets(words[i - 1 : j], span)[1:] if i > 0 else word_offsets(words[i:j], span)
        out[i:j] = [low + o for o in shares]
        i = j
    for k in range(1, n):  # never before the word ahead of it
        out[k] = max(out[k], out[k - 1])
    return out


def word_offsets(words: list[str], duration: float) -> list[float]:
    """Where each word starts inside a chunk of `duration` seconds, by its share of the characters
    (a word and the space after it): for synthesisers that give no word timing of their own."""
    weights = [len(w) + 1 for w in words]
    total = sum(weights)
    if not total:
        return []
    out, acc = [], 0
    for w in weights:
        out.append(duration * acc / total)
        acc += w
    return out
