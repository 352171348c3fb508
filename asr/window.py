"""A Whisper encoder window sized to the audio instead of a fixed 30 s.

faster-whisper pads every buffer to 30 s of features, so each decode pays for a 30-s encoder pass
(tiny.en 0.35 s, base 0.64 s on 2 cores) although a streaming buffer holds 1-12 s. CTranslate2's
encoder takes shorter inputs (it slices its positional table), costing in proportion: 10 s is
~8x cheaper. Whisper was trained on 30-s windows, so a little of the padding is kept after the
audio (`pad_s`); speech/bench asr measures the WER this costs (docs/asr.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
from faster_whisper import WhisperModel

FRAMES_PER_SECOND = 100  # log-mel frames

# Set by `full_window()` for the decodes of one thread: the model is shared between streams.
_FULL_WINDOW: ContextVar[bool] = ContextVar("whisper_full_window", default=False)


@contextmanager
def full_window() -> Iterator[None]:
    """Decodes made inside see the whole 30-s window, as Whisper was trained (and as offline)."""
    token = _FULL_WINDOW.set(True)
    try:
        yield
    finally:
        _FULL_WINDOW.reset(token)


class WindowedWhisperModel(WhisperModel):
    """A WhisperModel whose encoder sees the audio plus `pad_s` of padding, at least `min_s`."""

    def __init__(self, *args: Any, pad_s: float = 1.0, min_s: float = 2.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pad_frames = int(round(pad_s * FRAMES_PER_SECOND))
        self.min_frames = int(round(min_s * FRAMES_PER_SECOND))

    def encode(self, features: np.ndarray) -> Any:
        if _FULL_WINDOW.get():
            return super().encode(features)
        frames = window_frames(features, self.pad_frames, self.min_frames)
        return super().encode(np.ascontiguousarray(features[..., :frames]))


def window_frames(features: np.ndarray, pad_frames: int, min_frames: int) -> int:
    """How many feature frames to encode: the content (faster-whisper pads with exact zeros after
    it), plus the padding, rounded up to an even count (the encoder's stride is 2)."""
    total = features.shape[-1]
    energy = np.abs(features).reshape(-1, total).max(axis=0)
    nonzero = np.flatnonzero(energy > 0)
    content = int(nonzero[-1]) + 1 if len(nonzero) else 0
    frames = min(total, max(content + pad_frames, min_frames))
    return frames + (frames % 2) if frames < total else total
