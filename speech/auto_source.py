"""A live session whose spoken language is told from its first speech (`source: "auto"`).

A file can be detected before it is streamed (`speech translate --source auto` hears its first
30 s of speech); a live speaker cannot. `DetectingSession` holds the input back until the speech
detector has heard `DETECT_SPEECH_S` of speech (or the input ends), has Whisper tell the language
among the languages a path translates into every target, logs a `language` record, then builds
the ordinary session for that language and feeds it the held chunks before the rest, so no word
is lost. The first words are heard that much later: on the shared clips 4 s of speech told all 41
languages right, 2 s 37 (docs/asr.md, "Language detection").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .channel import Channel
from .clock import Clock
from .events import EventLog
from .stage import StageError
from .types import AudioChunk

DETECT_SPEECH_S = 4.0  # speech heard before the language is told
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
    speech_s: float = DETECT_SPEECH_S
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
            held, onset = await self._hold(heard)
            language, ready = await self._tell(held, onset)
            if language is None:  # no speech at all: nothing to recognise in any language
                await reader
                return
            held = [replace(c, wall_time=max(c.wall_time, ready)) for c in held]

            async def replay(outbox: Channel[AudioChunk]) -> None:
                for chunk in held:
                    await outbox.put(chunk)
                async for chunk in heard:
                    await outbox.put(chunk)
                await reader  # the source's own error, if it failed

            build = self.build or build_session
            session = build(self.registry, self.config.replace(source=language), replay, self.sink,
                            clock=self.clock, log=self.log, first_link=self.first_link)
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

    async def _hold(self, heard: Channel[AudioChunk]) -> tuple[list[AudioChunk], float | None]:
        """The chunks up to `speech_s` of speech (or the input's end), and where speech began."""
        from speech.asr.vad import StreamingVad, load_silero

        from .audio import resample

        vad = StreamingVad(self.registry.shared(("silero-vad",), load_silero))
        held: list[AudioChunk] = []
        onset: float | None = None
        speech = 0.0
        async for chunk in heard:
            held.append(chunk)
            samples = chunk.samples if chunk.sample_rate == SAMPLE_RATE else resample(
                chunk.samples, chunk.sample_rate, SAMPLE_RATE)
            for event in vad.process(samples, start=chunk.start):
                if event.kind == "speech_start" and onset is None:
                    onset = event.time
            if vad.speaking:
                speech += len(chunk.samples) / chunk.sample_rate
            if speech >= self.speech_s:
                break
        else:
            start = vad.finish()
            if onset is None and start is not None:
                onset = start
        return held, onset

    async def _tell(self, held: list[AudioChunk], onset: float | None) -> tuple[str | None, float]:
        """(the language, when it was known on the session's clock); None where nothing was said."""
        from speech.asr.language_id import LanguageUnknown

        from .audio import resample

        if onset is None:
            self.log.write("language", detected=None, reason="no speech")
            return None, held[-1].wall_time if held else 0.0
        samples = np.concatenate([c.samples if c.sample_rate == SAMPLE_RATE else resample(
            c.samples, c.sample_rate, SAMPLE_RATE) for c in held if c.start + len(c.samples) / c.sample_rate > onset])
        timer = self.clock.stage("language")
        timer.begin(held[-1].wall_time)
        try:
            found = await asyncio.to_thread(self.detector, samples, self.candidates)
        except LanguageUnknown as e:
            self.log.write("language", detected=None, reason=str(e))
            raise StageError("language", e) from None
        ready = timer.end()
        if found.language in self.config.all_targets:
            error = LanguageUnknown(f"the speaker speaks {found.language}, a language asked for as a target; "
                                    "ask for other targets")
            self.log.write("language", detected=found.language, reason=str(error))
            raise StageError("language", error)
        self.log.write("language", detected=found.language, probability=round(found.probability, 3),
                       speech_s=round(found.speech_s, 2), wall_time=round(ready, 4))
        return found.language, ready


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
