"""Galician respelt for the Spanish eSpeak voice, and each language's voice tuning (rate, gap,
variant), with a fake engine: what eSpeak is asked to say, and what the chunks carry."""

from __future__ import annotations

import numpy as np

from speech.tts.espeak import TUNED_VOICES, EspeakConfig, EspeakSynthesizer, tuned_voice
from speech.tts.espeak_engine import PREFERRED_VOICE
from speech.tts.respell import galician_for_spanish, respeller


def test_galician_x_is_spoken_sh_except_where_it_is_ks():
    assert galician_for_spanish("Xa dixo que hoxe a xente") == "SHa disho que hoshe a shente"
    # "ex" + vowel at a word's start and x before a consonant keep eSpeak's own reading
    assert galician_for_spanish("o exame, «exército» e a explosión") == "o exame, «exército» e a explosión"
    assert galician_for_spanish("BAIXA") == "BAISHA"


def test_one_letter_accented_words_are_read_as_words_not_spelt():
    # the Spanish voice spells a lone "é" as "e acentuada"
    assert galician_for_spanish("que é un dos, á súa nai") == "que e un dos, a súa nai"
    assert galician_for_spanish("café á") == "café a"  # inside a word the accent stays


def test_respelling_is_for_galician_on_the_spanish_voice_only():
    assert respeller("gl", "es+m3") is galician_for_spanish and respeller("gl-ES", "es") is galician_for_spanish
    assert respeller("es", "es") is None and respeller("gl", "pt-br") is None


class FakeEngine:
    sample_rate = 22050

    def __init__(self):
        self.calls = []

    def resolve(self, language, voice="", attributes=()):
        name = voice or PREFERRED_VOICE.get(language, language)
        return f"/tmp/x/composed+{name.partition('+')[2]}" if attributes else name

    def synth(self, text, voice, words_per_minute, consumer, **kw):
        self.calls.append((text, voice, words_per_minute, kw["word_gap"]))
        consumer(np.zeros(441, np.float32))


def test_galician_chunks_carry_the_text_as_written_and_espeak_gets_it_respelt():
    engine = FakeEngine()
    synth = EspeakSynthesizer(EspeakConfig(language="gl"), engine)
    chunks = list(synth.synthesize("Dixo que é hoxe."))
    assert [c.text for c in chunks] == ["Dixo que é hoxe."]
    assert engine.calls[0][0] == "Disho que e hoshe."
    plain = FakeEngine()
    list(EspeakSynthesizer(EspeakConfig(language="es"), plain).synthesize("Dixo que é hoxe."))
    assert plain.calls[0][0] == "Dixo que é hoxe."  # Spanish is read as written


def test_each_new_language_speaks_with_its_tuned_rate_gap_and_variant():
    for language in ("it", "ca", "gl"):
        voice = PREFERRED_VOICE[language]
        assert "+" in voice  # a variant of eSpeak's voice, not the voice as shipped
        tuning = tuned_voice(language, voice)
        assert tuning is not None and tuning.words_per_minute < 135 and tuning.word_gap > 3
        engine = FakeEngine()
        list(EspeakSynthesizer(EspeakConfig(language=language), engine).synthesize("uno due"))
        _, spoken_by, wpm, gap = engine.calls[0]
        assert (wpm, gap) == (tuning.words_per_minute, tuning.word_gap)
        assert spoken_by.endswith("+" + voice.partition("+")[2])
        engine = FakeEngine()  # an explicit rate and gap win over the voice's
        list(EspeakSynthesizer(EspeakConfig(language=language, words_per_minute=150, word_gap=0), engine).synthesize("x y"))
        assert engine.calls[0][2:] == (150, 0)
    # Spanish, borrowed by Galician, keeps its own pace
    assert tuned_voice("es", "es") is None and tuned_voice("gl", "es+m3") is TUNED_VOICES["gl:es"]
    engine = FakeEngine()
    list(EspeakSynthesizer(EspeakConfig(language="es"), engine).synthesize("uno dos"))
    assert engine.calls[0][2:] == (135, 3)
