"""Opus through opuslib (libopus): 20 ms frames at 8/12/16/24/48 kHz, stateful encoder and decoder.

A lost packet (None) or an empty one asks libopus for packet-loss concealment; a corrupt packet
(libopus rejects it) is concealed the same way instead of failing the stream. A sample rate Opus
does not support is refused with the supported ones named (the codec stage resamples to the
configured rate before encoding).
"""

from __future__ import annotations

import numpy as np

from speech.types import AudioChunk, EncodedPacket

from .frames import CodecConfig, CodecPair, FramedEncoder

OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
OPUS_FRAME_MS = (2.5, 5.0, 10.0, 20.0, 40.0, 60.0)
APPLICATIONS = {"voip": "voip", "audio": "audio", "lowdelay": "restricted_lowdelay"}


def check_config(config: CodecConfig) -> None:
    if config.sample_rate not in OPUS_RATES:
        raise ValueError(
            f"Opus does not support {config.sample_rate} Hz; use one of {', '.join(map(str, OPUS_RATES))}"
        )
    if config.frame_ms not in OPUS_FRAME_MS:
        raise ValueError(f"Opus frames are {', '.join(map(str, OPUS_FRAME_MS))} ms, not {config.frame_ms}")
    if not 6000 <= config.bitrate <= 510000:
        raise ValueError(f"Opus bitrate must be 6000-510000 bit/s, got {config.bitrate}")
    if config.application not in APPLICATIONS:
        raise ValueError(f"Opus application must be one of {', '.join(APPLICATIONS)}, got {config.application!r}")


class OpusEncoder(FramedEncoder):
    codec = "opus"

    def __init__(self, config: CodecConfig) -> None:
        import opuslib

        check_config(config)
        super().__init__(config)
        self._config = config
        self._enc = opuslib.Encoder(config.sample_rate, 1, APPLICATIONS[config.application])
        self._enc.bitrate = config.bitrate
        self._enc.complexity = config.complexity

    def _encode_frame(self, frame: np.ndarray, valid: int) -> bytes:
        return self._enc.encode_float(np.ascontiguousarray(frame, dtype=np.float32).tobytes(), len(frame))

    def flush(self) -> list[EncodedPacket]:
        """A chunk's last partial frame as shorter Opus frames (10, 5, 2.5 ms; only the last one
        padded, by less than 2.5 ms): a padded 20 ms frame played up to 20 ms of zeros between two
        chunks. Every packet's `samples` stays its Opus frame size, so any Opus decoder given it as
        the frame size (as protocol clients do) decodes it."""
        sizes = [int(self.sample_rate * ms / 1000) for ms in OPUS_FRAME_MS[::-1] if ms <= self._config.frame_ms]
        out = []
        while len(self._buf):
            size = next((n for n in sizes if n <= len(self._buf)), sizes[-1])
            frame = np.zeros(size, dtype=np.float32)
            take = min(size, len(self._buf))
            frame[:take], self._buf = self._buf[:take], self._buf[take:]
            out.append(self._packet(frame, size))
        return out

    def reset(self) -> None:
        super().reset()
        self._enc.reset_state()


class OpusDecoder:
    codec = "opus"

    def __init__(self, config: CodecConfig) -> None:
        import opuslib

        check_config(config)
        self.sample_rate = config.sample_rate
        self._frame = int(round(config.sample_rate * config.frame_ms / 1000))
        self._dec = opuslib.Decoder(config.sample_rate, 1)
        self._error = opuslib.OpusError
        self.concealed = 0

    def _conceal(self, n: int) -> np.ndarray:
        self.concealed += 1
        return np.frombuffer(self._dec.decode_float(b"", n), dtype=np.float32).copy()

    def decode(self, packet: EncodedPacket | None) -> AudioChunk:
        """A packet's `samples` is its decoded length: a chunk's last frame, padded by the encoder,
        says how much of it is the chunk, and only that is returned (the padding is no speech)."""
        keep = packet.samples if packet is not None and packet.samples else self._frame
        n = max(keep, self._frame)  # libopus decodes whole frames: a buffer of at least one frame
        if packet is None or not packet.data:
            samples = self._conceal(n)
        else:
            try:
                samples = np.frombuffer(self._dec.decode_float(bytes(packet.data), n), dtype=np.float32).copy()
            except self._error:
                samples = self._conceal(n)  # corrupt packet: conceal, keep the stream going
        samples = samples[:keep]
        if packet is None:
            return AudioChunk(samples, self.sample_rate)
        return AudioChunk(samples, self.sample_rate, start=packet.start, seq=packet.seq, wall_time=packet.wall_time)

    def reset(self) -> None:
        self._dec.reset_state()
        self.concealed = 0


def create(config: CodecConfig, registry) -> CodecPair:
    return CodecPair("opus", OpusEncoder(config), OpusDecoder(config))
