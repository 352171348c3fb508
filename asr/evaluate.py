"""Streaming-vs-offline measurement of one recogniser configuration on one clip.

Everything a benchmark figure needs comes from the stage's event log: committed words with the
source time and the (emulated) wall time of the update that committed them.
"""

from __future__ import annotations

import asyncio
import difflib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speech.audio import iter_chunks
from speech.channel import Channel
from speech.clock import SimulatedClock
from speech.events import EventLog
from speech.registry import Registry
from speech.session import Session
from speech.types import AudioChunk, TextUpdate, Word

from .normalize import word_key
from .stage import AsrOptions, create_asr_stage

SAMPLE_RATE = 16000


@dataclass
class StreamResult:
    words: list[Word]
    commit_source: list[float]  # per committed word: source time of the committing update
    commit_wall: list[float]  # per committed word: emulated wall time of the committing update
    compute_s: float
    update_s: list[float] = field(default_factory=list)
    log: EventLog | None = None

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)


def stream(registry: Registry, model: str, policy: str, language: str, samples: np.ndarray, rate: int,
           chunk_ms: int = 100, options: AsrOptions | None = None, **model_options: Any) -> StreamResult:
    """Run the ASR stage over `samples` on the simulated clock (as fast as possible).

    By default with a fixed update step (no adaptive step), so results do not depend on load.
    """
    options = options or AsrOptions(max_behind_s=float("inf"))
    clock = SimulatedClock()
    log = EventLog()
    stage = create_asr_stage(registry, model, policy, language, clock, log, options, **model_options)
    result = StreamResult([], [], [], 0.0, log=log)

    async def source(outbox: Channel[AudioChunk]) -> None:
        for c in iter_chunks(samples, rate, SAMPLE_RATE, chunk_ms):
            await outbox.put(AudioChunk(c.samples, c.sample_rate, c.start, c.seq, wall_time=c.end))

    async def sink(inbox: Channel[TextUpdate]) -> None:
        async for u in inbox:
            for w in u.committed:
                result.words.append(w)
                result.commit_source.append(u.source_time)
                result.commit_wall.append(u.wall_time)

    asyncio.run(Session([stage], source, sink, clock=clock, log=log).run())
    result.compute_s = stage.compute_s
    result.update_s = list(stage.update_times)
    return result


def offline_words(registry: Registry, model: str, language: str, samples: np.ndarray, rate: int,
                  **model_options: Any) -> list[Word]:
    """The same model's offline transcription of the whole clip, with word timestamps.

    Whisper runs as trained (a 30-s encoder window) whatever window the streaming side uses, so
    the streaming WER is compared with the model's standard offline figure.
    """
    from speech.audio import resample

    audio = resample(samples, rate, SAMPLE_RATE)
    config = registry.config("recognizer", model, **model_options)
    if model.startswith("whisper"):
        from .whisper import load_model, transcribe_words

        if language and getattr(config, "language", None) is None:
            config.language = language
        config.max_new_tokens = 440
        config.new_tokens_per_s = None
        config.encoder_pad_s = None
        words, _ = transcribe_words(load_model(registry, config), audio, config)
        return words
    recognizer = registry.create("recognizer", model, config)
    recognizer.config.max_utterance_s = 1e9
    recognizer.feed(AudioChunk(audio, SAMPLE_RATE))
    return recognizer.finish()


def matched_lags(streamed: StreamResult, reference: list[Word]) -> list[tuple[float, float, float]]:
    """(offline word end, source-clock lag, wall-clock lag) per word aligned with the offline one."""
    a = [word_key(w.text) for w in streamed.words]
    b = [word_key(w.text) for w in reference]
    out = []
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            end = reference[block.b + k].end
            if end is not None:
                out.append((end, streamed.commit_source[block.a + k] - end, streamed.commit_wall[block.a + k] - end))
    return out


def lags(streamed: StreamResult, reference: list[Word]) -> tuple[list[float], list[float]]:
    """Per matched word: commit time minus the offline word's end (source clock, wall clock)."""
    m = matched_lags(streamed, reference)
    return [x[1] for x in m], [x[2] for x in m]
