"""Word starts from what the synthesisers report: Piper's samples per phoneme, split into words
by its space phoneme, matched to the text sentence by sentence."""

from __future__ import annotations

from speech.tts.piper_voice import sentence_words, word_starts


def test_word_starts_from_samples_per_phoneme():
    phonemes = ["^", "h", "ə", ",", " ", "t", "u", " ", "θ", ".", "$"]
    samples = [100, 10, 20, 300, 50, 10, 10, 40, 30, 200, 100]
    # "hə," from 100; "tu" after the space (100+10+20+300+50); "θ" after the next space
    assert word_starts(phonemes, samples) == [100, 480, 540]
    assert word_starts(["^", "$"], [10, 10]) == []


def test_sentence_words_split_where_piper_splits():
    assert sentence_words("Hello, 23 people came. Don't worry, she said.") == [4, 4]
    assert sentence_words('He said "stop." Then nothing') == [3, 2]
    assert sentence_words("Why? Because!") == [1, 1]
    assert sentence_words("") == []
