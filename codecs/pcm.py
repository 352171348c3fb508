"""PCM16: little-endian 16-bit samples in 20 ms packets. Lost or corrupt packets decode as silence."""

from __future__ import annotations

import numpy as np

from speech.types import AudioChunk, EncodedPacket

from .frames import CodecConfig, CodecPair, FramedEncoder


def to_pcm16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


def from_pcm16(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767.0


class Pcm16Encoder(FramedEncoder):
    codec = "pcm16"

    def _encode_frame(self, frame: np.ndarray, valid: int) -> bytes:
        return to_pcm16(frame[:valid])  # a chunk's last block is short: PCM needs no padding


class Pcm16Decoder:
    codec = "pcm16"

    def __init__(self, config: CodecConfig) -> None:
        self.sample_rate = config.sample_rate
        self._frame = int(round(config.sample_rate * config.frame_ms / 1000))
        self._last_len = self._frame
        self.concealed = 0

    def decode(self, packet: EncodedPacket | None) -> AudioChunk:
        if packet is None or len(packet.data) % 2 or (packet.samples and len(packet.data) != 2 * packet.samples):
            self.concealed += 1  # lost or corrupt: silence of the expected length
            n = packet.samples if packet is not None and packet.samples else self._last_len
            start = packet.start if packet is not None else 0.0
            return AudioChunk(np.zeros(n, np.float32), self.sample_rate, start=start)
        samples = from_pcm16(packet.data)
        if len(samples) >= self._frame:  # a chunk's short last block says nothing of the next loss
            self._last_len = len(samples)
        return AudioChunk(samples, self.sample_rate, start=packet.start, seq=packet.seq, wall_time=packet.wall_time)

    def reset(self) -> None:
        self.concealed = 0


def create(config: CodecConfig, registry) -> CodecPair:
    return CodecPair("pcm16", Pcm16Encoder(config), Pcm16Decoder(config))
