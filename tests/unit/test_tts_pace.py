"""The listener timeline and the duration control, with a fake synthesiser whose speech runs
longer than its source: backlog grows -> speed rises -> backlog bounded; idle listener -> no change."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from speech.channel import Channel
from speech.clock import SimulatedClock
from speech.eval.listener import (LAG_PARTS, START_PARTS, heard_words, lag_parts, lag_per_minute, lag_slope,
                                  listener_latency, play_starts, start_parts)
from speech.events import EventLog
from speech.tts.chunker import ChunkerConfig
from speech.tts.listener import ListenerSchedule, timed_offsets, word_offsets
from speech.tts.condense import condense
from speech.tts.pace import PaceConfig, PaceController
from speech.tts.pauses import after_cuts, pause_cuts, shorten_pauses
from speech.tts.stage import TtsStage
from speech.types import AudioChunk, TextUpdate, Word

RATE = 16000
WORD_S = 0.5  # the fake voice says a word in 0.5 s at speed 1


class SlowVoice:
    """A voice that says WORD_S seconds a word at speed 1, and takes a speed like eSpeak and Piper."""

    sample_rate = RATE
    supports_speed = True

    def __init__(self) -> None:
        self.speeds: list[float] = []

    def synthesize(self, text: str, speed: float = 1.0):
        self.speeds.append(speed)
        n = len(text.split())
        t = np.arange(int(RATE * WORD_S * n / speed)) / RATE
        yield AudioChunk((0.2 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), RATE, text=text)


def talk(seconds: float, words_per_s: float, pause_every: int = 0) -> list[TextUpdate]:
    """Committed words at a steady pace (one update per word), each spoken just before it is
    committed; `pause_every`: a sentence end every that many words."""
    out = []
    n = int(seconds * words_per_s)
    for i in range(n):
        t = (i + 1) / words_per_s
        text = f"w{i}" + ("." if pause_every and (i + 1) % pause_every == 0 else "")
        out.append(TextUpdate(committed=(Word(text, t - 0.3, t - 0.05),), source_time=t, wall_time=t,
                              final=i == n - 1))
    return out


async def run(updates, pace: PaceConfig, voice=None, relief=None):
    voice = voice or SlowVoice()
    log = EventLog()
    stage = TtsStage(voice, SimulatedClock(), log, relief=relief, relief_name="cheap" if relief else "",
                     chunker=ChunkerConfig(min_words=2, max_words=4, timeout_s=0.5), pace=pace)
    inbox: Channel[TextUpdate] = Channel(len(updates) + 1)
    outbox: Channel[AudioChunk] = Channel(10_000)
    for u in updates:
        await inbox.put(u)
    inbox.close()
    await stage.run(inbox, outbox)
    outbox.close()
    chunks = [c async for c in outbox]
    return log.records, chunks, voice


def test_schedule_places_each_chunk_after_the_previous_one_with_a_crossfade():
    s = ListenerSchedule(1000, crossfade_ms=10)
    assert s.place(1.0, 500) == 1.0  # the listener was idle: heard when ready
    assert s.end == pytest.approx(1.5)
    assert s.place(1.2, 500) == pytest.approx(1.49)  # waits, touching the previous one (10 ms overlap)
    assert s.backlog(1.2) == pytest.approx(0.79)
    assert s.place(5.0, 100) == 5.0
    assert s.backlog(6.0) == 0.0


def test_word_offsets_by_character_share():
    assert word_offsets(["ab", "c"], 1.0) == pytest.approx([0.0, 0.6])
    assert word_offsets([], 1.0) == []


def test_timed_offsets_use_the_synthesisers_word_starts_and_share_the_rest_by_characters():
    words = ["ab", "c", "dd", "e"]
    assert timed_offsets(words, 4.0, {}) == word_offsets(words, 4.0)
    assert timed_offsets(words, 4.0, {0: 0.0, 1: 1.0, 2: 2.5, 3: 3.5}) == [0.0, 1.0, 2.5, 3.5]
    # untimed "c" and "dd" share 0..3 s with "ab" by characters (3, 2, 3 of 8)
    assert timed_offsets(words, 4.0, {0: 0.0, 3: 3.0}) == pytest.approx([0.0, 1.125, 1.875, 3.0])
    assert timed_offsets(words, 4.0, {2: 2.0}) == pytest.approx([0.0, 1.2, 2.0, 3.2])
    assert timed_offsets(words, 1.0, {0: -0.2, 1: 0.5, 2: 0.4, 3: 9.0}) == [0.0, 0.5, 0.5, 1.0]  # clamped, in order


class MarkedVoice:
    """A voice that says each word as 0.3 s of tone after 0.4 s of silence (0.1 s lead), and
    reports where each word starts, as eSpeak NG does."""

    sample_rate = RATE
    supports_speed = True

    def synthesize(self, text: str, speed: float = 1.0):
        tone = (0.3 * np.sin(2 * np.pi * 200 * np.arange(int(0.3 * RATE)) / RATE)).astype(np.float32)
        parts, marks, pos = [np.zeros(int(0.1 * RATE), np.float32)], [], int(0.1 * RATE)
        for i, _ in enumerate(text.split()):
            if i:
                parts.append(np.zeros(int(0.4 * RATE), np.float32))
                pos += int(0.4 * RATE)
            marks.append((i, pos / RATE))
            parts.append(tone)
            pos += len(tone)
        yield AudioChunk(np.concatenate(parts), RATE, text=text, word_marks=tuple(marks))


def test_word_times_follow_the_synthesisers_marks_through_trimmed_lead_and_cut_pauses():
    updates = talk(4, 1.0)
    records, chunks, _ = asyncio.run(run(updates, PaceConfig(control=False), MarkedVoice()))
    audio = [r for r in records if r["kind"] == "audio"]
    for r, c in zip(audio, chunks):
        offsets = [o for _, _, o in r["word_times"]]
        starts = [o - offsets[0] for o in offsets]
        assert starts == pytest.approx([0.7 * i for i in range(len(offsets))], abs=0.011)  # not a character share
        onset = int(np.argmax(np.abs(c.samples) > 0.01)) / RATE  # where the first word sounds in the chunk
        assert offsets[0] == pytest.approx(onset, abs=0.011)
    # pauses cut to 100 ms: the second word moves 0.3 s earlier, with its sound
    x = next(MarkedVoice().synthesize("a b")).samples
    cuts = pause_cuts(x, RATE, 100)
    assert after_cuts(int(0.8 * RATE), cuts) == pytest.approx(0.5 * RATE, abs=0.011 * RATE)
    assert after_cuts(int(0.2 * RATE), cuts) == int(0.2 * RATE)
    assert np.abs(shorten_pauses(x, RATE, 100)[int(0.5 * RATE) + 80]) > 0  # sound right after the mark


def test_chunks_carry_play_start_and_word_source_times():
    records, chunks, _ = asyncio.run(run(talk(6, 3.0), PaceConfig(control=False)))
    audio = [r for r in records if r["kind"] == "audio"]
    assert [c.play_start for c in chunks] == pytest.approx([r["play_start"] for r in audio], abs=1e-4)
    for prev, cur in zip(chunks, chunks[1:]):
        assert cur.play_start >= prev.play_start + prev.duration - 0.01  # never two at once
        assert cur.play_start >= cur.wall_time  # never before it exists
    first = audio[0]["word_times"][0]
    assert first[0] == "w0" and first[1] == pytest.approx(1 / 3 - 0.05, abs=1e-3)


def end_offset(records, length) -> float:
    return listener_latency(records, length)["EndOffset"]


def test_control_off_falls_behind_and_control_on_keeps_up():
    """1.5x longer speech than its source (3 words/s said at 2 words/s): without control the
    backlog grows with the talk, with it the listener stays within a bounded lag."""
    short, long = talk(30, 3.0), talk(90, 3.0)
    off_short = end_offset(asyncio.run(run(short, PaceConfig(control=False)))[0], 30)
    off_long = end_offset(asyncio.run(run(long, PaceConfig(control=False)))[0], 90)
    assert off_long > off_short + 20  # grows with the talk (0.5 s behind per source second)
    on_records, _, voice = asyncio.run(run(long, PaceConfig(max_speed=2.0, target_lag_s=2.0)))
    assert end_offset(on_records, 90) < 6.0
    assert max(voice.speeds) > 1.4  # the backlog made it speak faster
    words = heard_words([r for r in on_records if r["kind"] == "audio"])
    late = [m["p90"] for m in lag_per_minute(words, minute=30)]
    assert max(late) < 6.0 and abs(lag_slope(words)) < 2.0


def test_a_max_speed_the_user_sets_passes_the_voices_own_limit():
    limited = type("LimitedVoice", (SlowVoice,), {"max_speed": 1.25})
    _, _, voice = asyncio.run(run(talk(60, 3.0), PaceConfig(), limited()))
    assert max(voice.speeds) == pytest.approx(1.25)  # the voice's measured limit by default
    _, _, voice = asyncio.run(run(talk(60, 4.0), PaceConfig(max_speed=2.0), limited()))
    assert max(voice.speeds) > 1.6  # asked for: faster than the voice's limit


def test_speed_changes_smoothly_between_pieces():
    _, _, voice = asyncio.run(run(talk(60, 3.0), PaceConfig(max_speed=2.0, max_step=0.1)))
    steps = np.abs(np.diff(voice.speeds))
    assert steps.max() <= 0.1 + 1e-6


def test_an_idle_listener_changes_nothing():
    """Speech shorter than its source (1 word/s said in 0.5 s): the listener keeps waiting for
    words, so the control never speeds up, shortens or drops."""
    records, _, voice = asyncio.run(run(talk(40, 1.0), PaceConfig()))
    assert set(voice.speeds) == {1.0}
    stats = next(r for r in records if r["kind"] == "stats")
    assert stats["controlled"] == 0 and stats["words_dropped"] == 0


def test_controller_decides_from_backlog_not_from_pipeline_lag():
    c = PaceController(PaceConfig(target_lag_s=2.0, gain=0.5, max_step=1.0))
    words = [Word("a"), Word("b")]
    # 6 s behind the source, but nothing waits before it: speaking faster would not help
    _, d = c.decide(words, ready=10.0, listener_end=9.0, spoken=4.0)
    assert d.speed == 1.0 and d.backlog_s == 0.0
    # 3 s of backlog, 8 s of lag: speed 1 + 0.5 * min(8 - 2, 3)
    _, d = c.decide(words, ready=10.0, listener_end=13.0, spoken=5.0)
    assert d.speed == pytest.approx(1.6)  # 2.5 wanted, capped at the default fastest speed


def test_controller_speeds_up_ahead_of_words_already_committed_behind_the_piece():
    """A sentence end commits many words at once: the first piece has no backlog, but the words
    behind it will wait for it; the controller speeds it up before they do."""
    burst = [(f"w{i}", 5.0 + 0.3 * i) for i in range(12)]  # spoken 5.0-8.3 s, all committed at 10 s
    words = [Word("a"), Word("b")]
    fresh = PaceController(PaceConfig(target_lag_s=2.0, gain=0.5, max_step=1.0))
    _, d = fresh.decide(words, ready=10.0, listener_end=9.0, spoken=9.5, queued=burst)
    assert d.speed == 1.0  # the voice's pace is not known yet: nothing to place the words by
    c = PaceController(PaceConfig(target_lag_s=2.0, gain=0.5, max_step=1.0))
    c.observe("a b", duration_s=1.5, speed=1.0)  # 0.375 s per character: w11 starts ~10.5 s after 10 s
    _, d = c.decide(words, ready=10.0, listener_end=9.0, spoken=9.5, queued=burst)
    assert d.speed > 1.5 and d.backlog_s == 0.0
    _, d = c.decide(words, ready=10.0, listener_end=9.0, spoken=9.5)
    assert d.speed == 1.0  # nothing behind it: eases off again
    off = PaceController(PaceConfig(target_lag_s=2.0, gain=0.5, max_step=1.0, look_ahead=False))
    off.observe("a b", duration_s=1.5, speed=1.0)
    _, d = off.decide(words, ready=10.0, listener_end=9.0, spoken=9.5, queued=burst)
    assert d.speed == 1.0
    # words committed behind the piece but spoken recently enough stay under the target: no change
    _, d = c.decide(words, ready=10.0, listener_end=9.0, spoken=9.5, queued=[("x", 9.9)])
    assert d.speed == 1.0


def test_a_burst_of_committed_words_is_spoken_faster_from_its_first_piece():
    """One update commits 24 words whose source was spoken over the last 8 s: with the look-ahead
    the first piece is already faster, and the burst's last word is heard sooner."""
    warm = [TextUpdate(committed=(Word("w."),), source_time=1.0, wall_time=1.0)]  # the voice's pace
    burst = tuple(Word(f"w{i}" + ("," if i % 4 == 3 else ""), 2.0 + 0.33 * i, 2.2 + 0.33 * i) for i in range(24))
    updates = warm + [TextUpdate(committed=burst, source_time=10.0, wall_time=10.0, final=True)]
    results = {}
    for look in (True, False):
        records, _, voice = asyncio.run(run(updates, PaceConfig(max_speed=2.0, target_lag_s=2.0, look_ahead=look)))
        results[look] = (voice.speeds, end_offset(records, 10.0))
    (on_speeds, on_end), (off_speeds, off_end) = results[True], results[False]
    assert off_speeds[1] == 1.0 and on_speeds[1] > 1.0
    assert on_end < off_end - 0.5  # one step of speed ahead on every piece


