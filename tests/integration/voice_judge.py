"""Shared by the voice tests: speak a text whole, and the round-trip word error rate of voices
reading FLORES-101 devtest lines of one language (the project's recogniser as the judge)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def speak(synth, text: str, speed: float = 1.0) -> np.ndarray:
    return np.concatenate([c.samples for c in synth.synthesize(text, speed=speed)])


def roundtrip_rates(registry, language: str, voices: tuple[str, ...], lines: int, first: int = 100) -> dict[str, float]:
    """Word error rate per voice on `lines` FLORES-101 devtest lines from `first` (shared data);
    a voice that is not installed is left out (the test skips when the data is missing)."""
    from speech.models.voices import pico_installed
    from speech.tts.backends import create_synthesizer
    from speech.tts.bench import DEFAULT_MANIFEST, more_texts
    from speech.tts.roundtrip import roundtrip

    if not Path(DEFAULT_MANIFEST).is_file():
        pytest.skip(f"no shared data at {DEFAULT_MANIFEST}")
    texts = [c[f"ref_{language}"] for c in more_texts(Path(DEFAULT_MANIFEST), language, lines, first)]
    rates = {}
    for voice in voices:
        if voice == "pico" and not pico_installed(language):
            continue
        synth = create_synthesizer(registry, language, voice)
        errors = words = 0
        for text in texts:
            e, _ = roundtrip(registry, speak(synth, text), synth.sample_rate, text, language)
            errors, words = errors + e.errors, words + e.words
        rates[voice] = errors / words
    return rates
