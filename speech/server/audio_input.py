"""Client audio frames -> 16 kHz mono AudioChunks, plus the arrival times that lag is measured from.

pcm16 frames are any whole number of little-endian int16 samples; an Opus frame is one packet.
Decoders are chosen from a table keyed by codec name (the protocol validated it already).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..audio import StreamingResampler
from ..types import AudioChunk
from .protocol import MAX_AUDIO_FRAME_BYTES, ProtocolError

PIPELINE_RATE = 16000


class Pcm16Decoder:
    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self._odd = b""  # a frame may split a sample; keep the byte for the next one

    def decode(self, frame: bytes) -> np.ndarray:
        data = self._odd + frame
        usable = len(data) - len(data) % 2
        self._odd = data[usable:]
        return np.frombuffer(data[:usable], dtype="<i2").astype(np.float32) / 32768.0


class OpusInputDecoder:
    """One Opus packet per frame; 120 ms is the longest packet Opus allows."""

    def __init__(self, sample_rate: int) -> None:
        import opuslib

        self.sample_rate = sample_rate
        self._decoder = opuslib.Decoder(sample_rate, 1)
        self._max_samples = sample_rate * 120 // 1000

    def decode(self, frame: bytes) -> np.ndarray:
        import opuslib

        try:
            pcm = self._decoder.decode(frame, self._max_samples)
        except opuslib.OpusError as e:
            raise ProtocolError("bad_audio", f"an audio frame is not a valid Opus packet ({e})") from None
        return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


DECODERS: dict[str, Callable[[int], "Pcm16Decoder | OpusInputDecoder"]] = {
    "pcm16": Pcm16Decoder,
    "opus": OpusInputDecoder,
}


@dataclass
class ArrivalTimes:
    """When (wall seconds) each source second arrived, to measure lag from."""

    ends: list[float] = field(default_factory=list)  # source seconds at the end of each chunk
    walls: list[float] = field(default_factory=list)  # wall time at which that chunk arrived

    def add(self, source_end: float, wall: float) -> None:
        self.ends.append(source_end)
        self.walls.append(wall)

    def arrival(self, source_time: float) -> float | None:
        """Wall time at which the audio up to `source_time` had arrived."""
        if not self.ends:
            return None
        i = bisect.bisect_left(self.ends, source_time - 1e-6)
        return self.walls[min(i, len(self.walls) - 1)]

    def spoken(self, source_time: float) -> float | None:
        """Wall time at which a speaker streaming in real time said `source_time`: the arrival
        of the chunk that held it, less the audio after it in that chunk (the network's delay is
        not seen). The listener's lag counts from here, as `speech.eval.listener` counts it from
        when the word was spoken, not from when its chunk had arrived."""
        if not self.ends:
            return None
        i = min(bisect.bisect_left(self.ends, source_time - 1e-6), len(self.ends) - 1)
        return self.walls[i] - max(0.0, self.ends[i] - source_time)


class InputAudio:
    """Decodes and resamples one connection's frames into pipeline chunks."""

    def __init__(self, codec: str, sample_rate: int) -> None:
        self._decoder = DECODERS[codec](sample_rate)
        self._resampler = StreamingResampler(sample_rate, PIPELINE_RATE)
        self.produced = 0  # samples at PIPELINE_RATE
        self.seq = 0
        self.arrivals = ArrivalTimes()

    @property
    def seconds(self) -> float:
        return self.produced / PIPELINE_RATE

    def _chunk(self, samples: np.ndarray, wall: float) -> AudioChunk | None:
        if len(samples) == 0:
            return None
        # Full-scale input rings in the resampler's filter (noise of random signs: up to 2.5x full
        # scale): the pipeline gets the same clipping a sound card would apply.
        samples = np.clip(samples, -1.0, 1.0)
        chunk = AudioChunk(samples, PIPELINE_RATE, start=self.seconds, seq=self.seq, wall_time=wall)
        self.produced += len(samples)
        self.seq += 1
        self.arrivals.add(chunk.end, wall)
        return chunk

    def frame(self, frame: bytes, wall: float) -> AudioChunk | None:
        if len(frame) > MAX_AUDIO_FRAME_BYTES:
            raise ProtocolError(
                "frame_too_big", f"an audio frame may hold at most {MAX_AUDIO_FRAME_BYTES} bytes; send smaller frames"
            )
        samples = self._decoder.decode(frame)
        return self._chunk(self._resampler.process(samples), wall)

    def finish(self, wall: float) -> AudioChunk | None:
        """The resampler's tail at end of stream."""
        return self._chunk(self._resampler.process(np.zeros(0, np.float32), last=True), wall)