def test_the_translators_tentative_tail_counts_behind_the_piece():
    """Three words committed, nine more still tentative, all read from source spoken seconds ago:
    the piece is sped up for the words the translator is about to commit, unless told not to."""
    warm = [TextUpdate(committed=(Word("w."),), source_time=1.0, wall_time=1.0)]
    tail = tuple(Word(f"t{i}") for i in range(9))
    update = TextUpdate(committed=(Word("a", 2.0, 2.2), Word("b", 2.3, 2.5), Word("c.", 2.6, 2.8)),
                        tentative=tail, source_time=10.0, wall_time=10.0, spoken_time=3.0)
    speeds = {}
    for tentative in (True, False):
        _, _, voice = asyncio.run(run(warm + [update], PaceConfig(max_speed=2.0, target_lag_s=2.0, tentative=tentative)))
        speeds[tentative] = voice.speeds[1]
    assert speeds[True] > 1.0 and speeds[False] == 1.0


def test_condensation_drops_fillers_repeats_and_a_clause_just_heard():
    ws = [Word(t) for t in "so uh the the plan, the plan, is good.".split()]
    kept, dropped = condense(ws, ["the plan"], budget=10)
    assert " ".join(w.text for w in kept) == "so the plan, is good."
    assert dropped == ("uh", "the", "the", "plan,")
    kept, dropped = condense(ws, [], budget=1)
    assert len(dropped) == 1 and dropped[0] == "uh"


