"""Spanish/Portuguese number words, and the round-trip judge that uses them on both sides."""

from __future__ import annotations

import pytest

from speech.tts.numbers import spell_es, spell_numbers, spell_pt
from speech.tts.roundtrip import score


@pytest.mark.parametrize("n, es, pt", [
    (0, "cero", "zero"), (16, "dieciséis", "dezesseis"), (25, "veinticinco", "vinte e cinco"),
    (31, "treinta y uno", "trinta e um"), (100, "cien", "cem"), (101, "ciento uno", "cento e um"),
    (555, "quinientos cincuenta y cinco", "quinhentos e cinquenta e cinco"),
    (2002, "dos mil dos", "dois mil e dois"), (1234, "mil doscientos treinta y cuatro", "mil duzentos e trinta e quatro"),
    (21000, "veintiún mil", "vinte e um mil"), (1_000_000, "un millón", "um milhão"),
    (3_000_000, "tres millones", "três milhões"),
])
def test_spells_integers(n, es, pt):
    assert spell_es(n) == es and spell_pt(n) == pt


def test_spell_numbers_reads_thousands_separators_and_leaves_other_languages_alone():
    assert spell_numbers("unos 1.500 años", "es").split() == "unos mil quinientos años".split()
    assert spell_numbers("by 25 years", "en") == "by 25 years"


def test_judge_counts_digits_and_words_for_the_same_number_as_equal():
    assert score("por vinte e cinco a trinta anos", "por 25 a 30 anos.", "pt").errors == 0
    assert score("unos veinticinco años", "unos 25 años", "es").errors == 0
    assert score("unos veintiséis años", "unos 25 años", "es").errors == 1
