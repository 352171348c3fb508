"""The TTS stage: committed target text in, synthesised AudioChunks out.

Inbox: TextUpdates from the translator. The chunker turns committed words into pieces worth
speaking; each piece is synthesised in a worker thread (streaming where the engine streams), its
padding trimmed and its edges faded (`joins`), and emitted as one AudioChunk whose `wall_time` (and
`start`) is the computation-aware time its first sample became available. The listener placement
(waiting for the previous chunk to finish) is the sink's job (`joins.ListenerTimeline`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speech.channel import Channel, EndOfStream
from speech.clock import Clock, StageClock
from speech.events import EventLog
from speech.types import AudioChunk, TextUpdate

from .chunker import ChunkerConfig, SpeechPiece, TextChunker
from .joins import JoinConfig, prepare_chunk
from .text import clean_text


@dataclass
class TtsStage:
    synthesizer: Any  # speech.stage.Synthesizer
    clock: Clock
    log: EventLog
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    joins: JoinConfig = field(default_factory=JoinConfig)
    name: str = "tts"

    async def run(self, inbox: Channel[TextUpdate], outbox: Channel[AudioChunk]) -> None:
        timer = self.clock.stage(self.name)
        chunker = TextChunker(self.chunker)
        totals = {"compute_s": 0.0, "audio_s": 0.0, "chunks": 0, "skipped": 0}
        seq = 0
        last_wall = 0.0  # wall time of the latest update: the end of stream's time on the simulated clock
        while True:
            deadline = chunker.deadline()
            try:
                if self.clock.realtime and deadline is not None:
                    update = await asyncio.wait_for(inbox.get(), max(0.0, deadline - self.clock.now()))
                else:
                    update = await inbox.get()
            except TimeoutError:
                pieces = chunker.expire(self.clock.now())
            except EndOfStream:
                break
            else:
                last_wall = max(last_wall, update.wall_time)
                pieces = chunker.push(update)
            for piece in pieces:
                seq = await self._speak(piece, timer, outbox, seq, totals)
        for piece in chunker.flush(self.clock.now() if self.clock.realtime else last_wall):
            seq = await self._speak(piece, timer, outbox, seq, totals)
        self.log.write("stats", stage=self.name, **{k: round(v, 4) if isinstance(v, float) else v for k, v in totals.items()})

    async def _speak(
        self, piece: SpeechPiece, timer: StageClock, outbox: Channel[AudioChunk], seq: int, totals: dict
    ) -> int:
        text = clean_text(piece.text)
        if not text:
            totals["skipped"] += 1
            self.log.write("tts_skip", stage=self.name, text=piece.text, reason="nothing speakable")
            return seq
        rate = self.synthesizer.sample_rate
        timer.begin(piece.ready_time)
        t0 = time.perf_counter()
        stream = self.synthesizer.synthesize(text)
        buffers: list[np.ndarray] = []
        first: float | None = None
        while (chunk := await asyncio.to_thread(next, stream, None)) is not None:
            if first is None:
                # The first sample exists now; the rest of the synthesis continues from here.
                first = timer.end()
                timer.begin(first)
            buffers.append(chunk.samples)
            rate = chunk.sample_rate
        timer.end()
        totals["compute_s"] += time.perf_counter() - t0
        samples = prepare_chunk(np.concatenate(buffers), rate, self.joins) if buffers else np.zeros(0, np.float32)
        if first is None or len(samples) == 0:
            totals["skipped"] += 1
            self.log.write("tts_skip", stage=self.name, text=text, reason="silent synthesis")
            return seq
        out = AudioChunk(samples, rate, start=first, seq=seq, wall_time=first, text=text)
        totals["audio_s"] += out.duration
        totals["chunks"] += 1
        self.log.audio(
            self.name, out,
            source_time=round(piece.source_time, 4),
            sample_rate=rate,
            ttfa_ms=round((first - piece.commit_time) * 1000, 2),
            commit_time=round(piece.commit_time, 4),
            wait_ms=round((first - piece.first_commit_time) * 1000, 2),
            reason=piece.reason,
            words=len(piece.words),
        )
        await outbox.put(out)
        return seq + 1


def chunker_config(config, synthesizer=None) -> ChunkerConfig:
    """The synthesiser's preferred chunking (if any), overridden by config.extra["tts_chunker"]."""
    options = dict(getattr(synthesizer, "chunk_defaults", {}))
    options.update(config.extra.get("tts_chunker", {}))
    return ChunkerConfig(**options)


def build_stage(registry, config, clock: Clock, log: EventLog) -> TtsStage:
    """The pipeline's TTS stage for `config.target` (voice: `config.voice`, see tts.backends)."""
    from .backends import create_synthesizer

    synthesizer = create_synthesizer(registry, config.target, config.voice, **config.extra.get("tts_options", {}))
    return TtsStage(synthesizer, clock, log, chunker=chunker_config(config, synthesizer))
