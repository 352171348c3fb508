"""Per-utterance metrics computed from an event log alone (see speech/events.py for the records).

Every latency comes in two forms, suffixed `_cu` (computation-unaware: `source_time`, the source
seconds consumed when the output was emitted) and `_ca` (computation-aware: `wall_time`, real or
emulated by the simulated clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Iterable

from ..events import updates
from ..stats import percentile
from ..types import Word
from .erasure import erasure_rate
from .latency import text_latency
from .quality import sentence_scores, word_errors

CLOCKS = {"cu": "source_time", "ca": "wall_time"}


@dataclass(frozen=True)
class Emitted:
    """A committed word and when it was committed."""

    word: Word
    source_time: float
    wall_time: float


def committed_words(records: list[dict], stage: str) -> list[Emitted]:
    out = []
    for u in updates(records, stage):
        out.extend(Emitted(w, u.source_time, u.wall_time) for w in u.committed)
    return out


def normalized_erasure(records: list[dict], stage: str) -> float | None:
    """Erasure of the stage's displayed text (committed + tentative) over its final length
    (see erasure.py); 0 for a stage that never retracts."""
    displays: list[list[str]] = [[]]
    committed: list[str] = []
    for u in updates(records, stage):
        committed.extend(w.text for w in u.committed)
        displays.append(committed + [w.text for w in u.tentative])
    return erasure_rate(displays, len(committed))


def commit_lags(words: list[Emitted], clock: str) -> list[float]:
    """Per committed word: commit time minus the end of the word in the source audio."""
    attr = CLOCKS[clock]
    return [getattr(e, attr) - e.word.end for e in words if e.word.end is not None]


def source_duration(records: list[dict]) -> float | None:
    for rec in records:
        if rec.get("kind") == "end" and rec.get("source_duration"):
            return float(rec["source_duration"])
    ends = [float(r["end"]) for r in records if r.get("kind") == "input" and "end" in r]
    return max(ends) if ends else None


def audio_records(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("kind") == "audio" and r.get("stage") == "tts"]


def playback(chunks: Iterable[dict], clock: str) -> tuple[list[tuple[float, float]], list[float]]:
    """Listener timeline: each chunk plays at max(its emission time, end of the previous one).
    Returns the (start, duration) intervals and the silences inserted between chunks."""
    attr = CLOCKS[clock]
    intervals: list[tuple[float, float]] = []
    silences: list[float] = []
    prev_end: float | None = None
    for c in chunks:
        if c.get(attr) is None:
            return [], []
        t, dur = float(c[attr]), float(c["duration"])
        start = t if prev_end is None else max(t, prev_end)
        if prev_end is not None and start > prev_end + 1e-9:
            silences.append(start - prev_end)
        intervals.append((start, dur))
        prev_end = start + dur
    return intervals, silences


def stage_stats(records: list[dict]) -> dict[str, dict]:
    return {r["stage"]: r for r in records if r.get("kind") == "stats" and "stage" in r}


def translation_latency(words: list[Emitted], src_len: float, ref_len: int | None, origin: float = 0.0) -> dict[str, float]:
    """SimulEval's text latencies; `src_len` and the words' times count from the stream's start,
    the figures from `origin`."""
    out: dict[str, float] = {}
    if not words or not src_len:
        return out
    delays = [e.source_time - origin for e in words]
    elapsed = [e.wall_time - origin for e in words]
    src_len -= origin
    for name, value in text_latency(delays, src_len, ref_len).items():
        out[f"mt_{name}_cu"] = value
    for name, value in text_latency(delays, src_len, ref_len, elapsed=elapsed).items():
        out[f"mt_{name}_ca"] = value
    return out


def speech_latency(records: list[dict], src_len: float, ref_len: int | None = None, origin: float = 0.0) -> dict:
    """Speech-output latency on the listener's timeline (speech.eval.listener), both clocks;
    `src_len` and the times of the log count from the stream's start, the figures from `origin`."""
    from .listener import heard_words, listener_latency

    out: dict = {}
    chunks = audio_records(records)
    for clock in CLOCKS:
        figures = listener_latency(records, src_len, clock, ref_len, origin)
        for name, value in figures.items():
            if name != "words_heard":
                out[f"audio_{name}_{clock}"] = value
        lags = [w.lag for w in heard_words(chunks, clock) if w.lag is not None]
        if lags:
            out[f"_audio_lags_{clock}"] = lags  # pooled over the corpus by the aggregate
        intervals, silences = playback(chunks, clock)
        if intervals:
            out[f"audio_discontinuities_{clock}"] = len(silences)
            out[f"audio_silence_total_s_{clock}"] = sum(silences)
            out[f"audio_silence_mean_s_{clock}"] = sum(silences) / len(silences) if silences else 0.0
    if chunks:
        out["audio_s"] = sum(float(c["duration"]) for c in chunks)
    return out


