"""Shorter pauses: silences inside a synthesised piece cut down while the listener is behind
(tts.pace decides, tts.stage cuts), with where each sample lands once they are cut."""

from __future__ import annotations

import numpy as np

from .joins import FRAME_S, _frame_db


def shorten_pauses(samples: np.ndarray, rate: int, pause_ms: float, silence_db: float = -50.0) -> np.ndarray:
    """Cut every silence inside `samples` longer than `pause_ms` down to `pause_ms` (the middle of
    the silence goes, its edges stay: the decay and the onset around it are kept)."""
    return cut(samples, pause_cuts(samples, rate, pause_ms, silence_db))


def pause_cuts(samples: np.ndarray, rate: int, pause_ms: float, silence_db: float = -50.0) -> list[tuple[int, int]]:
    """The [start, end) sample ranges `shorten_pauses` removes, in order."""
    frame = max(1, int(rate * FRAME_S))
    db = _frame_db(samples, frame)
    silent = db <= silence_db
    keep_frames = int(round(pause_ms / 1000 / FRAME_S))
    if len(silent) < 3 or keep_frames <= 0:
        return []
    cuts: list[tuple[int, int]] = []
    i = 0
    while i < len(silent):
        if not silent[i]:
            i += 1
            continue
        j = i
        while j < len(silent) and silent[j]:
            j += 1
        inside = i > 0 and j < len(silent)  # leading and trailing padding is the joins' job
        if inside and j - i > keep_frames:
            half = keep_frames // 2
            cuts.append(((i + half) * frame, (j - (keep_frames - half)) * frame))
        i = j
    return cuts


def cut(samples: np.ndarray, cuts: list[tuple[int, int]]) -> np.ndarray:
    """`samples` without the ranges `cuts` (ordered, disjoint)."""
    if not cuts:
        return samples
    parts, pos = [], 0
    for a, b in cuts:
        parts.append(samples[pos:a])
        pos = b
    parts.append(samples[pos:])
    return np.concatenate(parts)


def after_cuts(position: int, cuts: list[tuple[int, int]]) -> int:
    """Where sample `position` lands once `cuts` are removed (inside a cut: where the cut was)."""
    removed = 0
    for a, b in cuts:
        if position <= a:
            break
        removed += min(position, b) - a
    return position - removed
