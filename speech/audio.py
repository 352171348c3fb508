"""Audio sources: files (WAV, FLAC, Ogg Opus or Vorbis, MP3 through soundfile), chunked and paced.

A file source reads its file block by block (never whole: an hours-long recording costs one
block of memory), mixes each block down to mono and resamples it with soxr's *streaming*
resampler (as a live source would be), then feeds it on the session's clock: in real time on the
wall clock, or as fast as the consumer takes it on the simulated clock. `read_audio` reads a whole
clip (benchmarks, the evaluation's long-form builder, the streaming client) and refuses files
longer than `MAX_READ_S`. Every bad input (missing, empty, truncated, corrupt, mislabelled, an
unsupported rate, NaN or infinite samples) raises `AudioInputError` naming the file.
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
MAX_READ_S = 2 * 3600.0  # read_audio's limit: longer recordings are streamed (FileSource)


class AudioInputError(UserError, ValueError):
    """An input that cannot be used as audio; the message names the input and what to do."""


@dataclass(frozen=True)
class AudioInfo:
    path: str
    sample_rate: int
    channels: int
    frames: int
    clipped_fraction: float | None = None  # None where the samples were not read (probe_audio)

    @property
    def duration(self) -> float:
        return self.frames / self.sample_rate


# What soundfile and libsndfile raise on a file they cannot parse (LibsndfileError is a RuntimeError).
_READ_ERRORS = (RuntimeError, TypeError, ValueError, EOFError, OSError, MemoryError)


def _unreadable(p: Path, e: BaseException) -> AudioInputError:
    return AudioInputError(f"{p}: not a readable audio file ({e}); give a WAV, FLAC, Ogg or MP3 file")


def probe_audio(path: str | Path) -> AudioInfo:
    """Check a file from its header alone (nothing is decoded): exists, not empty, a format
    soundfile reads, a supported rate, at least one frame."""
    import soundfile as sf

    p = Path(path)
    if not p.exists():
        raise AudioInputError(f"{p}: no such file")
    if p.is_dir():
        raise AudioInputError(f"{p}: is a folder, not an audio file")
    if p.stat().st_size == 0:
        raise AudioInputError(f"{p}: the file is empty")
    try:
        header = sf.info(str(p))
    except _READ_ERRORS as e:
        raise _unreadable(p, e) from None
    rate, channels, frames = int(header.samplerate), int(header.channels), int(header.frames)
    if rate < MIN_RATE or rate > MAX_RATE:
        raise AudioInputError(f"{p}: sample rate {rate} Hz is out of range ({MIN_RATE}-{MAX_RATE} Hz)")
    if channels < 1:
        raise AudioInputError(f"{p}: has no audio channel")
    if frames <= 0:
        raise AudioInputError(f"{p}: holds no audio samples")
    return AudioInfo(str(p), rate, channels, frames)


def _mono(p: Path, data: np.ndarray, at_s: float) -> np.ndarray:
    if not np.all(np.isfinite(data)):
        raise AudioInputError(
            f"{p}: holds non-finite samples (NaN or infinity) from {at_s:.1f} s on; the file is corrupt"
        )
    mono = data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0]
    return np.ascontiguousarray(mono, dtype=np.float32)


def read_audio(path: str | Path, max_duration_s: float = MAX_READ_S,
               head_s: float | None = None) -> tuple[np.ndarray, int, AudioInfo]:
    """Read a whole file as float32 mono at its own rate, with clear errors on bad input.

    Files longer than `max_duration_s` are refused before anything is decoded (stream them with
    FileSource instead); with `head_s`, only the file's first `head_s` seconds are read, whatever
    its length."""
    import soundfile as sf

    p = Path(path)
    probed = probe_audio(p)
    if head_s is None and probed.duration > max_duration_s:
        raise AudioInputError(
            f"{p}: {probed.duration / 3600:.1f} h is too long to read whole (limit {max_duration_s / 3600:.1f} h); "
            "cut it, or stream it (speech translate, speech transcribe)"
        )
    frames = -1 if head_s is None else max(1, int(head_s * probed.sample_rate))
    try:
        data, rate = sf.read(str(p), frames=frames, dtype="float32", always_2d=True)
    except _READ_ERRORS as e:
        raise _unreadable(p, e) from None
    if data.shape[0] == 0:
        raise AudioInputError(f"{p}: holds no audio samples")
    mono = _mono(p, data, 0.0)
    clipped = float(np.mean(np.abs(data) >= 0.999))
    info = AudioInfo(str(p), rate, data.shape[1], data.shape[0], clipped)
    return mono, rate, info


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
    step = chunk_frames(in_rate, chunk_ms)
    n = len(samples)
    pieces = ((samples[i : i + step], i + step >= n) for i in range(0, max(n, 1), step))
    return resampled_chunks(pieces, in_rate, out_rate)


def chunk_frames(rate: int, chunk_ms: int) -> int:
    if chunk_ms <= 0:
        raise ValueError(f"chunk size must be positive, got {chunk_ms} ms")
    return max(1, int(round(rate * chunk_ms / 1000)))


def resampled_chunks(pieces: Iterator[tuple[np.ndarray, bool]], in_rate: int, out_rate: int) -> Iterator[AudioChunk]:
    """(samples, is_last) pieces at `in_rate` -> chunks at `out_rate`, through one streaming resampler."""
    rs = StreamingResampler(in_rate, out_rate)
    produced = 0
    seq = 0
    for piece, last in pieces:
        out = rs.process(piece, last=last)
        if len(out) == 0 and not last:
            continue
        yield AudioChunk(out, out_rate, start=produced / out_rate, seq=seq)
        produced += len(out)
        seq += 1


@dataclass
class FileSource:
    """Feeds a file into a channel, paced by the clock. `chunk_ms` is the feeding granularity.

    The file is checked from its header when the source is made and read block by block while
    it plays, so memory does not grow with its length. `duration` is the header's until the file
    has been read to its end, then what was actually read (a truncated file's header overstates it).
    """

    path: str
    sample_rate: int = 16000
    chunk_ms: int = 100
    clock: Clock | None = None
    info: AudioInfo | None = None

    def __post_init__(self) -> None:
        self.info = probe_audio(self.path)
        self._frames_read: int | None = None

    @property
    def duration(self) -> float:
        assert self.info is not None
        if self._frames_read is not None:
            return self._frames_read / self.info.sample_rate
        return self.info.duration

    def _blocks(self) -> Iterator[tuple[np.ndarray, bool]]:
        import soundfile as sf

        assert self.info is not None
        p = Path(self.path)
        rate = self.info.sample_rate
        step = chunk_frames(rate, self.chunk_ms)
        read = 0
        try:
            with sf.SoundFile(str(p)) as f:
                block = f.read(step, dtype="float32", always_2d=True)
                if len(block) == 0:
                    raise AudioInputError(f"{p}: holds no audio samples")
                while len(block):
                    following = f.read(step, dtype="float32", always_2d=True)
                    yield _mono(p, block, read / rate), len(following) == 0
                    read += len(block)
                    block = following
        except AudioInputError:
            raise
        except _READ_ERRORS as e:
            raise AudioInputError(f"{p}: could not be read past {read / rate:.1f} s ({e}); the file is corrupt") from None
        self._frames_read = read

    def chunks(self) -> Iterator[AudioChunk]:
        assert self.info is not None
        return resampled_chunks(self._blocks(), self.info.sample_rate, self.sample_rate)

    async def __call__(self, outbox: Channel[AudioChunk]) -> None:
        clock = self.clock or SimulatedClock()
        for chunk in self.chunks():
            # A chunk exists once its last sample has been spoken.
            await clock.sleep_until(chunk.end)
            arrival = clock.now() if clock.realtime else chunk.end
            await outbox.put(
                AudioChunk(chunk.samples, chunk.sample_rate, chunk.start, chunk.seq, wall_time=arrival)
            )


def wav_output(output: str | Path, flag: str = "--output") -> Path:
    """`output` as a name `write_wav` can write (it writes 16-bit WAV): `.wav` added to a name
    without a suffix, any other suffix refused before any work."""
    out = Path(output)
    if out.suffix and out.suffix.lower() != ".wav":
        raise UserError(f"{flag} {output}: the translated speech is written as WAV; give a name ending in .wav")
    return out if out.suffix else out.with_name(out.name + ".wav")


def wav_outputs(output: str | Path, targets: tuple[str, ...] | list[str], flag: str = "--output") -> dict[str, Path]:
    """Where each target's speech goes: `wav_output(output)` for one target, `NAME.<target>.wav`
    beside it for several."""
    out = wav_output(output, flag)
    if len(targets) == 1:
        return {targets[0]: out}
    return {t: out.with_name(f"{out.stem}.{t}{out.suffix}") for t in targets}


def write_wav(path: str | Path, samples: np.ndarray, sample_rate: int) -> None:
    import soundfile as sf

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(p), np.clip(samples, -1.0, 1.0), sample_rate, subtype="PCM_16")
