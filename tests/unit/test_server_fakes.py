"""A fake pipeline for the server tests (no models): fast, deterministic, and faithful to the
contracts the real stages keep (TextUpdates logged as "update", synthesised chunks as "audio").

- FakeAsr commits one word per `word_s` seconds of audio (w0, w1, ... or given words), keeps the next one tentative, and
  commits the tentative word at end of stream (an `end` mid-word still delivers it).
- FakeMt upper-cases committed words; FakeTts speaks 0.1 s of tone per word at 22.05 kHz.
- A target language ending in "-boom" makes the recogniser fail after one second of audio;
  "-slow" makes every update cost 50 ms in a worker thread (a busy model); "-oom" makes the
  pipeline fail at load (out of memory); "-hang" makes the translator's model call hang (it is
  timed out after 0.3 s); "-raise" makes the translator raise on its third word.
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

from speech.events import EventLog
from speech.pipeline import BranchLog
from speech.session import Branch, Session
from speech.tts.listener import ListenerSchedule
from speech.types import AudioChunk, TextUpdate, Word


class FakeAsr:
    name = "asr"

    def __init__(self, log: EventLog, clock, word_s: float = 0.5, boom_after_s: float | None = None, cost_s: float = 0.0,
                 words: tuple[str, ...] = (), tells: str = "", untranslated: bool = False):
        self.log, self.clock, self.word_s, self.boom_after_s, self.cost_s = log, clock, word_s, boom_after_s, cost_s
        self.untranslated = untranslated  # the language it tells is a target, left out
        self.words = words  # the text it "hears" (repeated); empty: w0, w1, ...
        self.tells = tells  # source "auto": the language it says it heard, at the first chunk

    def text(self, i: int) -> str:
        return self.words[i % len(self.words)] if self.words else f"w{i}"

    async def run(self, inbox, outbox) -> None:
        heard = 0.0
        committed = 0
        async for chunk in inbox:
            heard = chunk.end
            if self.tells:  # as speech.auto_source logs it
                self.log.write("language", detected=self.tells, probability=0.9, speech_s=4.0,
                               **({"untranslated": [self.tells]} if self.untranslated else {}))
                self.tells = ""
            if self.boom_after_s is not None and heard > self.boom_after_s:
                raise RuntimeError("fake recogniser exploded")
            if self.cost_s:
                await asyncio.to_thread(time.sleep, self.cost_s)
            n = int(heard / self.word_s)
            new = tuple(Word(self.text(i), i * self.word_s, (i + 1) * self.word_s) for i in range(committed, n))
            committed = n
            tentative = (Word(self.text(n)),)
            await self._emit(outbox, TextUpdate(new, tentative, source_time=heard, wall_time=self.clock.now()))
        # end of stream: the tentative word is committed (it may be a partial word)
        last = (Word(self.text(committed), committed * self.word_s, heard),) if heard > committed * self.word_s else ()
        await self._emit(outbox, TextUpdate(last, (), final=True, end_of_stream=True, source_time=heard,
                                            wall_time=self.clock.now()))

    async def _emit(self, outbox, update: TextUpdate) -> None:
        # Log from a worker thread, as real stages do, to exercise the thread-safe hand-off.
        await asyncio.to_thread(self.log.update, "asr", update)
        await outbox.put(update)


class FakeMt:
    name = "mt"

    def __init__(self, log: EventLog, clock, cost_s: float = 0.0):
        self.log, self.clock, self.cost_s = log, clock, cost_s

    async def run(self, inbox, outbox) -> None:
        async for update in inbox:
            if self.cost_s:
                await asyncio.sleep(self.cost_s)
            out = TextUpdate(tuple(Word(w.text.upper()) for w in update.committed),
                             tuple(Word(w.text.upper()) for w in update.tentative),
                             update.final, update.source_time, self.clock.now(), update.end_of_stream)
            self.log.update("mt", out)
            await outbox.put(out)


class FaultyMt(FakeMt):
    """A translator whose model call hangs (timed out by `model_call`) or raises."""

    def __init__(self, log: EventLog, clock, fault: str, release: "threading.Event") -> None:
        super().__init__(log, clock)
        self.fault, self.release = fault, release

    def _model(self, words: int) -> None:
        if self.fault == "hang":
            self.release.wait(30)  # a stuck binding: returns only when the test lets it
        elif self.fault == "raise" and words >= 3:
            raise RuntimeError("fake translator exploded")

    async def run(self, inbox, outbox) -> None:
        from speech.calls import model_call

        seen = 0
        async for update in inbox:
            seen += len(update.committed)
            if update.committed:
                await model_call(self._model, seen, timeout_s=0.3, what="the fake translator")
            out = TextUpdate(tuple(Word(w.text.upper()) for w in update.committed), (),
                             update.final, update.source_time, self.clock.now(), update.end_of_stream)
            self.log.update("mt", out)
            await outbox.put(out)


RELEASE_HUNG_CALLS = threading.Event()  # set by the tests that hang a call, when they end


class FakeTts:
    name = "tts"
    rate = 22050

    def __init__(self, log: EventLog, clock, odd_words: str = ""):
        self.log, self.clock = log, clock
        # "unspoken": leave every other word unspoken, as a voice too far behind does; "relief":
        # speak it with the relief voice, as a voice too far behind with a relief voice does
        self.odd_words = odd_words

    async def run(self, inbox, outbox) -> None:
        start = 0.0
        seq = 0
        for_ = np.arange(int(0.1 * self.rate), dtype=np.float32) / self.rate
        tone = (0.3 * np.sin(2 * np.pi * 440 * for_)).astype(np.float32)
        schedule = ListenerSchedule(self.rate)
        totals = {"words_relief": 0, "words_skipped": 0}  # as the real stage's stats record
        async for update in inbox:
            for word in update.committed:
                odd = bool(self.odd_words) and int(word.text.strip("Ww") or 0) % 2 == 1  # fake words only
                if self.odd_words == "unspoken" and odd:
                    self.log.write("tts_skip", stage="tts", text=word.text, reason="behind", lag_s=16.0, words=1)
                    totals["words_skipped"] += 1
                    continue
                totals["words_relief"] += self.odd_words == "relief" and odd
                now = self.clock.now()
                play = schedule.place(now, len(tone))
                chunk = AudioChunk(tone, self.rate, start, seq, wall_time=now, text=word.text, play_start=play)
                # the word renders source spoken just before the update's source time
                self.log.audio("tts", chunk, source_time=update.source_time, sample_rate=self.rate, play_start=play,
                               word_times=[[word.text, max(0.0, update.source_time - 0.1), 0.0]], words=1,
                               **({"voice": "relief"} if self.odd_words == "relief" and odd else {}))
                await outbox.put(chunk)
                start += chunk.duration
                seq += 1
        if self.odd_words == "relief":
            totals["voice_rtf"] = 2.5  # the main voice's real-time factor, as the real stage measures it
            totals["relief_voice"] = "espeak"  # and the relief voice that spoke, by its --voice value
        self.log.write("stats", stage="tts", **totals)


def fake_pipeline(hello, source, sink, clock, log) -> Session:
    """`sink`: one sink, or one per target (the server passes a mapping). With several targets the
    session is a tree (one recogniser, one FakeMt -> FakeTts branch per target, records naming their
    target); a target ending in "-lag" makes its branch's translator take 50 ms per update, one ending
    in "-unspoken" leaves every other word unspoken, one ending in "-relief" has the relief voice speak
    every other word."""
    targets = hello.all_targets
    boom = 1.0 if hello.target.endswith("-boom") else None
    cost = 0.05 if hello.target.endswith("-slow") else 0.0
    if hello.target.endswith("-oom"):
        raise MemoryError("fake engine ran out of memory while loading")
    # source "auto": Spanish is heard, and a Spanish target among others is left out, as speech.auto_source does
    untranslated = hello.source == "auto" and "es" in targets and len(targets) > 1
    targets = tuple(t for t in targets if not (untranslated and t == "es"))
    asr = FakeAsr(log, clock, boom_after_s=boom, cost_s=cost, tells="es" if hello.source == "auto" else "",
                  untranslated=untranslated)
    sinks = sink if isinstance(sink, dict) else {targets[0]: sink}
    if len(targets) == 1:
        fault = next((f for f in ("hang", "raise") if hello.target.endswith("-" + f)), None)
        branch_log = BranchLog(log, targets[0]) if untranslated else log  # the one left names its target
        mt = FaultyMt(log, clock, fault, RELEASE_HUNG_CALLS) if fault else FakeMt(branch_log, clock)
        odd = next((m for m in ("unspoken", "relief") if hello.target.endswith("-" + m)), "")
        tts = FakeTts(branch_log, clock, odd_words=odd)
        return Session([asr, mt, tts], source, sinks[targets[0]], clock=clock, log=log)
    branches = []
    for target in targets:
        blog = BranchLog(log, target)
        mt = FakeMt(blog, clock, cost_s=0.05 if target.endswith("-lag") else 0.0)
        branches.append(Branch(target, [mt, FakeTts(blog, clock)], sinks[target]))
    return Session([asr], source, None, clock=clock, log=log, branches=branches)


def make_fake_factory(registry, base):
    """For `speech serve --pipeline tests.unit.test_server_fakes:make_fake_factory`."""
    return fake_pipeline


class NarrowFakePipeline:
    """The fake pipeline, serving two sources only (what the page's language pickers must follow),
    and "auto" (the fake recogniser then says it heard Spanish)."""

    def __call__(self, *args, **kwargs):
        return fake_pipeline(*args, **kwargs)

    def languages(self) -> dict:
        names = {"en": "English", "es": "Spanish", "pt": "Portuguese"}
        listed = lambda codes: [{"code": c, "name": names[c]} for c in codes]  # noqa: E731
        return {"sources": listed(["en", "es"]), "targets": listed(["en", "es", "pt"]),
                "pairs": {"en": ["es", "pt"], "es": ["en"]}, "detect": True}


def make_narrow_fake_factory(registry, base):
    """For `speech serve --pipeline tests.unit.test_server_fakes:make_narrow_fake_factory`."""
    return NarrowFakePipeline()
