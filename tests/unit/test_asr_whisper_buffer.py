"""WhisperRecognizer's buffer, prompt and trimming, over a fake model that 'hears' a script."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from speech.asr.whisper import WhisperConfig, WhisperRecognizer, make_whisper
from speech.types import AudioChunk

RATE = 16000


class FakeModel:
    """Transcribes the words of a global script (absolute times) that lie in the given audio."""

    def __init__(self, script: list[tuple[str, float, float]]) -> None:
        self.script = script
        self.calls: list[dict] = []
        self.offset = 0.0  # set by the test: source time of the buffer start

    def transcribe(self, audio, **kw):
        self.calls.append({"seconds": len(audio) / RATE, **kw})
        end = self.offset + len(audio) / RATE
        words = [SimpleNamespace(word=" " + t, start=s - self.offset, end=e - self.offset, probability=0.9)
                 for t, s, e in self.script if s >= self.offset - 1e-6 and e <= end + 1e-6]
        return iter([SimpleNamespace(words=words)]), SimpleNamespace(language="en")


def feed(rec: WhisperRecognizer, start: float, seconds: float) -> None:
    rec.feed(AudioChunk(np.zeros(int(seconds * RATE), np.float32), RATE, start=start))


SCRIPT = [(f"w{i}", i * 0.5, i * 0.5 + 0.4) for i in range(200)]


def test_committed_words_are_stripped_and_prompt_holds_only_words_outside_the_buffer():
    model = FakeModel(SCRIPT)
    rec = WhisperRecognizer(model, WhisperConfig(trim_s=100))
    feed(rec, 0.0, 2.0)
    hyp = rec.hypothesis()
    assert [w.text for w in hyp] == ["w0", "w1", "w2", "w3"]
    rec.commit(hyp[:2])
    feed(rec, 2.0, 1.0)
    assert [w.text for w in rec.hypothesis()] == ["w2", "w3", "w4", "w5"]
    assert model.calls[-1]["initial_prompt"] is None  # w0, w1 are still in the buffer


def test_trimming_bounds_the_buffer_and_moves_committed_words_into_the_prompt():
    model = FakeModel(SCRIPT)
    rec = WhisperRecognizer(model, WhisperConfig(trim_s=4.0))
    t = 0.0
    seconds = []
    for _ in range(60):  # 60 s of continuous speech, committing everything each second
        feed(rec, t, 1.0)
        t += 1.0
        model.offset = rec._start
        hyp = rec.hypothesis()
        rec.commit(hyp)
        seconds.append(model.calls[-1]["seconds"])
    assert max(seconds) <= 5.0  # the decoded audio never grows with the stream
    assert rec.prompt().split()[-1] == rec._committed[len(rec._committed) - rec._in_buffer - 1].text
    assert len(rec.prompt().split()) <= rec.config.prompt_words
    texts = [w.text for w in rec._committed]
    assert texts == [f"w{i}" for i in range(len(texts))]  # nothing lost or repeated across trims
    assert len(texts) >= 115


def test_a_redecoded_committed_word_with_a_later_timestamp_is_not_repeated():
    model = FakeModel([("hello", 0.0, 0.5), ("world", 0.6, 1.0)])
    rec = WhisperRecognizer(model, WhisperConfig())
    feed(rec, 0.0, 1.2)
    rec.commit(rec.hypothesis()[:1])
    model.script = [("hello", 0.45, 0.55), ("world", 0.6, 1.0)]  # re-decoded, shifted
    feed(rec, 1.2, 0.3)
    assert [w.text for w in rec.hypothesis()] == ["world"]


def test_a_real_repeat_after_a_committed_word_is_kept():
    model = FakeModel([("that", 0.0, 0.3), ("that", 0.3, 0.6), ("is", 0.7, 0.9)])
    rec = WhisperRecognizer(model, WhisperConfig())
    feed(rec, 0.0, 0.4)
    assert [w.text for w in rec.hypothesis()] == ["that"]
    rec.commit(rec.hypothesis())
    feed(rec, 0.4, 0.6)
    assert [w.text for w in rec.hypothesis()] == ["that", "is"]


def test_several_committed_words_re_decoded_later_are_dropped_once():
    model = FakeModel([("a", 0.0, 0.3), ("b", 0.3, 0.6), ("c", 0.6, 0.9)])
    rec = WhisperRecognizer(model, WhisperConfig())
    feed(rec, 0.0, 1.0)
    rec.commit(rec.hypothesis()[:2])  # "a b" committed, b ends at 0.6
    model.script = [("a", 0.55, 0.7), ("b", 0.7, 0.8), ("c", 0.8, 0.95), ("c", 0.95, 1.1)]  # shifted
    feed(rec, 1.0, 0.2)
    assert [w.text for w in rec.hypothesis()] == ["c", "c"]


def test_close_segment_returns_the_tail_and_empties_the_buffer():
    model = FakeModel(SCRIPT)
    rec = WhisperRecognizer(model, WhisperConfig())
    feed(rec, 0.0, 1.0)
    assert [w.text for w in rec.close_segment()] == ["w0", "w1"]
    assert rec.buffer_seconds == 0.0
    feed(rec, 5.0, 1.0)
    model.offset = 5.0
    assert rec.prompt() == "w0 w1"
    assert [w.text for w in rec.hypothesis()] == ["w10", "w11"]
    assert rec.hypothesis()[0].start == 5.0  # times on the source timeline


def test_a_segment_closes_with_a_decode_of_the_full_window_when_configured():
    from speech.asr import window

    class WindowModel(FakeModel):
        windows: list[bool] = []

        def transcribe(self, audio, **kw):
            self.windows.append(window._FULL_WINDOW.get())
            return super().transcribe(audio, **kw)

    for configured, full in ((True, True), (False, False)):
        model = WindowModel(SCRIPT)
        model.windows = []
        rec = WhisperRecognizer(model, WhisperConfig(encoder_pad_s=0.5, full_window_at_close=configured))
        feed(rec, 0.0, 1.0)
        assert [w.text for w in rec.hypothesis()] == ["w0", "w1"]
        # the buffer was just decoded: the close decodes it again only to see the whole window
        assert [w.text for w in rec.close_segment()] == ["w0", "w1"]
        assert model.windows == ([False, True] if full else [False])


class LoopingModel(FakeModel):
    """Hears the script, then loops into the padding: words timed after the audio's end."""

    def transcribe(self, audio, **kw):
        segments, info = super().transcribe(audio, **kw)
        words = list(segments)[0].words
        end = len(audio) / RATE
        loop = [SimpleNamespace(word=" again", start=end + 0.1 * i, end=end + 0.1 * i + 0.1, probability=0.9)
                for i in range(3)]
        return iter([SimpleNamespace(words=words + loop)]), info


