"""Smooth joins between synthesised chunks, and a measure of what the listener hears at each join.

Each synthesiser call pads its audio with silence (Piper: 40-80 ms before, 100-250 ms after) and
starts and ends wherever the waveform is. Played back to back that gives gaps and clicks. So:
- `trim_padding` cuts the leading and trailing padding down to a short, fixed pause;
- `shape_edges` fades the first and last few milliseconds in and out, so a chunk starts and ends at
  zero: a join never clicks, whether chunks touch or a gap separates them;
- `ListenerTimeline` overlaps touching chunks by the fade length, which turns fade-out + fade-in
  into a cross-fade;
- loudness is never normalised per chunk (each voice has one fixed gain), so levels stay even.
`measure_joins` reports the silent gap, the level jump and the sample step at every join.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


FRAME_S = 0.005  # the 5 ms frames that the trim and the measure judge sound by


@dataclass(frozen=True)
class JoinConfig:
    silence_db: float = -50.0  # a 5 ms frame quieter than this (dBFS RMS) counts as padding
    keep_lead_ms: float = 10.0  # pause kept before the first voiced frame
    keep_tail_ms: float = 25.0  # pause kept after the last voiced frame
    # A chunk's last sound can be a faint burst after a silence: a final stop's release after its
    # closure ("Christ,"), the end of a decaying "th" ("mouth,"), 20-25 dB under the speech. Kept,
    # its closure joins the pause to the next chunk (95-140 ms measured at such joins). A trailing
    # stretch after at least `faint_gap_ms` of silence, with at most `faint_ms` of sound and none
    # louder than `faint_db`, is cut as padding (0: keep it).
    faint_ms: float = 20.0
    faint_db: float = -44.0
    faint_gap_ms: float = 25.0
    fade_ms: float = 8.0  # fade-in / fade-out length, and the cross-fade overlap


def _frame_db(samples: np.ndarray, frame: int) -> np.ndarray:
    n = len(samples) // frame
    if n == 0:
        return np.full(1, -120.0) if len(samples) == 0 else np.array([_db(np.sqrt(np.mean(samples**2)))])
    frames = samples[: n * frame].reshape(n, frame).astype(np.float64)
    rms = np.sqrt(np.mean(frames**2, axis=1))
    return 20 * np.log10(np.maximum(rms, 1e-6))


def _db(x: float) -> float:
    return float(20 * np.log10(max(x, 1e-6)))


def trim_padding(samples: np.ndarray, rate: int, config: JoinConfig = JoinConfig()) -> np.ndarray:
    """Cut leading/trailing silence down to the configured pauses; all-silent input gives empty."""
    start, end = padding_bounds(samples, rate, config)
    return samples[start:end]


def padding_bounds(samples: np.ndarray, rate: int, config: JoinConfig = JoinConfig()) -> tuple[int, int]:
    """The samples `trim_padding` keeps, as [start, end); (0, 0) for all-silent input."""
    frame = max(1, int(rate * FRAME_S))
    db = _frame_db(samples, frame)
    voiced = np.nonzero(db > config.silence_db)[0]
    if len(voiced) == 0:
        return 0, 0
    voiced = _without_faint_tail(voiced, db, config)
    start = max(0, voiced[0] * frame - int(rate * config.keep_lead_ms / 1000))
    end = min(len(samples), (voiced[-1] + 1) * frame + int(rate * config.keep_tail_ms / 1000))
    return start, end


def _without_faint_tail(voiced: np.ndarray, db: np.ndarray, config: JoinConfig) -> np.ndarray:
    """`voiced` (indices of 5 ms frames) less a faint last stretch after a silence (see JoinConfig)."""
    if config.faint_ms <= 0:
        return voiced
    frames = lambda ms: round(ms / 1000 / FRAME_S)  # noqa: E731
    gaps = np.nonzero(np.diff(voiced) > frames(config.faint_gap_ms))[0]  # a silence after voiced[i]
    if len(gaps) == 0:
        return voiced
    tail = voiced[gaps[-1] + 1 :]
    if len(tail) <= frames(config.faint_ms) and db[tail].max() <= config.faint_db:
        return voiced[: gaps[-1] + 1]
    return voiced


def shape_edges(samples: np.ndarray, rate: int, fade_ms: float) -> np.ndarray:
    """Raised-cosine fade-in and fade-out, so the chunk starts and ends at zero."""
    n = min(int(rate * fade_ms / 1000), len(samples) // 2)
    out = samples.astype(np.float32, copy=True)
    if n > 0:
        ramp = (0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)).astype(np.float32)
        out[:n] *= ramp
        out[-n:] *= ramp[::-1]
    return out


def prepare_chunk(samples: np.ndarray, rate: int, config: JoinConfig = JoinConfig(),
                  head: bool = True, tail: bool = True) -> tuple[np.ndarray, int]:
    """A synthesised piece ready to join: its padding trimmed (`trim_padding`) and its edges faded;
    with the number of leading samples cut (where the piece's own timing now starts). `head` /
    `tail` False: that edge is inside a piece (a part of a voice that renders window by window),
    where a silence is the piece's own pause and is kept."""
    start, end = padding_bounds(samples, rate, config)
    if not head or not tail:
        if end <= start:  # all silent: a pause inside the piece, kept whole
            start, end = 0, len(samples)
        start, end = (start if head else 0), (end if tail else len(samples))
    return shape_edges(samples[start:end], rate, config.fade_ms), start


def place(ready: int, length: int, end: int, previous_length: int, overlap: int, has_previous: bool,
          continues: bool = False, compact: bool = False) -> int:
    """Where a chunk of `length` samples, ready at sample `ready`, starts on the listener timeline
    whose previous chunk (`previous_length` samples) ends at `end`: at max(ready, end); a chunk
    that has to wait touches the previous one and overlaps it by `overlap` (a cross-fade), at
    most half of either chunk (the previous one may have come in pieces, codec packets, its last
    one short: its whole length counts). `continues`: the next piece of the same chunk, no seam;
    `compact`: back to back whatever `ready` says."""
    wanted = end if compact or continues else max(ready, end)
    if has_previous and wanted <= end and not continues:
        wanted = max(0, end - min(overlap, length // 2, previous_length // 2))
    return wanted


@dataclass(frozen=True)
class Placement:
    start: float  # seconds on the listener timeline
    end: float
    emitted: float  # when the chunk's first sample was available (wall seconds)
    text: str = ""


@dataclass
class ListenerTimeline:
    """Places chunks as a listener hears them: each starts at max(its emission time, the end of the
    previous chunk); `compact` drops the waits (chunks back to back). Touching chunks overlap by
    `crossfade_ms` (their faded edges add up to a cross-fade)."""

    sample_rate: int
    compact: bool = False
    crossfade_ms: float = JoinConfig.fade_ms
    placements: list[Placement] = field(default_factory=list)
    _pieces: list[tuple[int, np.ndarray]] = field(default_factory=list)
    _end: int = 0  # end of the previous chunk, in samples
    _starts: list[int] = field(default_factory=list)  # where each chunk (not each piece) starts
    _chunk_len: int = 0  # samples of the latest chunk so far (all its pieces)

    def add(self, samples: np.ndarray, emitted: float, text: str = "", continues: bool = False) -> Placement:
        """Place a chunk; `continues`: it is the next piece of the previous chunk (no seam)."""
        rate = self.sample_rate
        wanted = place(int(round(emitted * rate)), len(samples), self._end, self._chunk_len,
                       int(rate * self.crossfade_ms / 1000), bool(self._pieces), continues, self.compact)
        if not continues:
            self._starts.append(wanted)
            self._chunk_len = 0
        self._chunk_len += len(samples)
        self._pieces.append((wanted, samples.astype(np.float32, copy=False)))
        self._end = max(self._end, wanted + len(samples))
        placement = Placement(wanted / rate, (wanted + len(samples)) / rate, emitted, text)
        self.placements.append(placement)
        return placement

    @property
    def duration(self) -> float:
        return self._end / self.sample_rate

    def render(self) -> np.ndarray:
        out = np.zeros(self._end, dtype=np.float32)
        for start, samples in self._pieces:
            out[start : start + len(samples)] += samples
        return out

    def boundaries(self) -> list[int]:
        """Sample positions where one chunk hands over to the next (for `measure_joins`)."""
        return self._starts[1:]


@dataclass(frozen=True)
class JoinReport:
    position_s: float
    gap_ms: float  # longest run of silent 5 ms frames that spans the join
    level_jump_db: float  # RMS of the voiced second after minus the voiced second before
    step: float  # largest sample-to-sample change within 2 ms of the join (a click is a big step)
    # the chunk before the join ends with punctuation: a pause there is one the text asks for
    # (prosody), not an artefact of joining; reported apart from mid-clause joins
    after_punctuation: bool = False


PAUSE_MARKS = ".,;:!?…—"
CLOSERS = "\"'”’)]»"


def ends_with_pause(text: str) -> bool:
    """Whether a chunk's text ends where speech pauses (a clause or sentence mark, maybe quoted)."""
    t = text.rstrip().rstrip(CLOSERS)
    return bool(t) and t[-1] in PAUSE_MARKS


def measure_joins(
    samples: np.ndarray, rate: int, boundaries: list[int], silence_db: float = JoinConfig.silence_db,
    left_texts: list[str] | None = None,
) -> list[JoinReport]:
    """Per join: gap, level jump, step; `left_texts[i]`: the text of the chunk before join i (when
    known) marks the joins after punctuation."""
    frame = max(1, int(rate * FRAME_S))
    db = _frame_db(samples, frame)
    silent = db <= silence_db
    reports = []
    for i, b in enumerate(boundaries):
        f = min(b // frame, len(db) - 1)
        gap = 0
        if silent[f]:
            lo = f
            while lo > 0 and silent[lo - 1]:
                lo -= 1
            hi = f
            while hi + 1 < len(silent) and silent[hi + 1]:
                hi += 1
            gap = hi - lo + 1
        # loudness over up to 1 s of voiced frames each side (shorter windows measure phonemes)
        before = [i for i in range(f - 1, max(-1, f - 600), -1) if not silent[i]][:200]
        after = [i for i in range(f, min(len(db), f + 600)) if not silent[i]][:200]
        jump = 0.0
        if before and after:
            jump = _mean_db(db[after]) - _mean_db(db[before])
        w = int(rate * 0.002)
        seg = samples[max(0, b - w) : b + w]
        step = float(np.max(np.abs(np.diff(seg)))) if len(seg) > 1 else 0.0
        pause = left_texts is not None and i < len(left_texts) and ends_with_pause(left_texts[i])
        reports.append(JoinReport(b / rate, gap * frame * 1000 / rate, float(jump), step, pause))
    return reports


def _mean_db(db: np.ndarray) -> float:
    return _db(float(np.sqrt(np.mean(10 ** (db / 10)))))


@dataclass(frozen=True)
class JoinSummary:
    joins: int
    max_gap_ms: float
    mean_abs_level_jump_db: float
    max_step: float
    gaps_over_50ms: int  # all joins
    gaps_over_50ms_after_punctuation: int = 0  # of those, where the text asks for a pause
    max_gap_mid_clause_ms: float = 0.0  # the longest gap where it does not

    @classmethod
    def of(cls, reports: list[JoinReport]) -> "JoinSummary":
        if not reports:
            return cls(0, 0.0, 0.0, 0.0, 0)
        return cls(
            joins=len(reports),
            max_gap_ms=max(r.gap_ms for r in reports),
            mean_abs_level_jump_db=float(np.mean([abs(r.level_jump_db) for r in reports])),
            max_step=max(r.step for r in reports),
            gaps_over_50ms=sum(r.gap_ms > 50 for r in reports),
            gaps_over_50ms_after_punctuation=sum(r.gap_ms > 50 and r.after_punctuation for r in reports),
            max_gap_mid_clause_ms=max((r.gap_ms for r in reports if not r.after_punctuation), default=0.0),
        )
