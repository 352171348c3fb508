"""The TTS stage with a fake synthesiser: what it speaks, when (computation-aware), and what it logs."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from speech.channel import Channel
from speech.clock import SimulatedClock, WallClock
from speech.events import EventLog
from speech.tts.chunker import ChunkerConfig
from speech.tts.sink import SpeechSink
from speech.tts.stage import TtsStage
from speech.types import AudioChunk, TextUpdate, Word

RATE = 16000


class FakeSynth:
    """One 100 ms tone per word, in two streamed pieces; records the thread it ran on."""

    sample_rate = RATE

    def __init__(self, delay: float = 0.0) -> None:
        self.calls: list[str] = []
        self.threads: set[int] = set()
        self.delay = delay

    def synthesize(self, text: str):
        self.calls.append(text)
        self.threads.add(threading.get_ident())
        time.sleep(self.delay)
        n = len(text.split())
        t = np.arange(int(RATE * 0.1 * n)) / RATE
        tone = (0.2 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
        pad = np.zeros(int(RATE * 0.1), np.float32)
        whole = np.concatenate([pad, tone, pad])
        half = len(whole) // 2
        yield AudioChunk(whole[:half], RATE, text=text)
        yield AudioChunk(whole[half:], RATE, text=text)


def words(s: str) -> tuple[Word, ...]:
    return tuple(Word(w) for w in s.split())


async def run_stage(updates, synth, clock=None, chunker=ChunkerConfig(min_words=2, max_words=6, timeout_s=0.5)):
    clock = clock or SimulatedClock()
    log = EventLog()
    stage = TtsStage(synth, clock, log, chunker=chunker)
    inbox: Channel[TextUpdate] = Channel(16)
    outbox: Channel[AudioChunk] = Channel(16)
    for u in updates:
        await inbox.put(u)
    inbox.close()
    await stage.run(inbox, outbox)
    outbox.close()
    return [c async for c in outbox], log


def test_speaks_committed_text_off_the_event_loop_with_computation_aware_times():
    synth = FakeSynth(delay=0.05)
    updates = [
        TextUpdate(committed=words("Hola"), tentative=words("mundo feliz"), wall_time=1.0, source_time=1.0),
        TextUpdate(committed=words("mundo."), wall_time=1.3, source_time=2.0, final=True),
        TextUpdate(committed=words("adiós"), wall_time=3.0, source_time=3.0),
        TextUpdate(end_of_stream=True, final=True, wall_time=3.2, source_time=3.5),
    ]
    chunks, log = asyncio.run(run_stage(updates, synth))
    assert synth.calls == ["Hola mundo.", "adiós"]
    assert threading.get_ident() not in synth.threads
    assert [c.text for c in chunks] == ["Hola mundo.", "adiós"]
    # first sample after the commit plus the synthesis time (>= 50 ms of fake compute)
    assert 1.35 <= chunks[0].wall_time < 1.8 and chunks[0].start == chunks[0].wall_time
    # padding trimmed: 0.2 s of tone + short pauses, not the 0.2 s of padding
    assert chunks[0].duration < 0.2 + 0.05
    audio = [r for r in log.records if r["kind"] == "audio"]
    assert [r["text"] for r in audio] == ["Hola mundo.", "adiós"]
    assert audio[0]["ttfa_ms"] >= 50 and audio[0]["source_time"] == 2.0 and audio[0]["sample_rate"] == RATE
    [stats] = [r for r in log.records if r["kind"] == "stats"]
    assert stats["chunks"] == 2 and stats["compute_s"] >= 0.1 and stats["audio_s"] > 0.2


def test_unspeakable_text_is_skipped_not_synthesised():
    synth = FakeSynth()
    updates = [TextUpdate(committed=words("😀 <br>"), final=True, wall_time=1.0)]
    chunks, log = asyncio.run(run_stage(updates, synth))
    assert chunks == [] and synth.calls == []
    assert any(r["kind"] == "tts_skip" for r in log.records)


def test_live_time_out_speaks_without_waiting_for_the_next_update():
    async def main():
        clock = WallClock()
        log = EventLog()
        chunker = ChunkerConfig(min_words=3, max_words=8, timeout_s=0.2, short_timeout_s=0.3)
        stage = TtsStage(FakeSynth(), clock, log, chunker=chunker)
        inbox: Channel[TextUpdate] = Channel(4)
        outbox: Channel[AudioChunk] = Channel(4)
        task = asyncio.create_task(stage.run(inbox, outbox))
        await inbox.put(TextUpdate(committed=words("uno dos"), wall_time=clock.now()))
        chunk = await asyncio.wait_for(outbox.get(), 2.0)  # no further update: the time-out speaks
        inbox.close()
        await task
        return chunk

    chunk = asyncio.run(main())
    assert chunk.text == "uno dos" and chunk.wall_time >= 0.3  # two words: the short-piece time-out


def test_sink_places_chunks_and_decoded_packets_on_the_listener_timeline():
    from speech.codecs.frames import CodecConfig
    from speech.codecs.pcm import create

    tone = np.full(RATE // 2, 0.1, np.float32)
    a = AudioChunk(tone, RATE, start=1.0, wall_time=1.0, text="a")
    b = AudioChunk(tone, RATE, start=1.2, wall_time=1.2, text="b")
    direct = SpeechSink()
    direct.add(a)
    direct.add(b)
    assert direct.chunks == 2 and direct.duration == pytest.approx(2.0, abs=0.01)

    pair = create(CodecConfig(sample_rate=RATE), None)
    decoded = SpeechSink(decoder=pair.decoder)
    for chunk in (a, b):
        for packet in [*pair.encoder.encode(chunk), *pair.encoder.flush()]:
            decoded.add(pair.decoder.decode(packet))
    assert decoded.chunks == 2
    assert decoded.duration == pytest.approx(direct.duration, abs=0.03)
    assert decoded.boundaries() == pytest.approx(direct.boundaries(), abs=5)


class WindowedSynth:
    """A voice that renders a piece window by window (as Kokoro): each window of 2 words is a part
    (AudioChunk.part), 100 ms of tone a word, `delay` seconds of compute a window."""

    sample_rate = RATE

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def synthesize(self, text: str):
        n = len(text.split())
        for i in range(0, n, 2):
            time.sleep(self.delay)
            j = min(n, i + 2)
            t = np.arange(int(RATE * 0.1 * (j - i))) / RATE
            yield AudioChunk((0.2 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), RATE, text=text, part=(i, j))


def test_a_voice_that_renders_by_windows_is_heard_from_its_first_window():
    updates = [TextUpdate(committed=words("uno dos tres cuatro cinco."), wall_time=1.0, source_time=2.0, final=True)]
    chunks, log = asyncio.run(run_stage(updates, WindowedSynth(delay=0.05), chunker=ChunkerConfig(max_words=10)))
    audio = [r for r in log.records if r["kind"] == "audio"]
    # three parts of one piece, each with its own words, the first out after one window's compute
    assert [r["text"] for r in audio] == ["uno dos", "tres cuatro", "cinco."]
    assert [len(r["word_times"]) for r in audio] == [2, 2, 1]
    assert 1.05 <= chunks[0].wall_time < 1.1 < chunks[1].wall_time < chunks[2].wall_time
    # on time, each part plays where the one before it ends (less the cross-fade)
    assert chunks[1].play_start == pytest.approx(chunks[0].play_start + chunks[0].duration, abs=0.011)
    [stats] = [r for r in log.records if r["kind"] == "stats"]
    assert stats["chunks"] == 3 and stats["compute_s"] >= 0.15


def test_a_window_later_than_the_audio_before_it_leaves_a_gap_on_the_listener_timeline():
    updates = [TextUpdate(committed=words("uno dos tres cuatro."), wall_time=1.0, source_time=2.0, final=True)]
    chunks, _ = asyncio.run(run_stage(updates, WindowedSynth(delay=0.3), chunker=ChunkerConfig(max_words=10)))
    # the second window took 0.3 s while the first (0.2 s of audio) played: the listener waits
    assert chunks[1].play_start >= chunks[0].play_start + chunks[0].duration + 0.05
    assert chunks[1].play_start == pytest.approx(chunks[1].wall_time, abs=1e-4)  # whole samples


class SlackSynth(WindowedSynth):
    """A windowed voice that records the slack the stage gives each piece (`uses_slack`)."""

    uses_slack = True

    def __init__(self, delay: float) -> None:
        super().__init__(delay)
        self.slacks: list[float | None] = []

    def synthesize(self, text: str, slack_s: float | None = None):
        self.slacks.append(slack_s)
        yield from super().synthesize(text)


def test_a_voice_that_uses_slack_is_told_how_long_the_listener_still_hears_earlier_speech():
    # two pieces committed together: the second is synthesised while the first (0.8 s) plays
    updates = [TextUpdate(committed=words("uno dos tres cuatro cinco seis siete ocho. nueve diez."),
                          wall_time=1.0, source_time=2.0, final=True)]
    synth = SlackSynth(delay=0.01)
    asyncio.run(run_stage(updates, synth, chunker=ChunkerConfig(max_words=10)))
    assert len(synth.slacks) == 2
    assert synth.slacks[0] == 0.0  # the listener hears nothing: it waits for the first window
    assert 0.6 < synth.slacks[1] < 0.8  # the first piece's 0.8 s, less the compute it took so far
    # a voice without `uses_slack` is called as before (FakeSynth takes no slack_s)
    chunks, _ = asyncio.run(run_stage(updates, FakeSynth()))
    assert chunks


def test_a_piece_that_waited_for_the_voice_has_unbounded_slack():
    # the first piece takes 1.2 s to render (two windows of 0.6 s) and plays for 0.4 s: the second
    # waits a second for the voice, which is behind, so the stage tells it not to spend on windows
    updates = [TextUpdate(committed=words("uno dos tres cuatro. cinco seis."), wall_time=1.0, source_time=2.0,
                          final=True)]
    synth = SlackSynth(delay=0.6)
    asyncio.run(run_stage(updates, synth, chunker=ChunkerConfig(max_words=10)))
    assert synth.slacks == [0.0, float("inf")]
