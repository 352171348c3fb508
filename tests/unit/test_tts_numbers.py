"""Number words (Spanish, Portuguese, Italian, Catalan, Galician), and the round-trip judge that
uses them on both sides."""

from __future__ import annotations

import pytest

from speech.tts.numbers import spell_ca, spell_es, spell_gl, spell_it, spell_numbers, spell_pt
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


@pytest.mark.parametrize("n, it, ca, gl", [
    (0, "zero", "zero", "cero"), (1, "uno", "un", "un"), (16, "sedici", "setze", "dezaseis"),
    (21, "ventuno", "vint-i-un", "vinte e un"), (23, "ventitré", "vint-i-tres", "vinte e tres"),
    (38, "trentotto", "trenta-vuit", "trinta e oito"), (45, "quarantacinque", "quaranta-cinc", "corenta e cinco"),
    (100, "cento", "cent", "cen"), (101, "centouno", "cent un", "cento un"),
    (555, "cinquecentocinquantacinque", "cinc-cents cinquanta-cinc", "quiñentos cincuenta e cinco"),
    (1003, "milletré", "mil tres", "mil tres"), (2005, "duemilacinque", "dos mil cinc", "dous mil cinco"),
    (21000, "ventunmila", "vint-i-un mil", "vinte e un mil"), (1_000_000, "un milione", "un milió", "un millón"),
    (2_300_000, "due milioni trecentomila", "dos milions tres-cents mil", "dous millóns trescentos mil"),
])
def test_spells_italian_catalan_galician(n, it, ca, gl):
    assert (spell_it(n), spell_ca(n), spell_gl(n)) == (it, ca, gl)


def test_spell_numbers_reads_thousands_separators_and_leaves_other_languages_alone():
    assert spell_numbers("unos 1.500 años", "es").split() == "unos mil quinientos años".split()
    assert spell_numbers("by 25 years", "en") == "by 25 years"


def test_judge_counts_digits_and_words_for_the_same_number_as_equal():
    assert score("por vinte e cinco a trinta anos", "por 25 a 30 anos.", "pt").errors == 0
    assert score("unos veinticinco años", "unos 25 años", "es").errors == 0
    assert score("unos veintiséis años", "unos 25 años", "es").errors == 1
    assert score("un incontro di venticinque minuti", "un incontro di 25 minuti", "it").errors == 0
    assert score("una reunió de vint-i-cinc minuts", "una reunió de 25 minuts", "ca").errors == 0
    assert score("unha reunión de vinte e cinco minutos", "unha reunión de 25 minutos", "gl").errors == 0
