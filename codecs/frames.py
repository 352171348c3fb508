"""Cutting a stream of chunks into fixed codec frames, and the encoder/decoder pair a codec gives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from speech.types import AudioChunk, EncodedPacket


@dataclass(frozen=True)
class CodecConfig:
    sample_rate: int = 24000
    bitrate: int = 24000  # bits per second (Opus; PCM16 is always 16 bits a sample)
    frame_ms: float = 20.0
    # Opus: "lowdelay" (CELT only, 2.5 ms look-ahead), "voip" (SILK/hybrid for speech), "audio".
    # CELT keeps eSpeak's buzzy harmonics: at 24 kbit/s its Whisper features stay about twice as
    # close to PCM16's as voip's, for eSpeak and Piper alike (docs/synthesis.md).
    application: str = "lowdelay"
    complexity: int = 5  # Opus encoder complexity 0-10 (CPU against quality)


@dataclass
class CodecPair:
    """A fresh, stateful encoder and decoder for one stream."""

    name: str
    encoder: Any  # speech.stage.AudioEncoder
    decoder: Any  # speech.stage.AudioDecoder


class FramedEncoder:
    """The part every frame-based encoder shares: buffer chunks into whole frames, stamp each packet
    with its timeline position; `flush` (at the end of a synthesised chunk) pads the last frame with
    zeros so a chunk never shares a packet with the next one. That packet's `samples` (its decoded
    length) is the chunk's part of the frame only: the padding is no speech, and played between two
    chunks it was up to 20 ms more silence at every join. PCM16 sends that block short; Opus
    overrides `flush` with shorter Opus frames. Subclasses encode one frame (`_encode_frame`;
    `valid` < the frame length only for a padded last frame)."""

    codec = ""

    def __init__(self, config: CodecConfig) -> None:
        self.sample_rate = config.sample_rate
        self.frame = int(round(config.sample_rate * config.frame_ms / 1000))
        self._buf = np.zeros(0, dtype=np.float32)
        self._start = 0.0  # timeline position of the buffer's first sample
        self._wall = 0.0
        self._seq = 0

    def _encode_frame(self, frame: np.ndarray, valid: int) -> bytes:
        raise NotImplementedError

    def _packet(self, frame: np.ndarray, valid: int | None = None) -> EncodedPacket:
        valid = self.frame if valid is None else valid
        packet = EncodedPacket(
            self._encode_frame(frame, valid), self.codec, self.sample_rate, valid, self._start, self._seq, self._wall
        )
        self._seq += 1
        self._start += valid / self.sample_rate
        return packet

    def encode(self, chunk: AudioChunk) -> list[EncodedPacket]:
        if chunk.sample_rate != self.sample_rate:
            raise ValueError(
                f"{self.codec} encoder runs at {self.sample_rate} Hz, got a chunk at {chunk.sample_rate} Hz; resample first"
            )
        if len(self._buf) == 0:
            self._start, self._wall = chunk.start, chunk.wall_time
        self._buf = np.concatenate([self._buf, chunk.samples.astype(np.float32, copy=False)])
        out = []
        while len(self._buf) >= self.frame:
            frame, self._buf = self._buf[: self.frame], self._buf[self.frame :]
            out.append(self._packet(frame))
        return out

    def flush(self) -> list[EncodedPacket]:
        if len(self._buf) == 0:
            return []
        frame = np.zeros(self.frame, dtype=np.float32)
        valid = len(self._buf)
        frame[:valid] = self._buf
        self._buf = self._buf[:0]
        return [self._packet(frame, valid)]

    def reset(self) -> None:
        self._buf = self._buf[:0]
        self._seq = 0
