"""A voice slower than the talk: the relief voice and skipping (tts.pace, tts.stage), with fake
voices whose synthesis costs virtual compute."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest

from speech.eval.listener import heard_words
from speech.tts.pace import PaceConfig, PaceController
from speech.types import AudioChunk, Word

from .test_tts_pace import RATE, WORD_S, SlowVoice, run, talk

def test_a_piece_too_far_behind_is_skipped_whole_and_nothing_else_is():
    c = PaceController(PaceConfig(skip_lag_s=15.0))
    kept, d = c.decide([Word("a"), Word("b")], ready=30.0, listener_end=20.0, spoken=14.0)
    assert kept == [] and d.skipped == ("a", "b") and d.acted and c.words_skipped == 2
    kept, d = c.decide([Word("c")], ready=30.0, listener_end=20.0, spoken=16.0)  # 14 s: spoken
    assert [w.text for w in kept] == ["c"] and d.skipped == ()
    off = PaceController(PaceConfig(control=False))
    kept, d = off.decide([Word("a")], ready=60.0, listener_end=20.0, spoken=1.0)
    assert kept and d.skipped == ()  # control off: every piece at the voice's own rate


class ComputeBoundVoice(SlowVoice):
    """SlowVoice whose synthesis costs COMPUTE_S of (virtual) compute per word: slower than the talk."""

    def __init__(self, counter: list[float], compute_s: float) -> None:
        super().__init__()
        self.counter, self.compute_s = counter, compute_s

    def synthesize(self, text: str, speed: float = 1.0):
        self.counter[0] += self.compute_s * len(text.split())
        yield from super().synthesize(text, speed)


def test_a_voice_slower_than_the_talk_skips_pieces_instead_of_falling_behind(monkeypatch):
    """2 words/s, each costing 1 s to synthesise: without skipping the lag grows with the talk;
    with it the listener stays within the skip level, and the skipped words are logged."""
    import speech.clock
    import speech.tts.stage

    counter = [0.0]
    fake_time = type("T", (), {"perf_counter": staticmethod(lambda: counter[0])})
    monkeypatch.setattr(speech.clock, "time", fake_time)
    monkeypatch.setattr(speech.tts.stage, "time", fake_time)
    updates = talk(60, 2.0)

    def lags(skip):
        records, _, _ = asyncio.run(run(updates, PaceConfig(max_speed=1.6, skip_lag_s=skip),
                                        ComputeBoundVoice(counter, 1.0)))
        words = heard_words([r for r in records if r["kind"] == "audio"])
        return [w.lag for w in words], [r for r in records if r["kind"] == "tts_skip"], records

    unbounded, none_skipped, _ = lags(None)
    assert max(unbounded) > 40 and not none_skipped
    bounded, skips, records = lags(15.0)
    assert max(bounded) < 15.0 + 4 * 1.0 + 2.5  # the skip level, one piece's compute and its speech
    assert skips and all(s["reason"] == "behind" and s["lag_s"] > 15.0 for s in skips)
    stats = next(r for r in records if r["kind"] == "stats")
    assert stats["words_skipped"] == sum(s["words"] for s in skips) and 0 < stats["words_skipped"] < 120


def test_the_relief_voice_takes_over_only_when_the_synthesiser_holds_the_piece_back():
    c = PaceController(PaceConfig(relief_lag_s=10.0, condense_lag_s=6.0, skip_lag_s=15.0))
    words = [Word("a"), Word("b")]
    _, d = c.decide(words, ready=31.0, listener_end=20.0, spoken=20.0, waited=0.2, relief=True)
    assert not d.relief  # 11 s late, but not for want of the voice: the recogniser or translator was late
    _, d = c.decide(words, ready=31.0, listener_end=20.0, spoken=20.0, waited=3.0, relief=False)
    assert not d.relief  # no relief voice to take over
    _, d = c.decide(words, ready=31.0, listener_end=20.0, spoken=20.0, waited=3.0, relief=True)
    assert d.relief and d.acted
    _, d = c.decide(words, ready=38.0, listener_end=30.0, spoken=30.5, waited=0.0, relief=True)
    assert d.relief  # 7.5 s: still above the target lag, the relief voice goes on
    _, d = c.decide(words, ready=38.0, listener_end=30.0, spoken=32.5, waited=0.0, relief=True)
    assert d.relief  # 5.5 s: under the condensation level, still above the target lag (3 s)
    _, d = c.decide(words, ready=38.0, listener_end=30.0, spoken=35.5, waited=0.0, relief=True)
    assert not d.relief and not c.relieving  # 2.5 s: the main voice again
    _, d = c.decide(words, ready=50.0, listener_end=20.0, spoken=30.0, waited=9.0, relief=True)
    assert d.skipped and not d.relief  # above the skip level the piece is skipped, relief or not


def test_a_voice_relieved_once_is_relieved_sooner_and_until_the_level_asked():
    words = [Word("a"), Word("b")]
    fresh = PaceController(PaceConfig(relief_lag_s=10.0, condense_lag_s=6.0, skip_lag_s=15.0))
    _, d = fresh.decide(words, ready=37.0, listener_end=30.0, spoken=30.0, waited=3.0, relief=True)
    assert not d.relief  # 7 s behind for want of the voice, but it has not needed relief yet
    c = PaceController(PaceConfig(relief_lag_s=10.0, condense_lag_s=6.0, skip_lag_s=15.0, relief_until_lag_s=4.0))
    _, d = c.decide(words, ready=31.0, listener_end=20.0, spoken=20.0, waited=3.0, relief=True)
    assert d.relief  # 11 s: takes over
    _, d = c.decide(words, ready=35.0, listener_end=30.0, spoken=30.5, waited=0.0, relief=True)
    assert d.relief  # 4.5 s: under the condensation level, still above relief_until_lag_s
    _, d = c.decide(words, ready=35.0, listener_end=30.0, spoken=31.5, waited=0.0, relief=True)
    assert not d.relief  # 3.5 s: the main voice again
    _, d = c.decide(words, ready=37.0, listener_end=30.0, spoken=30.0, waited=0.5, relief=True)
    assert not d.relief  # 7 s, but the voice did not hold the piece back
    _, d = c.decide(words, ready=37.0, listener_end=30.0, spoken=30.0, waited=3.0, relief=True)
    assert d.relief  # 7 s for want of the voice, which needed relief before: over the condensation level is enough


def test_a_voice_too_slow_for_any_talk_is_relieved_from_the_condensation_level_before_any_relief():
    words = [Word("a"), Word("b")]

    def controller(relief_rtf, *compute_s):
        c = PaceController(PaceConfig(relief_lag_s=10.0, condense_lag_s=6.0, skip_lag_s=15.0, relief_rtf=relief_rtf))
        c.observe("a b", duration_s=1.0, speed=1.0, compute_s=30.0)  # the first piece: a warm-up, not counted
        for seconds in compute_s:
            c.observe("a b", duration_s=1.0, speed=1.0, compute_s=seconds)  # a second of speech each
        return c

    def relieved_at_7_s(c):
        return c.decide(words, ready=37.0, listener_end=30.0, spoken=30.0, waited=3.0, relief=True)[1].relief

    heavy = controller(2.0, 2.5, 2.5)  # 5 s of synthesis for 2 s of speech
    assert heavy.voice_rtf == pytest.approx(2.5) and heavy.overloaded
    assert relieved_at_7_s(heavy)  # 7 s behind for want of a voice too slow for a talk: no wait for 10 s
    _, d = heavy.decide(words, ready=32.0, listener_end=30.0, spoken=31.0, waited=0.0, relief=True)
    assert d.relief  # 1 s behind: a voice too slow for a talk is not handed back
    assert not relieved_at_7_s(controller(2.0, 1.8, 1.8))  # slow, but a talk with pauses gives it time
    short = controller(2.0, 1.9)  # too slow, but judged on less than RTF_COMPUTE_S of synthesis
    assert short.voice_rtf is None and not relieved_at_7_s(short)
    assert not relieved_at_7_s(controller(None, 2.5, 2.5))  # not judged
    with pytest.raises(ValueError, match="relief rtf"):
        PaceConfig(relief_rtf=0.0)


def test_a_voice_too_slow_for_any_talk_is_relieved_sooner_and_for_good(monkeypatch):
    """A voice that needs 1.25 s of compute per word (0.3-0.5 s of speech): judged by its real-time
    factor, the relief voice takes over between the condensation and relief levels, logs the factor
    it acted on and speaks to the end; judged by its lag alone, from 10 s until under the target."""
    import speech.clock
    import speech.tts.stage

    counter = [0.0]
    fake_time = type("T", (), {"perf_counter": staticmethod(lambda: counter[0])})
    monkeypatch.setattr(speech.clock, "time", fake_time)
    monkeypatch.setattr(speech.tts.stage, "time", fake_time)

    def switches(relief_rtf):
        records, _, _ = asyncio.run(run(talk(60, 2.0), PaceConfig(max_speed=1.6, relief_rtf=relief_rtf),
                                        ComputeBoundVoice(counter, 1.25), relief=CheapVoice()))
        switched = [r for r in records if r["kind"] == "tts_voice"]
        lags = [w.lag for w in heard_words([r for r in records if r["kind"] == "audio"])]
        stats = next(r for r in records if r["kind"] == "stats")
        return switched, max(lags), stats

    judged, judged_worst, stats = switches(2.0)
    assert judged[0]["voice"] == "relief" and 6.0 < judged[0]["lag_s"] < 10.0 and judged[0]["voice_rtf"] > 2.0
    assert judged[0]["relief_voice"] == "cheap"  # which voice speaks from here, for the user's display
    assert 2.5 <= stats["voice_rtf"] <= 4.0  # 1.25 s per word of 0.5 s at speed 1, 0.3125 s at 1.6
    assert len(judged) == 1  # not handed back: each piece would put the listener further behind
    waited, waited_worst, _ = switches(None)
    assert waited[0]["voice"] == "relief" and waited[0]["lag_s"] > 10.0
    assert [r["voice"] for r in waited][:2] == ["relief", "main"]  # handed back under the target lag
    assert judged_worst < waited_worst


def test_the_user_is_told_how_far_behind_the_voice_fell_and_how_slow_it_was():
    from speech.tts.stage import fell_behind

    assert fell_behind(0, 0, 4.6) == ""  # every word in the voice's own time
    line = fell_behind(436, 0, 4.63)
    assert "436 words spoken by the relief voice" in line and "4.6 s to synthesise each second" in line
    assert "synthesise" not in fell_behind(0, 3) and "3 not spoken" in fell_behind(0, 3)
    assert "try a lighter --voice" in line and "speech doctor --speed" in line
    named = fell_behind(18, 0, 2.7, relief="pico")  # the voice that spoke for it is the one to try
    assert "18 words spoken by the relief voice (pico)" in named and "try --voice pico" in named


class CheapVoice(SlowVoice):
    """SlowVoice at another sample rate, synthesising at no compute: a relief voice."""

    sample_rate = 2 * RATE
    max_speed = 1.25

    def synthesize(self, text: str, speed: float = 1.0):
        self.speeds.append(speed)
        t = np.arange(int(self.sample_rate * WORD_S * len(text.split()) / speed)) / self.sample_rate
        yield AudioChunk((0.2 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), self.sample_rate, text=text)


def test_a_relief_voice_keeps_every_word_heard_when_the_main_voice_is_slower_than_the_talk(monkeypatch):
    """The talk of the skipping test, with a relief voice: no piece is skipped, the listener stays
    near the relief level, the main voice takes over again, and every chunk has the main rate."""
    import speech.clock
    import speech.tts.stage

    counter = [0.0]
    fake_time = type("T", (), {"perf_counter": staticmethod(lambda: counter[0])})
    monkeypatch.setattr(speech.clock, "time", fake_time)
    monkeypatch.setattr(speech.tts.stage, "time", fake_time)
    relief = CheapVoice()
    # not judged by its real-time factor (2-3.2), which would keep the relief voice to the end (below)
    records, chunks, _ = asyncio.run(run(talk(60, 2.0), PaceConfig(max_speed=1.6, relief_rtf=None),
                                         ComputeBoundVoice(counter, 1.0), relief=relief))
    audio = [r for r in records if r["kind"] == "audio"]
    lags = [w.lag for w in heard_words(audio)]
    assert max(lags) < 10.0 + 4 * 1.0 + 2.5  # the relief level, one piece's compute and its speech
    assert not [r for r in records if r["kind"] == "tts_skip"]
    stats = next(r for r in records if r["kind"] == "stats")
    assert stats["words_skipped"] == 0 and sum(r["words"] for r in audio) + stats["words_dropped"] == 120
    spoken_by = [r.get("voice", "main") for r in audio]
    assert "relief" in spoken_by and spoken_by.count("relief") == stats["relief_chunks"]
    assert stats["words_relief"] == sum(r["words"] for r in audio if r.get("voice") == "relief")
    assert stats["relief_voice"] == "cheap"  # named to the user (fell_behind)
    switches = [r["voice"] for r in records if r["kind"] == "tts_voice"]
    assert switches[:2] == ["relief", "main"]  # it hands back once the lag is under the condensation level
    assert all(r["speed"] <= relief.max_speed for r in audio if r.get("voice") == "relief")
    assert {c.sample_rate for c in chunks} == {RATE}


def test_the_relief_voice_is_pico_else_espeak_none_when_asked_and_a_named_one_must_load(monkeypatch):
    import speech.tts.backends as backends
    from speech.errors import UserError
    from speech.options import TtsOptions
    from speech.tts.stage import relief_voice

    made = []
    installed = {"pico", "espeak", "kokoro"}

    def create(registry, language, voice="default", **options):
        if voice.partition(":")[0] not in installed:
            raise UserError(f"voice {voice!r} is not installed")
        made.append((language, voice))
        return f"{voice}:{language}"

    monkeypatch.setattr(backends, "create_synthesizer", create)

    def relief(voice="kokoro", named="auto", **pace):
        config = SimpleNamespace(target="pt", voice=voice, tts_options=TtsOptions(relief_voice=named))
        synthesizer, name = relief_voice(None, config, PaceConfig(**pace))
        assert (synthesizer is None) == (name == "")  # its --voice value, named to the user
        return synthesizer if synthesizer is None else (synthesizer, name)

    assert TtsOptions().relief_voice == "auto"
    assert relief() == ("pico:pt", "pico") and made == [("pt", "pico")]  # the default: SVOX Pico first
    assert relief(voice="pico") == ("espeak:pt", "espeak")  # the main voice is Pico already: eSpeak NG
    config = SimpleNamespace(target="en", voice="default", tts_options=TtsOptions())
    assert relief_voice(None, config, PaceConfig()) == ("espeak:en", "espeak")  # English: eSpeak NG's is heard better
    installed.discard("pico")
    assert relief() == ("espeak:pt", "espeak")  # Pico not installed: eSpeak NG
    assert relief(named="none") is None and relief(named="") is None
    assert relief(voice="espeak:pt-br") is None  # the main voice is eSpeak NG, and Pico is missing
    assert relief(control=False) is None and relief(relief_lag_s=None) is None
    assert relief(named="espeak") == ("espeak:pt", "espeak")
    assert relief(voice="espeak", named="espeak") is None  # named, but the main voice itself
    with pytest.raises(UserError, match="pico"):
        relief(named="pico")  # named by the user: it must load

    def not_installed(*a, **k):
        raise RuntimeError("synthesizer 'espeak' needs the Python package 'espeakng_loader'")

    monkeypatch.setattr(backends, "create_synthesizer", not_installed)
    assert relief() is None  # the default ones are optional: pieces too far behind are skipped instead
