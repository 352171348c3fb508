"""Recognition lag against a reference timeline: alignment, unmatched share, on-disk cache."""

from __future__ import annotations

import numpy as np
import pytest

from speech.asr import reference
from speech.asr.reference import Committed, align, recognition_lag, reference_timeline
from speech.types import Word


def ref_words(*items: tuple[str, float]) -> list[Word]:
    return [Word(t, e - 0.3, e) for t, e in items]


def test_lag_is_commit_time_minus_the_reference_end_of_the_matched_word():
    reference_ = ref_words(("Hello", 0.5), ("world", 1.0), ("again", 1.6))
    committed = [Committed(Word("hello,", 0.1, 0.55), 1.5, 2.0), Committed(Word("world.", 0.6, 1.1), 2.0, 2.7)]
    lag = recognition_lag(committed, reference_)
    assert lag.lag_source == pytest.approx([1.0, 1.0])  # against the reference's ends, not the hypothesis's
    assert lag.lag_wall == pytest.approx([1.5, 1.7])
    assert lag.matched_end == [0.5, 1.0]
    assert lag.reference_words == 3 and lag.unmatched == 1
    assert lag.unmatched_share == pytest.approx(1 / 3)  # "again" was never committed: counted


def test_misrecognised_and_inserted_words_are_not_matched():
    reference_ = ref_words(("the", 0.3), ("whole", 0.7), ("hole", 1.2))
    committed = [Committed(Word(t, 0, 0), s, s) for t, s in (("the", 1.0), ("hole", 1.5), ("uh", 1.6))]
    assert align([c.word for c in committed], reference_) == [(0, 0), (1, 2)]
    lag = recognition_lag(committed, reference_)
    assert lag.lag_source == pytest.approx([0.7, 0.3]) and lag.unmatched == 1


def test_lags_add_up_over_clips_and_nothing_committed_is_all_unmatched():
    reference_ = ref_words(("a", 0.5), ("b", 1.0))
    none = recognition_lag([], reference_)
    assert none.unmatched_share == 1.0 and none.lag_source == []
    both = none + recognition_lag([Committed(Word("a", 0, 0), 0.9, 1.0)], reference_)
    assert both.reference_words == 4 and both.matched == 1 and both.unmatched_share == 0.75
    assert recognition_lag([], []).unmatched_share is None


def test_the_reference_timeline_is_decoded_once_per_audio_content(tmp_path, monkeypatch):
    import soundfile as sf

    monkeypatch.setenv("SPEECH_CACHE", str(tmp_path / "cache"))
    calls = []

    def fake_decode(samples, rate, language, registry=None):
        calls.append((len(samples), language))
        return [Word("hi", 0.1, 0.4, 0.9)]

    monkeypatch.setattr(reference, "transcribe_reference", fake_decode)
    a, b = tmp_path / "a.wav", tmp_path / "b.wav"
    sf.write(a, np.zeros(8000, np.float32), 16000)
    sf.write(b, np.zeros(8000, np.float32), 16000)  # same audio under another name
    first = reference_timeline(a, "en")
    again = reference_timeline(b, "en")
    assert first == again == [Word("hi", 0.1, 0.4, 0.9)]
    assert calls == [(8000, "en")]  # keyed by content: decoded once
    reference_timeline(a, "es")
    assert len(calls) == 2  # another language is another reference
    sf.write(a, np.ones(8000, np.float32) * 0.1, 16000)
    reference_timeline(a, "en")
    assert len(calls) == 3  # changed audio: decoded again
