"""Speaking faster: the synthesiser's own rate where it has one, else time-scale modification.

eSpeak NG (words per minute) and Piper (`length_scale`) change their rate themselves, which keeps
every phoneme natural. Any other voice is synthesised at its own rate and shortened with WSOLA
(waveform-similarity overlap-add: pitch and formants kept, no phase-vocoder smearing of
consonants), from `pytsmod` (the `timescale` extra): a pure-Python wheel on numpy and scipy,
nothing to build, the most recently maintained of the WSOLA implementations on PyPI. Kokoro has a
duration scale of its own but shortens itself this way too (`time_stretch`): its scale was heard
worse than WSOLA of its own-pace speech.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from speech.errors import UserError
from speech.types import AudioChunk


def synthesize_at(synthesizer: Any, text: str, speed: float, slack_s: float | None = None) -> Iterator[AudioChunk]:
    """`synthesizer.synthesize(text)` spoken `speed` times faster (1: as the voice speaks).
    `slack_s`: how long the listener will still hear earlier speech, for a voice that renders
    differently when it is not waited for (`uses_slack`)."""
    hint = {"slack_s": slack_s} if slack_s is not None and getattr(synthesizer, "uses_slack", False) else {}
    if abs(speed - 1.0) < 1e-6:
        return synthesizer.synthesize(text, **hint)
    if getattr(synthesizer, "supports_speed", False):
        return synthesizer.synthesize(text, speed=speed, **hint)
    return _stretched(synthesizer.synthesize(text, **hint), speed)


def _stretched(chunks: Iterator[AudioChunk], speed: float) -> Iterator[AudioChunk]:
    parts = list(chunks)
    if not parts:
        return
    samples = np.concatenate([c.samples for c in parts])
    marks = tuple((w, t / speed) for c in parts for w, t in c.word_marks)  # WSOLA keeps the time scale linear
    yield AudioChunk(time_stretch(samples, parts[0].sample_rate, speed), parts[0].sample_rate, text=parts[0].text,
                     word_marks=marks)


def time_stretch(samples: np.ndarray, rate: int, speed: float) -> np.ndarray:
    """`samples` played `speed` times faster at the same pitch (WSOLA, ~46 ms windows)."""
    try:
        import pytsmod
    except ImportError:
        raise UserError(
            "this voice has no speed of its own; speaking it faster needs pytsmod: pip install 'speech-s2st[timescale]'"
        ) from None
    if len(samples) < 2048:
        return samples.astype(np.float32)
    win = 1024 if rate <= 24000 else 2048
    out = pytsmod.wsola(samples.astype(np.float64), 1.0 / speed, win_size=win, syn_hop_size=win // 2, tolerance=win // 2)
    return np.asarray(out, dtype=np.float32)