def test_condensation_only_at_full_speed_and_within_its_share():
    c = PaceController(PaceConfig(max_speed=1.2, max_step=1.0, gain=1.0, condense_lag_s=4.0, max_condense=0.05,
                                  skip_lag_s=None))
    c.words_spoken = 100
    kept, d = c.decide([Word(w) for w in "uh yes yes".split()], ready=10.0, listener_end=20.0, spoken=1.0)
    assert d.speed == 1.2 and d.dropped == ("uh", "yes")
    kept, d = c.decide([Word(w) for w in "um no no".split()], ready=10.0, listener_end=20.0, spoken=1.0)
    assert len(d.dropped) <= 5 - 2  # 5 % of ~106 words, 2 already dropped


def test_shorten_pauses_cuts_inner_silences_only():
    rate = 16000
    tone = (0.3 * np.sin(2 * np.pi * 200 * np.arange(rate // 5) / rate)).astype(np.float32)
    gap = np.zeros(rate // 2, np.float32)
    pad = np.zeros(rate // 10, np.float32)
    x = np.concatenate([pad, tone, gap, tone, pad])
    y = shorten_pauses(x, rate, 100)
    assert len(x) - len(y) == pytest.approx(0.4 * rate, abs=0.011 * rate)  # 500 ms -> ~100 ms
    assert np.allclose(y[: len(pad) + len(tone)], x[: len(pad) + len(tone)])  # leading padding kept


@pytest.mark.parametrize("kwargs, words", [
    ({"condense_lag_s": 6.0, "skip_lag_s": 5.0}, "skip lag"),
    ({"condense_lag_s": 6.0, "relief_lag_s": 5.0}, "relief lag"),
    ({"relief_lag_s": 16.0, "skip_lag_s": 15.0}, "relief lag"),
    ({"relief_until_lag_s": 2.0}, "relief until lag"),
    ({"relief_until_lag_s": 7.0}, "relief until lag"),
    ({"max_speed": 0.9}, "between 1 and 2.5"),
    ({"max_speed": 2.6}, "between 1 and 2.5"),
    ({"target_lag_s": -1}, "target lag must be >= 0"),
])
def test_out_of_range_options_are_refused(kwargs, words):
    with pytest.raises(ValueError, match=words):
        PaceConfig(**kwargs)


def test_listener_latency_by_hand():
    records = [
        {"kind": "update", "stage": "asr", "committed": [{"text": "hi", "start": 0.5, "end": 0.9}]},
        {"kind": "audio", "stage": "tts", "wall_time": 2.0, "source_time": 1.5, "duration": 1.0, "sample_rate": 1000,
         "play_start": 2.0, "word_times": [["hola", 0.9, 0.0], ["tú", 0.9, 0.5]]},
        {"kind": "audio", "stage": "tts", "wall_time": 2.5, "source_time": 2.0, "duration": 1.0, "sample_rate": 1000,
         "play_start": 2.992, "word_times": [["bien", 1.8, 0.0]]},
    ]
    m = listener_latency(records, 2.0)
    assert m["StartOffset"] == pytest.approx(1.5)  # heard at 2.0, speech began at 0.5
    assert m["EndOffset"] == pytest.approx(1.992)
    assert m["lag_max"] == pytest.approx(1.6) and m["lag_p50"] == pytest.approx(1.192)
    # unaware: ready at 1.5 and 2.0; the second waits for the first (ends at 2.5, 8 ms cross-fade)
    assert play_starts([r for r in records if r["kind"] == "audio"], "cu") == pytest.approx([1.5, 2.492])


def test_a_synthesiser_that_hangs_ends_the_stage_with_a_named_error():
    import threading

    from speech.calls import ModelCallTimeout

    release = threading.Event()

    class HangingVoice(SlowVoice):
        def synthesize(self, text: str, speed: float = 1.0):
            release.wait(5)
            yield from super().synthesize(text, speed)

    async def main():
        stage = TtsStage(HangingVoice(), SimulatedClock(), EventLog(), chunker=ChunkerConfig(min_words=1, max_words=2),
                         call_timeout_s=0.2)
        inbox: Channel[TextUpdate] = Channel(4)
        outbox: Channel[AudioChunk] = Channel(4)
        await inbox.put(TextUpdate(committed=(Word("hola."),), final=True))
        inbox.close()
        await stage.run(inbox, outbox)

    try:
        with pytest.raises(ModelCallTimeout, match="synthesising 'hola.'"):
            asyncio.run(main())
    finally:
        release.set()


def test_lag_parts_add_up_to_the_lag_and_the_queue_holds_the_backlog():
    """1.5x longer speech without control: the parts of every word add up to its lag, and the
    words that wait longest wait behind earlier speech, not for the translator or the voice."""
    records, _, _ = asyncio.run(run(talk(30, 3.0), PaceConfig(control=False)))
    audio = [r for r in records if r["kind"] == "audio"]
    lags = [w.lag for w in heard_words(audio)]
    parts = lag_parts(audio)
    assert set(parts) == set(LAG_PARTS)
    assert sum(parts.values()) == pytest.approx(sum(lags) / len(lags), abs=1e-6)
    slowest = lag_parts(audio, above=sorted(lags)[int(0.9 * len(lags))])
    assert slowest["queue"] > 5 * max(slowest["committed"], slowest["synthesis"])
    assert slowest["queue"] > parts["queue"] + 3  # the backlog grew along the talk
    assert lag_parts(audio, above=max(lags)) == {}  # no word above the largest lag


def test_start_parts_add_up_to_the_start_offset_and_name_the_chunkers_wait():
    """Speech begins at 0.5 s, the recogniser commits at 1.5 s, the translator one word at 2.0 s
    and the sentence's end at 2.3 s: the lone word waits 0.3 s for company in the chunker."""
    asr = [{"kind": "update", "stage": "asr", "committed": [{"text": "hi", "start": 0.5, "end": 0.9}], "wall_time": 1.5}]
    updates = [TextUpdate(committed=(Word("hola", 0.5, 0.9),), source_time=1.5, wall_time=2.0),
               TextUpdate(committed=(Word("amigo.", 0.9, 1.2),), source_time=1.8, wall_time=2.3, final=True)]
    records, _, _ = asyncio.run(run(updates, PaceConfig(control=False)))
    parts = start_parts(asr + records)
    assert list(parts) == list(START_PARTS)
    assert parts["recognizer"] == pytest.approx(1.0) and parts["translator"] == pytest.approx(0.5, abs=1e-3)  # logged rounded
    assert parts["chunker"] == pytest.approx(0.3, abs=1e-3)
    assert 0 <= parts["synthesis"] < 0.2  # the fake voice's compute
    assert sum(parts.values()) == pytest.approx(listener_latency(asr + records, 3.0)["StartOffset"], abs=1e-3)
    assert start_parts(records) == {}  # no recogniser commit in the log: unknown, not zero


def test_the_target_lag_flag_moves_the_condensation_relief_and_skip_levels_with_it():
    import argparse

    from speech.errors import UserError
    from speech.tts.pace import add_pace_arguments, pace_options

    parser = argparse.ArgumentParser()
    add_pace_arguments(parser)
    assert PaceConfig(**pace_options(parser.parse_args([]))).skip_lag_s == 15.0
    far = PaceConfig(**pace_options(parser.parse_args(["--target-lag", "20"])))
    assert (far.condense_lag_s, far.relief_lag_s, far.skip_lag_s) == (23.0, 27.0, 32.0)  # in order
    with pytest.raises(UserError, match="--target-lag"):
        pace_options(parser.parse_args(["--target-lag", "-1"]))
