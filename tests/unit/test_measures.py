"""One definition of every measure: WER, percentile, erasure, empty outputs; and every caller uses it."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech.asr.bench import corpus_errors
from speech.asr.normalize import normalize
from speech.eval.aggregate import aggregate
from speech.eval.erasure import erased_words, erasure_rate
from speech.eval.metrics import normalized_erasure, utterance_metrics
from speech.eval.quality import ErrorCounts, word_errors
from speech.stats import percentile

REPO = Path(__file__).resolve().parents[2]


def test_wer_takes_reference_first():
    # Asymmetric: a deletion against 3 reference words is 1/3; the other way round it would be 1/2.
    c = word_errors("the cat sat", "the cat")
    assert (c.errors, c.words) == (1, 3)
    assert c.wer == pytest.approx(1 / 3)
    assert word_errors("the cat", "the cat sat").wer == pytest.approx(1 / 2)


@pytest.mark.parametrize("language, reference, hypothesis", [
    ("en", "Twenty-five years, in 1995.", "25 years in nineteen ninety five"),
    ("es", "Hace veinticinco años, en 1995.", "hace 25 años en mil novecientos noventa y cinco"),
    ("pt", "Há vinte e cinco anos", "há 25 anos"),
    ("de", "Vor fünfundzwanzig Jahren, 2.500 Menschen", "vor 25 Jahren zweitausendfünfhundert Menschen"),
    ("fr", "Il y a vingt-cinq ans, quatre-vingt-dix personnes", "il y a 25 ans 90 personnes"),
    ("it", "Venticinque anni, nel 2005", "25 anni nel duemilacinque"),
    ("ca", "Fa vint-i-cinc anys, el 2005", "fa 25 anys el dos mil cinc"),
    ("gl", "Hai vinte e cinco anos, no 2005", "hai 25 anos no dous mil cinco"),
])
def test_numbers_are_spelled_in_every_language(language, reference, hypothesis):
    assert word_errors(reference, hypothesis, language).errors == 0
    # The same pair scored in the wrong language is not equal: the spelling is per language.
    other = "de" if language != "de" else "fr"
    assert word_errors(reference, hypothesis, other).errors > 0


def test_unknown_language_is_only_lower_cased_and_stripped():
    assert normalize("Ol' «Hello», 25!", "xx") == "ol hello 25"


def test_catalan_geminate_l_is_one_word_however_it_is_typed():
    # the middle dot of "col·lisió" joins letters: one word, as Whisper writes it ("·" or ".")
    assert normalize("La col·lisió dels satèl·lits.", "ca") == "la col·lisió dels satèl·lits"
    assert word_errors("la col·lisió", "La col.lisió", "ca").errors == 0
    assert word_errors("la col·lisió", "la colisió", "ca") == ErrorCounts(1, 2)
    assert normalize("· un punt volat sol ·", "ca") == "un punt volat sol"


def _asr_log(text: str) -> list[dict]:
    """An event log whose recogniser committed `text` word by word."""
    records = [{"kind": "input", "end": 3.0}]
    for i, word in enumerate(text.split()):
        records.append({"kind": "update", "stage": "asr", "committed": [{"text": word, "start": i * 0.1, "end": i * 0.1 + 0.1}],
                        "tentative": [], "source_time": i * 0.1 + 0.3, "wall_time": i * 0.1 + 0.4, "final": False})
    records.append({"kind": "end", "source_duration": 3.0})
    return records


def test_bench_asr_and_speech_eval_report_the_same_wer():
    pairs = [
        ("He said 25 words to Mr. Smith.", "he said twenty five words to mister smith"),
        ("The 20th century began in 1901.", "the twentieth century began in nineteen oh one and"),
        ("Nothing was heard", ""),
        ("a b c d", "a x c"),
    ]
    bench = corpus_errors(pairs, "en")
    rows = [utterance_metrics(_asr_log(hyp), transcript=ref, language="en") for ref, hyp in pairs]
    assert [r["asr_text"] for r in rows] == [hyp for _, hyp in pairs]  # the log carried the same output
    evaluated = aggregate(rows)
    assert (bench.errors, bench.words) == (6, 23)  # 1 insertion + 3 deletions + 1 sub + 1 del
    assert evaluated["wer"] == pytest.approx(bench.wer)
    assert sum(r["asr_errors"] for r in rows) == bench.errors


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=50), st.floats(0, 100))
def test_percentile_is_numpys_linear_percentile(values, q):
    got = percentile(values, q)
    if not values:
        assert got is None
    else:
        assert got == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-6)


def test_percentile_refuses_nan_and_bad_q():
    with pytest.raises(ValueError):
        percentile([1.0, math.nan], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_erasure_counts_words_taken_back():
    assert erased_words([["a", "b"], ["a", "c", "d"], ["a", "c", "d", "e"]]) == 1
    assert erased_words([["a", "b", "c"], []]) == 3
    assert erasure_rate([["a"], ["b"]], 1) == 1.0
    assert erasure_rate([[]], 0) is None


def test_eval_erasure_is_the_one_erasure():
    def upd(committed, tentative):
        return {"kind": "update", "stage": "mt", "committed": [{"text": w} for w in committed],
                "tentative": [{"text": w} for w in tentative], "source_time": 0.0, "wall_time": 0.0}

    log = [upd([], ["a", "b", "c"]), upd(["a"], ["x"]), upd(["x", "y"], [])]
    displays = [[], ["a", "b", "c"], ["a", "x"], ["a", "x", "y"]]
    assert normalized_erasure(log, "mt") == erasure_rate(displays, 3) == pytest.approx(2 / 3)


def test_empty_translations_are_counted_not_averaged_as_zero():
    full = {"mt_words": 3, "mt_AL_cu": 2.0}
    empty = {"mt_words": 0}  # no latency keys: nothing was emitted
    agg = aggregate([full, empty, dict(full, mt_AL_cu=4.0)])
    assert agg["mt_empty_outputs"] == 1
    assert agg["mt_AL_cu"] == pytest.approx(3.0)


def test_one_definition_of_each_measure():
    """Every measure is defined once in the repository (tests excepted)."""
    out = subprocess.run(
        ["git", "grep", "-n", "-E", r"def percentile|def wer|def word_error|levenshtein|def average_lagging|def erased_words",
         "--", "*.py", ":!tests"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout
    names = [re.search(r"def (\w+)|levenshtein", line).group(0) for line in out.splitlines()]
    assert sorted(names) == sorted({*names}), out
    assert "levenshtein" not in names, out
