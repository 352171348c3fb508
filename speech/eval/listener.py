"""Speech latency on the listener's timeline: when the listener hears each translated word against
when its source word was spoken.

Every figure about speech output is computed here, from the TTS stage's `audio` records, and
shared by `speech eval`, `speech bench s2st` (clips and long talks) and the server:

- a chunk is heard from `play_start`: max(when it was ready, when the listener finishes the chunk
  before it), as the TTS stage scheduled it (`tts.listener.ListenerSchedule`). Computation-aware
  (`ca`): the record's own `play_start` (ready = `wall_time`). Computation-unaware (`cu`): the same
  schedule with ready = `source_time` (the source seconds consumed when its text was committed);
- a word inside a chunk is heard at `play_start` + its offset (`word_times` in the record: the
  synthesiser's timing where it gives one, else the word's share of the characters);
- a word's source time is when the source word it renders was spoken (its end, from the
  recogniser's word timestamps, through the translator's monotonic alignment);
- listener lag of a word = heard - spoken; its p50, p90 and max over several sessions are taken
  over all their words pooled (`speech eval`'s corpus row, `speech bench s2st`), not averaged
  per session. StartOffset = first audio heard - speech onset (the first recognised word's
  start); EndOffset = end of the last audio heard - end of the source;
  AL and LAAL (SimulEval's, `latency.py`) take the heard times as the delays; ATD is SimulEval's
  speech-output ATD. Means as SimulEval reports them, medians beside them;
- where the lag goes (`lag_parts`): until the chunk's text was committed, until its first sample,
  waiting behind earlier speech, and the word's place inside its chunk; where the StartOffset
  goes (`start_parts`): the recogniser's first commit, the translator's, the chunker's wait, the
  synthesis of the first sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import Iterable, Sequence

from speech.tts.listener import ListenerSchedule

from .latency import average_lagging, average_token_delay, length_adaptive_average_lagging
from .metrics import audio_records  # noqa: F401 - the one filter of TTS records, re-exported
from speech.stats import percentile

READY = {"ca": "wall_time", "cu": "source_time"}


@dataclass(frozen=True)
class HeardWord:
    text: str
    heard: float  # when the listener starts to hear it (session seconds)
    spoken: float | None  # when its source word was spoken (None: unknown)

    @property
    def lag(self) -> float | None:
        return None if self.spoken is None else self.heard - self.spoken


def play_starts(audio: Sequence[dict], clock: str = "ca") -> list[float]:
    """When the listener starts to hear each chunk (see the module doc)."""
    if clock == "ca" and audio and all(r.get("play_start") is not None for r in audio):
        return [float(r["play_start"]) for r in audio]
    schedule: ListenerSchedule | None = None
    out = []
    for r in audio:
        rate = int(r.get("sample_rate") or 22050)
        if schedule is None:
            schedule = ListenerSchedule(rate)
        ready = r.get(READY[clock])
        if ready is None:
            ready = r["wall_time"]
        out.append(schedule.place(float(ready), int(round(float(r["duration"]) * schedule.sample_rate))))
    return out


def heard_words(audio: Sequence[dict], clock: str = "ca") -> list[HeardWord]:
    """Every spoken word with when it is heard and when its source was spoken."""
    out = []
    for r, start in zip(audio, play_starts(audio, clock)):
        times = r.get("word_times")
        if not times:  # a record without word timing: its words spread by character share
            from speech.tts.listener import word_offsets

            words = r.get("text", "").split()
            times = [[w, None, o] for w, o in zip(words, word_offsets(words, float(r["duration"])))]
        for text, spoken, offset in times:
            out.append(HeardWord(text, start + float(offset), None if spoken is None else float(spoken)))
    return out


def speech_onset(records: Iterable[dict]) -> float:
    """When the speaker started: the first recognised word's start (0 when the log has none)."""
    for r in records:
        if r.get("kind") == "update" and r.get("stage") == "asr":
            for w in r.get("committed", []):
                if w.get("start") is not None:
                    return float(w["start"])
    return 0.0


def listener_latency(
    records: list[dict], source_length: float, clock: str = "ca", reference_length: int | None = None,
    origin: float = 0.0,
) -> dict[str, float]:
    """The listener-timeline figures of one session (keys without a clock suffix; empty when
    nothing was spoken). `source_length` and the log's times count from the stream's start; the
    figures from `origin`, where the recording starts."""
    audio = audio_records(records)
    if not audio or source_length <= 0:
        return {}
    starts = play_starts(audio, clock)
    words = heard_words(audio, clock)
    out: dict[str, float] = {
        "StartOffset": starts[0] - speech_onset(records),
        "EndOffset": starts[-1] + float(audio[-1]["duration"]) - source_length,
        "words_heard": float(len(words)),
    }
    ready = [float(r.get(READY[clock]) if r.get(READY[clock]) is not None else r["wall_time"]) for r in audio]
    source_times = [float(r["source_time"]) for r in audio] if all(r.get("source_time") is not None for r in audio) else ready
    durations = [float(r["duration"]) for r in audio]
    out["ATD"] = average_token_delay([t - origin for t in source_times], durations=durations,
                                     elapsed=[float(r["wall_time"]) - origin for r in audio] if clock == "ca" else None)
    if words:
        delays = [w.heard - origin for w in words]
        target = reference_length or len(delays)
        out["AL"] = average_lagging(delays, source_length - origin, target)
        out["LAAL"] = length_adaptive_average_lagging(delays, source_length - origin, target)
    lags = [w.lag for w in words if w.lag is not None]
    if lags:
        out.update(lag_mean=mean(lags), lag_p50=percentile(lags, 50), lag_p90=percentile(lags, 90), lag_max=max(lags))
    return out


