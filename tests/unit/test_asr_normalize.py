import pytest

from speech.asr.evaluate import lags, StreamResult
from speech.eval.quality import word_errors
from speech.asr.normalize import normalize, spell_number, spell_ordinal
from speech.types import Word


@pytest.mark.parametrize("text,expected", [
    ("And Mr. John Dashwood, had then!", "and mister john dashwood had then"),
    ("lag behind by 25 to 30 year", "lag behind by twenty five to thirty year"),
    ("Twentieth-century research", "twentieth century research"),
    ("the 20th century", "the twentieth century"),
    ("said to be 3:2.", "said to be three two"),
    ("in 1995", "in nineteen ninety five"),
    ("1,000 people, 3.5%", "one thousand people three point five percent"),
    ("Many people don't think", "many people don't think"),
    ("'quoted'", "quoted"),
])
def test_normalize(text, expected):
    assert normalize(text) == expected


def test_spelling():
    assert spell_number(0) == "zero"
    assert spell_number(115) == "one hundred fifteen"
    assert spell_number(2_000_003) == "two million three"
    assert spell_ordinal(21) == "twenty first"
    assert spell_ordinal(40) == "fortieth"


def test_word_errors_count_after_normalisation():
    def counts(reference, hypothesis):
        c = word_errors(reference, hypothesis)
        return c.errors, c.words

    assert counts("twenty five to thirty", "25 to 30.") == (0, 4)
    assert counts("a b c", "a x c d") == (2, 3)
    assert counts("a b", "") == (2, 2)


def test_lag_matches_words_by_alignment():
    offline = [Word("a", 0.0, 0.5), Word("b", 0.5, 1.0), Word("c", 1.0, 1.5)]
    streamed = StreamResult([Word("A"), Word("x"), Word("c")], [1.0, 2.0, 2.5], [1.5, 2.5, 3.0], 0.0)
    src, wall = lags(streamed, offline)
    assert src == [0.5, 1.0]  # "a" and "c" match; "x" is not aligned with "b"
    assert wall == [1.0, 1.5]
