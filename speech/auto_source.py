"""A live session whose spoken language is told from its first speech (`source: "auto"`).

A file can be detected before it is streamed (`speech translate --source auto` hears its first
30 s of speech); a live speaker cannot. `DetectingSession` holds the input back while the speech
detector counts the speech in it; after 1, 2 and 3 s of speech Whisper is asked for the language
among the languages a path translates into every target, and an answer it is sure of (probability
0.9) is taken; after 4 s (or at the input's end) its answer is taken whatever it is. It then logs a
`language` record, builds the ordinary session for that language and feeds it the held chunks
before the rest, so no word is lost; the first words are heard that much later
(docs/asr.md, "Language detection"). A speaker of one of several targets is translated into the
others (the record says which went untranslated); of the only target, the session ends, named.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .channel import Channel
from .clock import Clock
from .events import EventLog
from .stage import StageError
from .types import AudioChunk

# Seconds of speech after which the language is told: at each but the last only when Whisper is
# sure of it (SURE), at the last whatever it says. On the 41 shared clips (`speech bench langid
# --seconds 1,2,3,4 --sure 0.9`) every clip was told right, after 1.95 s of speech on average; no
# wrong choice had a probability above 0.72, and from 3 s of speech on none was wrong.
DETECT_AFTER_S = (1.0, 2.0, 3.0, 4.0)
SURE = 0.9
SAMPLE_RATE = 16000

Detector = Callable[[np.ndarray, Collection[str]], Any]  # (16-kHz samples, candidates) -> Detection


@dataclass
class DetectingSession:
    """`build_session` for `config.source == "auto"`: same arguments, same `run()`."""

    registry: Any
    config: Any  # PipelineConfig, source "auto"
    source: Callable
    sink: Any
    clock: Clock
    log: EventLog
    first_link: Any = None
    detector: Detector | None = None  # default: Whisper, the session's own recogniser model
    candidates: Collection[str] | None = None  # default: what a path translates into the targets
    after_s: tuple[float, ...] = DETECT_AFTER_S
    sure: float = SURE
    build: Callable | None = None  # the session for the language told (default: speech.pipeline.build_session)

    def __post_init__(self) -> None:
        if self.detector is None:
            self.detector = whisper_detector(self.registry, self.config)
        if self.candidates is None:
            from .languages import source_candidates

            self.candidates = source_candidates(self.registry, self.config)

    async def run(self) -> None:
        from .pipeline import DEFAULT_LINK, build_session

        link = self.first_link or DEFAULT_LINK
        heard: Channel[AudioChunk] = Channel(link.maxsize, link.overflow, name="source")
        reader = asyncio.create_task(self._read(heard), name="source")
        try:
            state = Held(self._vad())
            language, ready = None, 0.0
            for i, need in enumerate(self.after_s):
                await self._hold(heard, state, need)
                last = i == len(self.after_s) - 1 or state.ended
                language, ready = await self._tell(state, last)
                if language is not None or last:
                    break
            if language is None:  # no speech at all: nothing to recognise in any language
                await reader
                return
            held = [replace(c, wall_time=max(c.wall_time, ready)) for c in state.chunks]

            async def replay(outbox: Channel[AudioChunk]) -> None:
                for chunk in held:
                    await outbox.put(chunk)
                async for chunk in heard:
                    await outbox.put(chunk)
                await reader  # the source's own error, if it failed

            config, sink = self.config.replace(source=language), self.sink
            if language in config.all_targets:  # the speaker's own listeners hear nothing translated
                config = other_targets(config, language)
                sink = {t: s for t, s in sink.items() if t != language} if isinstance(sink, Mapping) else sink
            build = self.build or build_session
            session = build(self.registry, config, replay, sink, clock=self.clock, log=self.log,
                            first_link=self.first_link)
            await session.run()
        finally:
            if not reader.done():
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)

    async def _read(self, heard: Channel[AudioChunk]) -> None:
        try:
            await self.source(heard)
        finally:
            heard.close()

    def _vad(self) -> Any:
        from speech.asr.vad import StreamingVad, load_silero

        return StreamingVad(self.registry.shared(("silero-vad",), load_silero))

    async def _hold(self, heard: Channel[AudioChunk], state: "Held", speech_s: float) -> None:
        """Reads on until `state` holds `speech_s` of speech, or the input ends."""
        from .audio import resample

        if state.ended or state.speech >= speech_s:
            return
        async for chunk in heard:
            state.chunks.append(chunk)
            samples = chunk.samples if chunk.sample_rate == SAMPLE_RATE else resample(
                chunk.samples, chunk.sample_rate, SAMPLE_RATE)
            for event in state.vad.process(samples, start=chunk.start):
                if event.kind == "speech_start" and state.onset is None:
                    state.onset = event.time
            if state.vad.speaking:
                state.speech += len(chunk.samples) / chunk.sample_rate
            if state.speech >= speech_s:
                return
        state.ended = True
        start = state.vad.finish()
        if state.onset is None and start is not None:
            state.onset = start

    async def _tell(self, state: "Held", last: bool) -> tuple[str | None, float]:
        """(the language, when it was known on the session's clock), or (None, ...) where it is not
        told yet: before the `last` try, a choice under `sure` or refused waits for more speech; at
        the last, a refusal ends the session. None at the last: nothing was said."""
        from speech.asr.language_id import LanguageUnknown

        from .audio import resample

        held, onset = state.chunks, state.onset
        if onset is None:
            if last:
                self.log.write("language", detected=None, reason="no speech")
            return None, held[-1].wall_time if held else 0.0
        samples = np.concatenate([c.samples if c.sample_rate == SAMPLE_RATE else resample(
            c.samples, c.sample_rate, SAMPLE_RATE) for c in held if c.start + len(c.samples) / c.sample_rate > onset])
        timer = self.clock.stage("language")
        timer.begin(held[-1].wall_time)
        try:
            found = await asyncio.to_thread(self.detector, samples, self.candidates)
        except LanguageUnknown as e:
            timer.end()
            if not last:
                return None, 0.0
            self.log.write("language", detected=None, reason=str(e))
            raise StageError("language", e) from None
        ready = timer.end()
        if not last and found.probability < self.sure:
            return None, ready
        targets = self.config.all_targets
        if targets == (found.language,):
            error = LanguageUnknown(f"the speaker speaks {found.language}, the language asked for as the target; "
                                    "ask for another target")
            self.log.write("language", detected=found.language, reason=str(error))
            raise StageError("language", error)
        untranslated = {"untranslated": [found.language]} if found.language in targets else {}
        self.log.write("language", detected=found.language, probability=round(found.probability, 3),
                       speech_s=round(found.speech_s, 2), wall_time=round(ready, 4), **untranslated)
        return found.language, ready


def other_targets(config: Any, language: str) -> Any:
    """`config` (a PipelineConfig of several targets) translating into every target but `language`,
    the one the speaker speaks: its listeners already understand the speaker."""
    rest = tuple(t for t in config.all_targets if t != language)
    if not rest:
        raise ValueError(f"{language} is the only target")
    return config.replace(target=rest[0], targets=rest if len(rest) > 1 else ())


@dataclass
class Held:
    """What a DetectingSession has read while the language is not yet told."""

    vad: Any  # StreamingVad over the input
    chunks: list[AudioChunk] = field(default_factory=list)
    onset: float | None = None  # where speech began (source seconds)
    speech: float = 0.0  # seconds of speech heard
    ended: bool = False  # the input ended


def whisper_detector(registry: Any, config: Any) -> Detector:
    """Whisper's detection with the session's own recogniser model (shared, loaded once); an
    English-only recogniser always answers English."""
    from speech.asr.language_id import Detection, detect, recognizer_config
    from speech.asr.whisper import load_model

    rec_config = recognizer_config(registry, config)
    fixed = getattr(rec_config, "language", "en")
    if fixed:
        return lambda samples, candidates: Detection(fixed, 1.0, ((fixed, 1.0),), len(samples) / SAMPLE_RATE)
    model = load_model(registry, rec_config)
    return lambda samples, candidates: detect(model, samples, candidates, name="the speaker")
