"""The ASR stage's plumbing with a scripted recogniser (no model)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from speech.asr.policies import LocalAgreement, StableCommit
from speech.asr.stage import AsrStage
from speech.channel import Channel
from speech.clock import SimulatedClock
from speech.events import EventLog
from speech.session import Session
from speech.types import AudioChunk, Transcript, Word

RATE = 16000


class ScriptedRecognizer:
    """Each decode reveals the words of `script` that end before the audio end."""

    sample_rate = RATE
    language = "en"

    def __init__(self, script: list[tuple[str, float]]) -> None:
        self.script = [Word(t, e - 0.2, e, 0.9) for t, e in script]
        self.end = 0.0
        self.committed = 0
        self.decodes = 0
        self.segments_closed = 0

    @property
    def buffer_end(self) -> float:
        return self.end

    def feed(self, chunk: AudioChunk) -> None:
        self.end = chunk.end

    def hypothesis(self) -> list[Word]:
        self.decodes += 1
        return [w for w in self.script if w.end <= self.end][self.committed :]

    def commit(self, words: list[Word]) -> None:
        self.committed += len(words)

    def close_segment(self) -> list[Word]:
        self.segments_closed += 1
        words = [w for w in self.script if w.end <= self.end][self.committed :]
        self.committed += len(words)
        return words

    def finish(self) -> list[Word]:
        return self.close_segment()

    def reset(self) -> None:
        self.committed = 0


def run_stage(stage: AsrStage, seconds: float, chunk_s: float = 0.1) -> tuple[list, EventLog]:
    clock = SimulatedClock()
    got = []

    async def source(outbox: Channel[AudioChunk]) -> None:
        n = int(round(seconds / chunk_s))
        for i in range(n):
            chunk = AudioChunk(np.zeros(int(RATE * chunk_s), np.float32), RATE, start=i * chunk_s, seq=i)
            await outbox.put(AudioChunk(chunk.samples, RATE, chunk.start, i, wall_time=chunk.end))

    async def sink(inbox: Channel) -> None:
        async for u in inbox:
            got.append(u)

    asyncio.run(Session([stage], source, sink, clock=clock, log=stage.log).run())
    return got, stage.log


SCRIPT = [("one", 0.5), ("two", 1.0), ("three", 1.5), ("four", 2.0), ("five", 2.9)]


def test_everything_heard_is_committed_once_and_the_stream_ends_final():
    log = EventLog()
    stage = AsrStage(ScriptedRecognizer(SCRIPT), LocalAgreement(2), SimulatedClock(), log, update_s=0.5)
    updates, _ = run_stage(stage, 3.0)
    t = Transcript()
    for u in updates:
        t.apply(u)
    assert t.text == "one two three four five"
    assert updates[-1].end_of_stream and updates[-1].final and updates[-1].tentative == ()
    assert sum(u.end_of_stream for u in updates) == 1
    # Never retracted: each committed word is a new word, in order.
    assert [w.text for u in updates for w in u.committed] == [w for w, _ in SCRIPT]


def test_updates_only_when_something_changed_and_times_are_monotonic():
    log = EventLog()
    stage = AsrStage(ScriptedRecognizer(SCRIPT), LocalAgreement(2), SimulatedClock(), log, update_s=0.1)
    updates, _ = run_stage(stage, 3.0)
    for prev, cur in zip(updates, updates[1:]):
        assert cur.committed or cur.tentative != prev.tentative or cur.final
        assert cur.source_time >= prev.source_time and cur.wall_time >= prev.wall_time
    assert all(u.wall_time >= u.source_time for u in updates)  # nothing before its audio arrived


def test_stable_commits_earlier_than_local_agreement():
    def lag(policy):
        stage = AsrStage(ScriptedRecognizer(SCRIPT), policy, SimulatedClock(), EventLog(), update_s=1.0)
        updates, _ = run_stage(stage, 4.0)
        ends = dict(SCRIPT)
        return sum(u.source_time - ends[w.text] for u in updates for w in u.committed)

    assert lag(StableCommit(margin_s=0.3)) < lag(LocalAgreement(2))


def test_log_records_inputs_updates_and_stats():
    log = EventLog()
    rec = ScriptedRecognizer(SCRIPT)
    stage = AsrStage(rec, LocalAgreement(2), SimulatedClock(), log, update_s=1.0)
    updates, _ = run_stage(stage, 3.0)
    kinds = [r["kind"] for r in log.records]
    assert kinds.count("input") == 30
    assert kinds.count("update") == len(updates)
    stats = [r for r in log.records if r["kind"] == "stats"]
    assert stats and stats[0]["stage"] == "asr" and stats[0]["decodes"] == rec.decodes == 3
    assert stats[0]["updates"] == len(updates)


def test_adaptive_step_postpones_decodes_while_behind():
    stage = AsrStage(ScriptedRecognizer(SCRIPT), LocalAgreement(2), SimulatedClock(), EventLog(),
                     update_s=0.5, max_behind_s=0.3, max_update_factor=3.0)
    stage.recognizer.end = 1.0
    assert stage._due(behind=0.0)
    assert not stage._due(behind=1.0)  # behind: wait for more audio
    stage.recognizer.end = 1.5
    assert stage._due(behind=1.0)  # 1.5 s of new audio >= 3 x 0.5 s: decode anyway


class FakeVad:
    """Speech from 1.0 s to 2.0 s (by chunk start), as StreamingVad reports it."""

    class config:
        pad_s = 0.3
        min_speech_s = 0.1

    def __init__(self) -> None:
        self.speaking = False

    def finish(self):
        return None

    def process(self, samples, start):
        from speech.asr.vad import VadEvent

        if 1.0 <= start < 2.0 and not self.speaking:
            self.speaking = True
            return [VadEvent("speech_start", start - 0.3)]
        if start >= 2.0 and self.speaking:
            self.speaking = False
            return [VadEvent("speech_end", 2.0)]
        return []


def test_vad_gates_silence_and_closes_the_segment_final():
    rec = ScriptedRecognizer([("hello", 1.5), ("there", 1.9)])
    fed = []
    original_feed = rec.feed
    rec.feed = lambda c: (fed.append(c.start), original_feed(c))  # type: ignore[method-assign]
    stage = AsrStage(rec, LocalAgreement(2), SimulatedClock(), EventLog(), vad=FakeVad(), update_s=0.5)
    updates, _ = run_stage(stage, 4.0)
    assert min(fed) >= 0.6 and max(fed) < 2.1  # pre-roll from 0.7 s, nothing after the pause
    closing = [u for u in updates if u.final and not u.end_of_stream]
    assert len(closing) == 1 and abs(closing[0].source_time - 2.1) < 1e-6
    assert " ".join(w.text for u in updates for w in u.committed) == "hello there"
    assert rec.segments_closed == 2  # the pause, then end of stream


def test_no_commit_during_the_warm_up_of_a_segment():
    rec = ScriptedRecognizer(SCRIPT)
    rec.buffer_seconds = 0.0  # type: ignore[attr-defined]
    original_feed = rec.feed

    def feed(chunk):
        original_feed(chunk)
        rec.buffer_seconds = chunk.end  # type: ignore[attr-defined]

    rec.feed = feed  # type: ignore[method-assign]
    stage = AsrStage(rec, StableCommit(margin_s=0.0), SimulatedClock(), EventLog(), update_s=0.5, min_commit_s=1.5)
    updates, _ = run_stage(stage, 3.0)
    first = next(u for u in updates if u.committed)
    assert first.source_time >= 1.5  # "one" (ends 0.5 s) was only shown as tentative before
    assert any(u.tentative and u.source_time < 1.5 for u in updates)
    assert " ".join(w.text for u in updates for w in u.committed) == "one two three four five"


class LevelSilero:
    """Silero stand-in: a window is speech when it is loud."""

    def run(self, _outputs, feeds):
        score = 0.9 if np.abs(feeds["input"][0, -512:]).mean() > 0.1 else 0.05
        return np.array([[score]], np.float32), feeds["h"], feeds["c"]


def test_speech_starting_too_close_to_the_end_of_stream_is_still_recognised():
    from speech.asr.vad import StreamingVad, VadConfig

    rec = ScriptedRecognizer([("hi", 2.0)])
    stage = AsrStage(rec, LocalAgreement(2), SimulatedClock(), EventLog(),
                     vad=StreamingVad(LevelSilero(), VadConfig()), update_s=0.5)
    for i in range(20):  # 1.95 s of silence, then 50 ms of speech (shorter than min_speech_s)
        samples = np.zeros(1600, np.float32)
        if i == 19:
            samples[800:] = 0.5
        assert stage.process(AudioChunk(samples, RATE, start=i * 0.1, seq=i)) == []
    final = stage.finish(2.0)
    assert [w.text for w in final.committed] == ["hi"] and final.end_of_stream


def test_silence_at_the_end_of_stream_feeds_nothing():
    from speech.asr.vad import StreamingVad, VadConfig

    rec = ScriptedRecognizer([("hi", 2.0)])
    stage = AsrStage(rec, LocalAgreement(2), SimulatedClock(), EventLog(),
                     vad=StreamingVad(LevelSilero(), VadConfig()), update_s=0.5)
    for i in range(20):
        stage.process(AudioChunk(np.zeros(1600, np.float32), RATE, start=i * 0.1, seq=i))
    assert stage.finish(2.0).committed == () and rec.end == 0.0


class BufferedRecognizer(ScriptedRecognizer):
    """A scripted recogniser whose buffer starts at the segment's first chunk (as Whisper's)."""

    def __init__(self, script: list[tuple[str, float]]) -> None:
        super().__init__(script)
        self.start: float | None = None

    def feed(self, chunk: AudioChunk) -> None:
        if self.start is None:
            self.start = chunk.start
        super().feed(chunk)

    @property
    def buffer_seconds(self) -> float:
        return 0.0 if self.start is None else self.end - self.start

    def close_segment(self) -> list[Word]:
        self.start = None
        return super().close_segment()


class SpeechFrom:
    """VAD stand-in: speech from `start` on (pre-roll 0.3 s)."""

    class config:
        pad_s = 0.3
        min_speech_s = 0.1

    def __init__(self, start: float) -> None:
        self.start, self.speaking = start, False

    def finish(self):
        return None

    def process(self, samples, start):
        from speech.asr.vad import VadEvent

        if start >= self.start and not self.speaking:
            self.speaking = True
            return [VadEvent("speech_start", start - 0.3)]
        return []


def decode_times(stage: AsrStage, seconds: float) -> list[float]:
    times = []
    hypothesis = stage.recognizer.hypothesis

    def counted():
        times.append(round(stage.recognizer.buffer_end, 2))
        return hypothesis()

    stage.recognizer.hypothesis = counted  # type: ignore[method-assign]
    run_stage(stage, seconds)
    return times


def test_segment_steps_count_the_decode_step_from_the_start_of_the_speech():
    script = [("one", 1.5), ("two", 2.0)]

    def stage(segment_steps):
        return AsrStage(BufferedRecognizer(script), LocalAgreement(2), SimulatedClock(), EventLog(),
                        vad=SpeechFrom(0.75), update_s=1.0, segment_steps=segment_steps)

    # speech found in the chunk from 0.8 s: the buffer starts 0.3 s before it, with the pre-roll
    assert decode_times(stage(True), 3.0)[:2] == [1.5, 2.5]
    assert decode_times(stage(False), 3.0)[:2] == [1.0, 2.0]  # counted from the stream's start


def test_first_update_steps_until_the_segment_has_committed_its_first_update_words():
    script = [("a", 1.1), ("b", 1.3), ("c", 2.2), ("d", 2.6), ("e", 3.4), ("f", 4.4)]
    rec = BufferedRecognizer(script)
    stage = AsrStage(rec, StableCommit(margin_s=0.2, agree_margin_s=0.0), SimulatedClock(), EventLog(),
                     vad=SpeechFrom(0.0), update_s=1.0, first_update_s=0.5, first_update_words=3,
                     segment_steps=True)
    times = decode_times(stage, 5.0)
    # the first decode after a whole step, then half steps until three words are committed
    assert times == [1.0, 1.5, 2.0, 2.5, 3.5, 4.5]


def test_a_warm_up_decode_counts_for_agreement_but_commits_nothing():
    script = [("one", 0.6), ("two", 1.4), ("three", 1.9)]

    def first_commit(warm_up_agrees):
        # probability below min_probability: only agreement commits
        rec = ScriptedRecognizer(script)
        rec.script = [Word(w.text, w.start, w.end, 0.3) for w in rec.script]
        rec.buffer_seconds = 0.0  # type: ignore[attr-defined]
        feed = rec.feed
        rec.feed = lambda c: (feed(c), setattr(rec, "buffer_seconds", c.end))  # type: ignore[method-assign]
        stage = AsrStage(rec, StableCommit(margin_s=0.0, agree_margin_s=0.2), SimulatedClock(), EventLog(),
                         update_s=1.0, min_commit_s=1.5, warm_up_agrees=warm_up_agrees)
        updates, _ = run_stage(stage, 4.0)
        assert not any(u.committed for u in updates if u.source_time < 1.5)
        return next(u for u in updates if u.committed)

    assert first_commit(True).source_time == pytest.approx(2.0)  # agrees with the decode at 1.0 s
    assert first_commit(False).source_time == pytest.approx(3.0)  # needs two decodes after the warm-up


def test_the_segment_start_is_on_where_it_was_measured_to_pay_unless_the_options_say():
    from speech.asr.stage import AsrOptions, segment_start

    on = segment_start(AsrOptions(), "en")
    assert on == {"segment_steps": True, "warm_up_agrees": True, "first_update_s": 0.5, "first_update_words": 3}
    assert segment_start(AsrOptions(), "es") == {} and segment_start(AsrOptions(), "auto") == {}
    assert segment_start(AsrOptions(segment_start=True, first_update_s=0.3), "es")["first_update_s"] == 0.3
    assert segment_start(AsrOptions(segment_start=False), "en") == {}
