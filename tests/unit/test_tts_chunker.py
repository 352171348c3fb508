"""The chunker speaks committed words at natural breaks, never tentative ones."""

from __future__ import annotations

import pytest

from speech.tts.chunker import ChunkerConfig, TextChunker
from speech.tts.text import clean_text
from speech.types import TextUpdate, Word


def upd(committed: str = "", tentative: str = "", t: float = 0.0, final: bool = False, eos: bool = False) -> TextUpdate:
    return TextUpdate(
        committed=tuple(Word(w) for w in committed.split()),
        tentative=tuple(Word(w) for w in tentative.split()),
        final=final, wall_time=t, source_time=t, end_of_stream=eos,
    )


def texts(pieces) -> list[str]:
    return [p.text for p in pieces]


def test_sentence_end_speaks_everything_waiting():
    c = TextChunker(ChunkerConfig(min_words=3, max_words=10, timeout_s=5))
    assert c.push(upd("Hola", t=0.1)) == []
    pieces = c.push(upd("mundo.", t=0.2))
    assert texts(pieces) == ["Hola mundo."]
    assert pieces[0].reason == "sentence"
    assert pieces[0].commit_time == 0.2 and pieces[0].first_commit_time == 0.1


def test_tentative_words_are_never_spoken():
    c = TextChunker(ChunkerConfig(min_words=1, max_words=2, timeout_s=0.5))
    assert c.push(upd("", "uno dos tres cuatro.", t=0.1)) == []
    assert c.push(upd("", "", t=5.0)) == []  # time passes: still nothing committed
    assert c.flush(6.0) == []
    assert texts(c.push(upd("uno", "dos tres.", t=6.1, final=True))) == ["uno"]


def test_clause_boundary_needs_min_words():
    c = TextChunker(ChunkerConfig(min_words=3, max_words=10, timeout_s=5))
    assert c.push(upd("Sí,", t=0)) == []  # one word at a comma: too short, keep waiting
    assert texts(c.push(upd("pero no ahora, después", t=0.1))) == ["Sí, pero no ahora,"]
    assert c.waiting == 1


def test_max_words_cuts_long_runs_but_leaves_no_tiny_tail():
    c = TextChunker(ChunkerConfig(min_words=3, max_words=4, timeout_s=5))
    assert texts(c.push(upd("a b c d e f g h i", t=0))) == ["a b c d", "e f g h"]
    c2 = TextChunker(ChunkerConfig(min_words=3, max_words=4, timeout_s=5))
    # a cut after "d" would leave "e." alone: the sentence is spoken whole
    assert texts(c2.push(upd("a b c d e.", t=0))) == ["a b c d e."]


def test_timeout_speaks_what_waits_at_the_deadline():
    c = TextChunker(ChunkerConfig(min_words=3, max_words=10, timeout_s=0.5, short_timeout_s=0))
    c.push(upd("el gato", t=1.0))
    assert c.deadline() == pytest.approx(1.5)
    assert c.expire(1.4) == []
    pieces = c.push(upd("come", t=2.0))  # arrives after the deadline: the old words go first
    assert texts(pieces) == ["el gato"]
    assert pieces[0].reason == "timeout" and pieces[0].ready_time == pytest.approx(1.5)
    assert c.waiting == 1


def test_a_word_or_two_wait_longer_than_a_clause():
    c = TextChunker(ChunkerConfig(min_words=3, max_words=10, timeout_s=0.8, short_timeout_s=1.2, cadence=False))
    c.push(upd("el gato", t=1.0))
    assert c.deadline() == pytest.approx(2.2)  # fewer than min_words: the longer time-out
    assert c.expire(1.9) == []
    assert c.push(upd("negro", t=2.0)) == []  # the third word came in time: no lone pair spoken
    assert c.deadline() == pytest.approx(2.8)  # three wait now: the usual time-out
    assert texts(c.expire(2.8)) == ["el gato negro"]
    with pytest.raises(ValueError):
        ChunkerConfig(short_timeout_s=-1)


def test_no_time_out_is_waited_that_the_next_update_cannot_beat():
    """Updates a second apart (whisper-base's step): 0.8 s after a commit nothing new has come, so
    three words wait for nothing and are spoken at the commit; one word still waits for company."""
    c = TextChunker(ChunkerConfig(min_words=3, max_words=10, timeout_s=0.8, short_timeout_s=1.2))
    for t in (1.0, 2.0, 3.0):
        c.push(upd("", "x", t=t))
    assert c.cadence() == pytest.approx(1.0)
    c.push(upd("el gato negro", t=4.0))
    assert c.deadline() == pytest.approx(4.0)
    pieces = c.push(upd("", "y", t=5.0))
    assert texts(pieces) == ["el gato negro"] and pieces[0].ready_time == pytest.approx(4.0)
    c.push(upd("come", t=6.0))
    assert c.deadline() == pytest.approx(7.2)  # 1.2 s: the next update (7.0) may bring company