def utterance_metrics(
    records: list[dict],
    transcript: str | None = None,
    reference: str | None = None,
    duration: float | None = None,
    language: str = "en",
    asr_reference: list[Word] | None = None,
    origin: float = 0.0,
) -> dict:
    """Everything one utterance's log says. Keys absent = not measurable (said in `notes`).
    `origin`: seconds of silence put before the recording (`speech eval --phases`): latencies
    count from the recording's start, as they do without it.
    `language`: the source language (the transcript's), for WER's normalisation.
    `asr_reference`: the clip's reference timeline (speech.asr.reference: Whisper base offline, the
    same for every configuration); recognition lag is measured against it, reference words never
    committed reported as a share. Without it, against the committed words' own timestamps."""
    notes: list[str] = []
    src_len = source_duration(records) or duration
    out: dict = {"source_s": src_len}
    if not src_len:
        notes.append("no source duration in the log: latencies left out")

    asr = committed_words(records, "asr")
    out["asr_text"] = " ".join(e.word.text for e in asr)
    if transcript is not None:
        counts = word_errors(transcript, out["asr_text"], language)
        out.update(asr_errors=counts.errors, asr_ref_words=counts.words, wer=counts.wer)
    else:
        notes.append("no transcript: WER left out")
    if asr_reference is not None:
        from speech.asr.reference import recognition_lag

        matched = recognition_lag(asr, asr_reference)
        by_clock = {"cu": matched.lag_source, "ca": matched.lag_wall}
        out.update(asr_reference_words=matched.reference_words, asr_unmatched=matched.reference_words - matched.matched,
                   asr_unmatched_share=matched.unmatched_share)
    else:
        by_clock = {clock: commit_lags(asr, clock) for clock in CLOCKS}
        notes.append("no reference timeline: recognition lag against the committed words' own timestamps")
    for clock in CLOCKS:
        lags = by_clock[clock]
        if lags:
            out[f"_asr_lags_{clock}"] = lags  # pooled over the corpus by the aggregate
            out[f"asr_lag_median_{clock}"] = median(lags)
            out[f"asr_lag_p90_{clock}"] = percentile(lags, 90)
    out["asr_erasure"] = normalized_erasure(records, "asr")

    mt = committed_words(records, "mt")
    out["mt_text"] = " ".join(e.word.text for e in mt)
    out["mt_words"] = len(mt)
    out["mt_erasure"] = normalized_erasure(records, "mt")
    ref_len = len(reference.split()) if reference else None
    if reference:
        out.update(sentence_scores(out["mt_text"], reference))
    else:
        notes.append("no reference translation: BLEU, chrF and ASR-BLEU left out; latencies use |hyp|")
    if src_len:
        out.update(translation_latency(mt, src_len, ref_len, origin))
        out.update(speech_latency(records, src_len, ref_len, origin))
    if mt == [] and any(r.get("stage") == "mt" for r in records if r.get("kind") == "update"):
        notes.append("the translation committed no words")

    stats = stage_stats(records)
    for stage, rec in stats.items():
        if rec.get("compute_s") is not None and src_len:
            out[f"rtf_{stage}"] = float(rec["compute_s"]) / src_len
        if rec.get("peak_rss_mb") is not None:
            out["peak_rss_mb"] = float(rec["peak_rss_mb"])
    chunks = audio_records(records)
    if chunks:
        out["ttfa_ca"] = float(chunks[0]["wall_time"]) - origin
        if chunks[0].get("source_time") is not None:
            out["ttfa_cu"] = float(chunks[0]["source_time"]) - origin
    errors = [r for r in records if r.get("kind") == "error"]
    if errors:
        notes.append("; ".join(f"stage {r.get('stage')} failed: {r.get('error')}" for r in errors))
    out["notes"] = " | ".join(notes)
    return out