def lag_per_minute(words: Sequence[HeardWord], minute: float = 60.0) -> list[dict]:
    """Listener lag per minute of the source (by when the source word was spoken)."""
    buckets: dict[int, list[float]] = {}
    for w in words:
        if w.lag is not None:
            buckets.setdefault(int(w.spoken // minute), []).append(w.lag)
    if not buckets:
        return []
    out = []
    for m in range(max(buckets) + 1):
        lags = buckets.get(m, [])
        out.append({"minute": m, "words": len(lags),
                    "p50": percentile(lags, 50) if lags else None,
                    "p90": percentile(lags, 90) if lags else None,
                    "max": max(lags) if lags else None})
    return out


def lag_slope(words: Sequence[HeardWord]) -> float | None:
    """Least-squares slope of listener lag against when the source was spoken, in seconds of lag
    per minute of talk (0: bounded; 0.25: the listener falls 15 s behind every hour)."""
    pts = [(w.spoken, w.lag) for w in words if w.lag is not None]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    return 60.0 * sum((x - mx) * (y - my) for x, y in pts) / sxx


# Where a heard word's lag goes, in the order it accrues (the parts add up to the lag):
LAG_PARTS = (
    "committed",  # its source word spoken -> the translator committed the last word of its chunk
    "synthesis",  # -> the chunk's first sample (the chunker's wait for a break, then synthesis)
    "queue",  # -> play_start (the wait behind earlier speech)
    "in_chunk",  # -> the word itself is heard (its offset inside the chunk)
)


def lag_parts(audio: Sequence[dict], above: float | None = None) -> dict[str, float]:
    """Mean of each part of `LAG_PARTS` (seconds, computation-aware) over the heard words whose
    source time is known (only those whose lag is above `above`, when given); empty when no
    record carries the times it needs (`commit_time`, `wall_time`, `play_start`)."""
    sums = dict.fromkeys(LAG_PARTS, 0.0)
    n = 0
    for r, start in zip(audio, play_starts(audio, "ca")):
        if r.get("commit_time") is None or not r.get("word_times"):
            continue
        commit, first = float(r["commit_time"]), float(r["wall_time"])
        for _text, spoken, offset in r["word_times"]:
            if spoken is None or (above is not None and start + float(offset) - float(spoken) <= above):
                continue
            for part, value in zip(LAG_PARTS, (commit - float(spoken), first - commit, start - first, float(offset))):
                sums[part] += value
            n += 1
    return {part: total / n for part, total in sums.items()} if n else {}


# Where the StartOffset goes, in the order it accrues (the parts add up to it; computation-aware):
START_PARTS = (
    "recognizer",  # speech onset -> the recogniser's first commit
    "translator",  # -> the translator commits the first word of the first piece
    "chunker",  # -> that piece is speakable (the chunker's wait for more words, a break or a time-out)
    "synthesis",  # -> its first sample (the first audio heard: nothing plays before it)
)


def start_parts(records: Sequence[dict]) -> dict[str, float]:
    """The StartOffset of one session split into `START_PARTS` (seconds); empty when the log lacks
    a time it needs (a recogniser commit, the first audio's `wait_ms` and `ready_time`)."""
    audio = audio_records(records)
    first_asr = next((float(r["wall_time"]) for r in records
                      if r.get("kind") == "update" and r.get("stage") == "asr" and r.get("committed")
                      and r.get("wall_time") is not None), None)
    if not audio or first_asr is None or audio[0].get("ready_time") is None or audio[0].get("wait_ms") is None:
        return {}
    first = audio[0]
    heard = play_starts(audio, "ca")[0]  # = its first sample: nothing plays before the first audio
    sample = float(first["wall_time"])
    commit = sample - float(first["wait_ms"]) / 1000
    ready = float(first["ready_time"])
    marks = (speech_onset(records), first_asr, commit, ready, heard)
    # to the logs' precision (0.1 ms), so that no part reads a rounding error below zero
    return dict(zip(START_PARTS, (round(b - a, 4) + 0.0 for a, b in zip(marks, marks[1:]))))
