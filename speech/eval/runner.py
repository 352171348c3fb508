"""Runs one recording through the full pipeline and leaves its event log, output audio and metrics
in its own folder. `metrics.json` is written last (atomically): its presence marks the recording
done, which is what makes an interrupted run resumable.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..audio import FileSource, write_wav
from ..channel import Channel
from ..clock import Clock, SimulatedClock, WallClock
from ..events import EventLog, read_events
from ..pipeline import PipelineConfig, build_session
from ..registry import Registry
from ..types import AudioChunk
from .metrics import utterance_metrics

EVENTS = "events.jsonl"
OUTPUT = "output.wav"
METRICS = "metrics.json"


@dataclass
class AudioSink:
    """Collects the synthesised chunks (anything else, e.g. codec packets, is only counted)."""

    chunks: list[AudioChunk] = field(default_factory=list)
    other: int = 0

    async def __call__(self, inbox: Channel[Any]) -> None:
        async for item in inbox:
            if isinstance(item, AudioChunk):
                self.chunks.append(item)
            else:
                self.other += 1

    def compact(self) -> tuple[np.ndarray, int]:
        """The chunks back to back, without the waits (what the recogniser hears for ASR-BLEU:
        long silences make Whisper hallucinate)."""
        if not self.chunks:
            return np.zeros(0, np.float32), 16000
        rate = self.chunks[0].sample_rate
        from ..audio import resample

        return np.concatenate([resample(c.samples, c.sample_rate, rate) for c in self.chunks]), rate

    def render(self, sample_rate: int | None = None) -> tuple[np.ndarray, int]:
        """The audio a listener hears from t=0: each chunk starts at max(its emission wall time,
        end of the previous chunk); the gaps are silence (the discontinuities)."""
        if not self.chunks:
            return np.zeros(0, np.float32), sample_rate or 16000
        rate = sample_rate or self.chunks[0].sample_rate
        pieces: list[np.ndarray] = []
        cursor = 0  # samples written so far
        for c in self.chunks:
            samples = c.samples
            if c.sample_rate != rate:
                from ..audio import resample

                samples = resample(samples, c.sample_rate, rate)
            start = max(int(round(c.wall_time * rate)), cursor)
            if start > cursor:
                pieces.append(np.zeros(start - cursor, np.float32))
            pieces.append(samples)
            cursor = start + len(samples)
        return np.concatenate(pieces), rate


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_clock(kind: str) -> Clock:
    if kind == "simulated":
        return SimulatedClock()
    if kind == "wall":
        return WallClock()
    raise ValueError(f"unknown clock {kind!r}; use simulated or wall")


async def run_pipeline(
    registry: Registry, config: PipelineConfig, audio: Path, folder: Path, clock_kind: str
) -> AudioSink:
    """One stream through the pipeline; the event log goes to `folder/events.jsonl`."""
    clock = make_clock(clock_kind)
    sink = AudioSink()
    with EventLog(folder / EVENTS) as log:
        source = FileSource(str(audio), sample_rate=16000, chunk_ms=config.chunk_ms, clock=clock)
        session = build_session(registry, config, source, sink, clock=clock, log=log)
        if isinstance(clock, WallClock):
            clock.restart()  # model loading is not part of the stream's latency
        await session.run()
        # The evaluation owns the session, so it closes the log: peak memory and the end of stream.
        log.write("stats", stage="eval", peak_rss_mb=round(peak_rss_mb(), 1), sink_other=sink.other)
        if not any(r.get("kind") == "end" for r in log.records):
            last = max((float(r.get("wall_time", 0.0)) for r in log.records), default=0.0)
            log.write("end", source_duration=round(source.duration, 4), wall_time=round(max(last, clock.now()), 4))
    return sink


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def load_done(folder: Path) -> dict | None:
    """The metrics of a recording finished by an earlier (possibly interrupted) run."""
    path = folder / METRICS
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None  # a damaged file: run the recording again


def evaluate_recording(
    registry: Registry,
    config: PipelineConfig,
    audio: Path,
    folder: Path,
    clock_kind: str,
    transcript: str | None,
    reference: str | None,
    transcribe: Callable[[np.ndarray, int], str] | None = None,
    extra: dict | None = None,
    origin: float = 0.0,
) -> dict:
    """Pipeline, output WAV, optional ASR of the output, metrics (from the log alone).
    `origin`: seconds of silence `audio` has before the recording (latencies count from there)."""
    folder.mkdir(parents=True, exist_ok=True)
    sink = asyncio.run(run_pipeline(registry, config, audio, folder, clock_kind))
    samples, rate = sink.render()
    if len(samples):
        write_wav(folder / OUTPUT, samples, rate)
    records = read_events(folder / EVENTS)
    from speech.asr.reference import reference_timeline

    timeline = None  # a registry without Whisper base (test fakes): lag against the words' own times
    if "asr" in config.stages and ("recognizer", "whisper-base") in registry.specs \
            and registry.available("recognizer", "whisper-base"):
        timeline = reference_timeline(audio, config.source, registry)
    metrics = utterance_metrics(records, transcript, reference, language=config.source, asr_reference=timeline,
                                origin=origin)
    if transcribe is not None and reference:
        from speech.asr.normalize import normalize

        from .quality import sentence_scores

        # no output speech is heard as nothing: an empty hypothesis in ASR-BLEU, not a row left out
        metrics["output_asr_text"] = transcribe(*sink.compact()) if len(samples) else ""
        scores = sentence_scores(normalize(metrics["output_asr_text"], config.target), normalize(reference, config.target))
        metrics.update(asr_bleu=scores["bleu"], asr_chrf=scores["chrf"])
    metrics.update(extra or {})
    write_json_atomic(folder / METRICS, metrics)
    return metrics
