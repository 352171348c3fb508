"""Language detection for `--source auto` (asr/language_id.py): the choice among the languages a
caller can take, and what it refuses, with a fake Whisper."""

from __future__ import annotations

import numpy as np
import pytest

from speech.asr import language_id
from speech.asr.language_id import LanguageUnknown, choose, detect

SERVED = {"en", "es", "pt", "fr"}


def test_the_likeliest_language_wins_when_it_is_served():
    found = choose([("es", 0.91), ("pt", 0.05), ("gl", 0.02)], SERVED, 12.0)
    assert (found.language, found.probability, found.speech_s) == ("es", 0.91, 12.0)
    assert found.ranked[0] == ("es", 0.91)


def test_an_unsure_unserved_first_guess_gives_way_to_the_likeliest_served_language():
    # Galician speech is often heard as a little Galician and much Portuguese or Spanish
    found = choose([("gl", 0.41), ("pt", 0.38), ("es", 0.15)], SERVED, 8.0)
    assert found.language == "pt"


def test_a_language_whisper_is_sure_of_but_nothing_translates_is_refused_by_name():
    with pytest.raises(LanguageUnknown) as e:
        choose([("ja", 0.88), ("en", 0.04)], SERVED, 10.0, name="talk.wav")
    assert "talk.wav sounds like ja (probability 0.88)" in str(e.value)
    assert "it takes en, es, fr, pt" in str(e.value) and "--source" in str(e.value)


def test_no_served_language_in_the_ranking_is_refused():
    with pytest.raises(LanguageUnknown):
        choose([("ja", 0.3), ("ko", 0.2)], SERVED, 10.0)
    with pytest.raises(LanguageUnknown):
        choose([], SERVED, 10.0)


def test_the_ranking_is_read_likeliest_first_whatever_its_order():
    assert choose([("pt", 0.2), ("es", 0.7)], SERVED, 5.0).language == "es"


class FakeWhisper:
    def __init__(self, ranked):
        self.ranked = ranked
        self.heard: list[int] = []
        self.full_window: list[bool] = []

    def detect_language(self, audio):
        from speech.asr.window import _FULL_WINDOW

        self.heard.append(len(audio))
        self.full_window.append(_FULL_WINDOW.get())
        return self.ranked[0][0], self.ranked[0][1], self.ranked


def test_detection_hears_at_most_30_s_of_speech_in_the_whole_window(monkeypatch):
    monkeypatch.setattr(language_id, "speech_of", lambda samples: samples)  # all of it is speech
    model = FakeWhisper([("fr", 0.97), ("en", 0.01)])
    found = detect(model, np.ones(45 * 16000, np.float32), SERVED)
    assert found.language == "fr" and found.speech_s == 30.0
    assert model.heard == [30 * 16000] and model.full_window == [True]


def test_silence_or_a_cough_is_too_little_to_tell_a_language(monkeypatch):
    model = FakeWhisper([("en", 0.9)])
    with pytest.raises(LanguageUnknown, match="no speech in its first 5 s"):
        detect(model, np.zeros(5 * 16000, np.float32), SERVED, name="quiet.wav")
    monkeypatch.setattr(language_id, "speech_of", lambda samples: samples[:8000])
    with pytest.raises(LanguageUnknown, match=r"only 0.5 s of speech"):
        detect(model, np.ones(5 * 16000, np.float32), SERVED)
    assert model.heard == []  # never asked