def test_a_lone_word_waits_for_company_however_slow_the_updates():
    """Updates 1.5 s apart (a recogniser behind real time): a lone word is still given the short
    time-out, since the next update is not always as late as the median gap says."""
    c = TextChunker(ChunkerConfig(min_words=3, max_words=10, timeout_s=0.8, short_timeout_s=1.2))
    for t in (1.5, 3.0, 4.5):
        c.push(upd("", "x", t=t))
    c.push(upd("Ustedes", t=6.0))
    assert c.deadline() == pytest.approx(7.2)
    assert c.push(upd("piensan sobre", t=7.0)) == []  # company came in time
    assert c.deadline() == pytest.approx(7.0)  # three words: spoken at once


def test_words_committed_faster_than_the_time_out_wait_for_more():
    """Updates 0.3 s apart (a translator committing word by word): the time-out is waited, and the
    words that come in time join the piece, as without the cadence rule."""
    c = TextChunker(ChunkerConfig(min_words=3, max_words=10, timeout_s=0.8, short_timeout_s=1.2))
    for i, word in enumerate("el gato negro come".split()):
        assert c.push(upd(word, t=0.3 * (i + 1))) == []
    assert c.deadline() == pytest.approx(1.2 + 0.8)
    assert texts(c.expire(2.0)) == ["el gato negro come"]
    assert c.cadence() == pytest.approx(0.3)


def test_final_and_flush():
    c = TextChunker()
    assert texts(c.push(upd("sin punto", t=0, final=True))) == ["sin punto"]
    c.push(upd("resto", t=1))
    assert texts(c.flush(2.0)) == ["resto"]
    assert c.flush(3.0) == []


def test_bad_config_is_refused():
    with pytest.raises(ValueError):
        ChunkerConfig(min_words=5, max_words=2)
    with pytest.raises(ValueError):
        ChunkerConfig(timeout_s=0)


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("Hola 😀 mundo", "Hola mundo"),
        ("<b>bold</b> text", "bold text"),
        ("fish &amp; chips", "fish & chips"),
        ("🎉🎉", ""),
        ("<br/>", ""),
        ("a\x00b\tc", "ab c"),
    ],
)
def test_clean_text_keeps_only_speakable_characters(raw, clean):
    assert clean_text(raw) == clean


def test_first_piece_of_a_burst_is_short_the_rest_uses_max_words():
    c = TextChunker(ChunkerConfig(min_words=2, max_words=6, first_words=3, timeout_s=5))
    pieces = c.push(upd("one two three four five six seven eight nine ten", t=0))
    assert texts(pieces) == ["one two three", "four five six seven eight nine"]
    assert texts(c.flush(1.0)) == ["ten"]


def test_first_words_does_not_apply_to_words_committed_one_at_a_time():
    c = TextChunker(ChunkerConfig(min_words=2, max_words=6, first_words=3, timeout_s=5))
    pieces = [p for i, w in enumerate("a b c d e f g".split()) for p in c.push(upd(w, t=i * 0.1))]
    assert texts(pieces) == ["a b c d e f"]


def test_lead_words_split_a_piece_into_a_short_lead_and_the_rest_with_the_same_commit():
    c = TextChunker(ChunkerConfig(min_words=2, max_words=8, lead_words=3, timeout_s=5))
    pieces = [p for i, w in enumerate("a b c d e f.".split()) for p in c.push(upd(w, t=i * 0.1))]
    assert texts(pieces) == ["a b c", "d e f."]
    assert pieces[0].commit_time == pieces[1].commit_time == 0.5  # the commit that made it speakable
    assert pieces[0].first_commit_time == 0.0 and pieces[1].first_commit_time == pytest.approx(0.3)
    # a clause boundary inside the lead cuts there; too short a rest: no split
    c = TextChunker(ChunkerConfig(min_words=3, max_words=8, lead_words=3, timeout_s=5))
    assert texts(c.push(upd("we said, then we did it.", t=0))) == ["we said,", "then we did it."]
    c = TextChunker(ChunkerConfig(min_words=2, max_words=8, lead_words=3, timeout_s=5))
    assert texts(c.push(upd("one two three four.", t=0))) == ["one two three four."]
