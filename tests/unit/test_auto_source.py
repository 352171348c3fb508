"""A live session told its language from the first speech (speech/auto_source.py), with a fake
detector and a fake inner session: every chunk reaches the session built for the language told,
in order; silence builds nothing; a speaker of one of several targets is translated into the others;
of the only target, or of a language nothing translates, the session ends with a named error."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from speech.asr.language_id import Detection, LanguageUnknown
from speech.auto_source import DetectingSession
from speech.channel import Channel
from speech.clock import SimulatedClock
from speech.events import EventLog
from speech.pipeline import PipelineConfig
from speech.stage import StageError
from speech.types import AudioChunk
from tests.conftest import FLEURS, require_data

RATE = 16000


class Registry:
    def shared(self, key, load):  # the real Silero speech detector
        return load()


def chunked(samples: np.ndarray, chunk_s: float = 0.1) -> list[AudioChunk]:
    n = int(chunk_s * RATE)
    return [AudioChunk(samples[i:i + n], RATE, start=i / RATE, seq=k, wall_time=(i + n) / RATE)
            for k, i in enumerate(range(0, len(samples), n))]


def talk() -> np.ndarray:
    """One second of silence, then a Spanish FLEURS clip (12.8 s)."""
    import soundfile as sf

    from speech.audio import resample

    clip = FLEURS / "fleurs-es-000.ogg"
    require_data(clip)
    audio, rate = sf.read(str(clip), dtype="float32")
    return np.concatenate([np.zeros(RATE, np.float32), resample(audio, rate, RATE)])


class Inner:
    """Records the configs it is built with and the chunks its session receives."""

    def __init__(self) -> None:
        self.configs: list[PipelineConfig] = []
        self.received: list[AudioChunk] = []

    def __call__(self, registry, config, source, sink, clock=None, log=None, first_link=None):
        self.configs.append(config)
        received = self.received

        class Session:
            async def run(self) -> None:
                channel: Channel[AudioChunk] = Channel(8)

                async def feed() -> None:
                    try:
                        await source(channel)
                    finally:
                        channel.close()

                task = asyncio.ensure_future(feed())
                async for chunk in channel:
                    received.append(chunk)
                await task

        return Session()


def source_of(chunks: list[AudioChunk], fail: Exception | None = None):
    async def source(outbox) -> None:
        for chunk in chunks:
            await outbox.put(chunk)
        if fail is not None:
            raise fail

    return source


def session(chunks, detector, inner, log, targets=("en",), fail=None, sink=None) -> DetectingSession:
    config = PipelineConfig(source="auto", target=targets[0], targets=tuple(targets) if len(targets) > 1 else ())
    return DetectingSession(Registry(), config, source_of(chunks, fail), sink, SimulatedClock(), log,
                            detector=detector, candidates={"en", "es", "pt"}, build=inner)


def test_the_language_told_from_the_first_speech_builds_the_session_and_every_chunk_reaches_it():
    chunks = chunked(talk())
    heard: list[int] = []

    def detector(samples, candidates):
        heard.append(len(samples))
        assert candidates == {"en", "es", "pt"}
        return Detection("es", 0.97, (("es", 0.97),), len(samples) / RATE)

    inner, log = Inner(), EventLog()
    asyncio.run(session(chunks, detector, inner, log).run())
    assert [c.source for c in inner.configs] == ["es"]
    assert [c.seq for c in inner.received] == [c.seq for c in chunks]  # nothing lost, in order
    # sure at the first try: it heard from the speech's onset (after the second of silence, less the
    # speech detector's pre-roll) until 1 s of speech, not the silence before it
    assert len(heard) == 1 and 1.0 * RATE <= heard[0] <= 2.5 * RATE, heard[0] / RATE
    (told,) = [r for r in log.records if r["kind"] == "language"]
    assert told["detected"] == "es" and told["probability"] == 0.97
    # the held chunks are handed on once the language is known, not before
    held = [c for c in inner.received if c.start < 5.0]
    assert all(c.wall_time >= told["wall_time"] - 1e-4 for c in held)  # the log rounds to 0.1 ms


def test_an_unsure_answer_waits_for_more_speech_and_the_last_try_decides():
    heard: list[float] = []

    def unsure(samples, candidates):
        heard.append(len(samples) / RATE)
        return Detection("pt", 0.6, (("pt", 0.6), ("es", 0.3)), len(samples) / RATE)

    inner, log = Inner(), EventLog()
    asyncio.run(session(chunked(talk()), unsure, inner, log).run())
    assert len(heard) == 4 and heard == sorted(heard) and 4.0 <= heard[-1] <= 5.5, heard
    assert [c.source for c in inner.configs] == ["pt"]
    assert [r["detected"] for r in log.records if r["kind"] == "language"] == ["pt"]  # one record: the answer


def test_silence_builds_nothing_and_ends_quietly():
    inner, log = Inner(), EventLog()
    calls = []
    asyncio.run(session(chunked(np.zeros(3 * RATE, np.float32)), lambda s, c: calls.append(s), inner, log).run())
    assert inner.configs == [] and calls == []
    assert [r["reason"] for r in log.records if r["kind"] == "language"] == ["no speech"]


def test_a_speaker_of_the_only_target_language_is_told_so_by_name():
    inner, log = Inner(), EventLog()
    found = lambda s, c: Detection("en", 0.99, (("en", 0.99),), 4.0)  # noqa: E731
    with pytest.raises(StageError) as e:
        asyncio.run(session(chunked(talk()), found, inner, log, targets=("en",)).run())
    assert e.value.stage == "language" and "speaks en, the language asked for as the target" in str(e.value)
    assert inner.configs == []


def test_a_speaker_of_one_of_several_targets_is_translated_into_the_others():
    inner, log = Inner(), EventLog()
    sinks = {"es": "sink-es", "en": "sink-en", "pt": "sink-pt"}
    built = []

    def build(registry, config, source, sink, **kw):
        built.append(sink)
        return inner(registry, config, source, sink, **kw)

    found = lambda s, c: Detection("en", 0.99, (("en", 0.99),), 4.0)  # noqa: E731
    chunks = chunked(talk())
    detecting = session(chunks, found, inner, log, targets=("es", "en", "pt"), sink=sinks)
    detecting.build = build
    asyncio.run(detecting.run())
    assert [(c.source, c.all_targets) for c in inner.configs] == [("en", ("es", "pt"))]
    assert built == [{"es": "sink-es", "pt": "sink-pt"}]
    assert [c.seq for c in inner.received] == [c.seq for c in chunks]  # nothing lost
    told = [r for r in log.records if r["kind"] == "language"]
    assert [(r["detected"], r["untranslated"]) for r in told] == [("en", ["en"])]


def test_a_language_nothing_translates_ends_the_session_with_its_name():
    def unknown(samples, candidates):
        raise LanguageUnknown("the speaker sounds like ja (probability 0.91), which nothing installed here translates")

    inner, log = Inner(), EventLog()
    with pytest.raises(StageError, match="sounds like ja"):
        asyncio.run(session(chunked(talk()), unknown, inner, log).run())
    assert inner.configs == [] and "sounds like ja" in next(r for r in log.records if r["kind"] == "language")["reason"]


def test_a_source_that_fails_after_the_language_is_told_fails_the_session():
    found = lambda s, c: Detection("es", 0.9, (("es", 0.9),), 4.0)  # noqa: E731
    inner, log = Inner(), EventLog()
    with pytest.raises(ConnectionError, match="microphone unplugged"):
        asyncio.run(session(chunked(talk()), found, inner, log, fail=ConnectionError("microphone unplugged")).run())
    assert len(inner.received) == len(chunked(talk()))  # what came before the fault still went through