def test_words_timed_after_the_audio_are_not_in_the_hypothesis():
    rec = WhisperRecognizer(LoopingModel([("hello", 0.0, 0.5), ("world", 0.6, 1.0)]), WhisperConfig())
    feed(rec, 0.0, 1.2)
    assert [w.text for w in rec.hypothesis()] == ["hello", "world"]


def test_a_short_buffer_may_generate_only_a_few_tokens():
    """A loop on a short buffer runs to the token limit: the limit follows the buffer's length,
    up to max_new_tokens; without new_tokens_per_s every decode may use max_new_tokens."""
    model = FakeModel(SCRIPT)
    rec = WhisperRecognizer(model, WhisperConfig(trim_s=100, new_tokens_per_s=8, new_tokens_floor=16))
    feed(rec, 0.0, 1.0)
    rec.hypothesis()
    feed(rec, 1.0, 29.0)
    rec.hypothesis()
    assert [c["max_new_tokens"] for c in model.calls] == [24, 96]
    plain = FakeModel(SCRIPT)
    rec = WhisperRecognizer(plain, WhisperConfig(trim_s=100))
    feed(rec, 0.0, 1.0)
    rec.hypothesis()
    assert plain.calls[0]["max_new_tokens"] == 96


def test_a_token_limit_out_of_range_is_refused_before_the_model_loads():
    for bad in ({"new_tokens_per_s": 0}, {"new_tokens_per_s": -2.0}, {"new_tokens_floor": 0}):
        with pytest.raises(ValueError, match="new_tokens"):
            make_whisper(WhisperConfig(**bad), registry=None)
