"""Audio sources: files (WAV, FLAC, Ogg Opus through soundfile), chunked and paced.

A file is read, mixed down to mono, and resampled with soxr's *streaming* resampler chunk by
chunk (as a live source would be), then fed on the session's clock: in real time on the wall
clock, or as fast as the consumer takes it on the simulated clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from .channel import Channel
from .clock import Clock, SimulatedClock
from .errors import UserError
from .types import AudioChunk

MIN_RATE = 8000
MAX_RATE = 192000


class AudioInputError(UserError, ValueError):
    """An input that cannot be used as audio; the message names the input and what to do."""


@dataclass(frozen=True)
class AudioInfo:
    path: str
    sample_rate: int
    channels: int
    frames: int
    clipped_fraction: float

    @property
    def duration(self) -> float:
        return self.frames / self.sample_rate


def read_audio(path: str | Path) -> tuple[np.ndarray, int, AudioInfo]:
    """Read a whole file as float32 mono at its own rate, with clear errors on bad input."""
    import soundfile as sf

    p = Path(path)
    if not p.exists():
        raise AudioInputError(f"{p}: no such file")
    if p.is_dir():
        raise AudioInputError(f"{p}: is a folder, not an audio file")
    if p.stat().st_size == 0:
        raise AudioInputError(f"{p}: the file is empty")
    try:
        data, rate = sf.read(str(p), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as e:
        raise AudioInputError(
            f"{p}: not a readable audio file ({e}); give a WAV, FLAC or Ogg Opus file"
        ) from None
    if rate < MIN_RATE or rate > MAX_RATE:
        raise AudioInputError(f"{p}: sample rate {rate} Hz is out of range ({MIN_RATE}-{MAX_RATE} Hz)")
    if data.shape[0] == 0:
        raise AudioInputError(f"{p}: holds no audio samples")
    if not np.all(np.isfinite(data)):
        raise AudioInputError(f"{p}: holds non-finite samples (NaN or infinity); the file is corrupt")
    mono = data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0]
    clipped = float(np.mean(np.abs(data) >= 0.999))
    info = AudioInfo(str(p), rate, data.shape[1], data.shape[0], clipped)
    return np.ascontiguousarray(mono, dtype=np.float32), rate, info


class StreamingResampler:
    """soxr's streaming resampler: chunks in, chunks out, no seams at chunk borders."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._rs = None
        if in_rate != out_rate:
            import soxr

            self._rs = soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality="HQ")

    def process(self, samples: np.ndarray, last: bool = False) -> np.ndarray:
        if self._rs is None:
            return samples.astype(np.float32, copy=False)
        return self._rs.resample_chunk(samples.astype(np.float32, copy=False), last=last)


def resample(samples: np.ndarray, in_rate: int, out_rate: int) -> np.ndarray:
    if in_rate == out_rate:
        return samples.astype(np.float32, copy=False)
    import soxr

    return soxr.resample(samples.astype(np.float32, copy=False), in_rate, out_rate, quality="HQ").astype(np.float32)


def iter_chunks(
    samples: np.ndarray, in_rate: int, out_rate: int, chunk_ms: int
) -> Iterator[AudioChunk]:
    """Split audio into chunks of `chunk_ms` source milliseconds, resampled as a stream."""
    if chunk_ms <= 0:
        raise ValueError(f"chunk size must be positive, got {chunk_ms} ms")
    step = max(1, int(round(in_rate * chunk_ms / 1000)))
    rs = StreamingResampler(in_rate, out_rate)
    produced = 0
    seq = 0
    n = len(samples)
    for i in range(0, max(n, 1), step):
        piece = samples[i : i + step]
        last = i + step >= n
        out = rs.process(piece, last=last)
        if len(out) == 0 and not last:
            continue
        yield AudioChunk(out, out_rate, start=produced / out_rate, seq=seq)
        produced += len(out)
        seq += 1


@dataclass
class FileSource:
    """Feeds a file into a channel, paced by the clock. `chunk_ms` is the feeding granularity."""

    path: str
    sample_rate: int = 16000
    chunk_ms: int = 100
    clock: Clock | None = None
    info: AudioInfo | None = None

    def __post_init__(self) -> None:
        self._samples, self._rate, self.info = read_audio(self.path)

    @property
    def duration(self) -> float:
        assert self.info is not None
        return self.info.duration

    def chunks(self) -> Iterator[AudioChunk]:
        return iter_chunks(self._samples, self._rate, self.sample_rate, self.chunk_ms)

    async def __call__(self, outbox: Channel[AudioChunk]) -> None:
        clock = self.clock or SimulatedClock()
        for chunk in self.chunks():
            # A chunk exists once its last sample has been spoken.
            await clock.sleep_until(chunk.end)
            arrival = clock.now() if clock.realtime else chunk.end
            await outbox.put(
                AudioChunk(chunk.samples, chunk.sample_rate, chunk.start, chunk.seq, wall_time=arrival)
            )


def write_wav(path: str | Path, samples: np.ndarray, sample_rate: int) -> None:
    import soundfile as sf

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(p), np.clip(samples, -1.0, 1.0), sample_rate, subtype="PCM_16")
