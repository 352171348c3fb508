"""The codec stage: synthesised AudioChunks in, EncodedPackets out.

Each chunk is resampled to the codec's rate (a fresh streaming resampler per chunk, flushed at its
end: chunks are separate utterances on the listener timeline) and encoded; the last partial frame of
a chunk is padded, so packets never straddle two chunks and keep the chunk's `wall_time`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from speech.audio import StreamingResampler
from speech.channel import Channel
from speech.events import EventLog
from speech.types import AudioChunk, EncodedPacket

from .frames import CodecConfig, CodecPair


@dataclass
class CodecStage:
    codec: CodecPair
    log: EventLog
    name: str = "codec"

    async def run(self, inbox: Channel[AudioChunk], outbox: Channel[EncodedPacket]) -> None:
        encoder = self.codec.encoder
        compute = 0.0
        packets = 0
        nbytes = 0
        async for chunk in inbox:
            t0 = time.perf_counter()
            samples = StreamingResampler(chunk.sample_rate, encoder.sample_rate).process(chunk.samples, last=True)
            resampled = AudioChunk(samples, encoder.sample_rate, chunk.start, chunk.seq, chunk.wall_time, chunk.text)
            out = await asyncio.to_thread(lambda: [*encoder.encode(resampled), *encoder.flush()])
            compute += time.perf_counter() - t0
            for packet in out:
                packets += 1
                nbytes += len(packet.data)
                await outbox.put(packet)
        self.log.write("stats", stage=self.name, codec=self.codec.name, compute_s=round(compute, 4),
                       packets=packets, bytes=nbytes)


def codec_config(config) -> CodecConfig:
    options = config.codec_options  # speech.options.CodecOptions
    return CodecConfig(sample_rate=config.codec_rate, bitrate=config.codec_bitrate, frame_ms=options.frame_ms,
                       application=options.application, complexity=options.complexity)


def build_stage(registry, config, clock, log: EventLog) -> CodecStage:
    return CodecStage(registry.create("codec", config.codec, codec_config(config)), log)
