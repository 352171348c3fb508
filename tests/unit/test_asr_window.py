"""The encoder window sized to the buffer, and the guard against decoding loops."""

from __future__ import annotations

import numpy as np
import pytest

from speech.asr.whisper import cut_repetition
from speech.asr.window import window_frames
from speech.types import Word


def features(content: int, total: int = 3000) -> np.ndarray:
    f = np.zeros((80, total), np.float32)
    f[:, :content] = np.random.default_rng(0).uniform(-1.0, 1.0, (80, content))
    return f


@pytest.mark.parametrize("content,pad,minimum,expected", [
    (300, 50, 200, 350),     # the audio plus its padding
    (301, 50, 200, 352),     # rounded up to an even count (encoder stride 2)
    (100, 50, 200, 200),     # never below the minimum window
    (2990, 50, 200, 3000),   # never beyond the 30-s window
    (0, 50, 200, 200),       # no audio at all
])
def test_window_frames(content, pad, minimum, expected):
    assert window_frames(features(content), pad, minimum) == expected
    assert window_frames(features(content)[None], pad, minimum) == expected  # batched input


def test_a_silent_stretch_inside_the_audio_is_kept():
    f = features(500)
    f[:, 200:300] = 0.0  # only the trailing zeros are faster-whisper's padding
    assert window_frames(f, 0, 0) == 500


def ws(text: str) -> list[Word]:
    return [Word(t, i * 0.3, i * 0.3 + 0.2) for i, t in enumerate(text.split())]


@pytest.mark.parametrize("text,kept", [
    ("However, however, however, however, due to", "However,"),
    ("the slow the slow the slow channels", "the slow"),
    ("The hospital has followed protocol. The hospital has followed protocol. including",
     "The hospital has followed protocol."),
    ("very very good", "very very good"),              # a word twice is speech, not a loop
    ("he said that he said no", "he said that he said no"),
    ("", ""),
])
def test_cut_repetition(text, kept):
    assert " ".join(w.text for w in cut_repetition(ws(text))) == kept


def test_full_window_encodes_the_whole_30_s_inside_its_context_only(monkeypatch):
    from faster_whisper import WhisperModel

    from speech.asr.window import WindowedWhisperModel, full_window

    model = object.__new__(WindowedWhisperModel)  # no weights: only the window is under test
    model.pad_frames, model.min_frames = 50, 200
    monkeypatch.setattr(WhisperModel, "encode", lambda self, f: f.shape[-1])
    assert model.encode(features(300)) == 350
    with full_window():
        assert model.encode(features(300)) == 3000
    assert model.encode(features(300)) == 350
