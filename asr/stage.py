"""The ASR stage: 16 kHz AudioChunks in, TextUpdates out.

Per chunk (in a worker thread): the Silero VAD gates the audio (silence never reaches the
recogniser; `pad_s` of audio before speech is kept), the recogniser is fed, and every `update_s`
of new speech it re-decodes and the commit policy decides what to commit. A pause ends the speech
segment: its tail is committed and the update is marked `final` (the translator closes a
sentence there). End of stream commits everything heard.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from speech.channel import Channel
from speech.clock import Clock
from speech.events import EventLog
from speech.registry import Registry
from speech.types import AudioChunk, TextUpdate, Word

from .vad import StreamingVad, VadConfig, load_silero

SAMPLE_RATE = 16000
# Source languages whose speech starts segments the faster way by default: English measured its
# first audio 0.3-0.5 s sooner at the same BLEU; Spanish 0.1 s sooner at 0.8 BLEU and 1.4 ASR-BLEU
# less, Portuguese hardly sooner (docs/asr.md, "A segment's first words"). Others are unmeasured.
SEGMENT_START_LANGUAGES = frozenset({"en"})
# The options of a segment's start, named alike in the typed options (speech.options.AsrOptions).
SEGMENT_START_KEYS = ("segment_start", "first_update_s", "first_update_words")


@dataclass
class AsrOptions:
    update_s: float | None = None  # None: the recogniser's own default
    # Adaptive step: while the stage runs more than `max_behind_s` behind real time it waits for
    # up to `max_update_factor` x update_s of new audio before decoding again, so it catches up.
    max_behind_s: float = 0.3
    max_update_factor: float = 3.0
    # No commit until a segment's buffer holds this much audio: Whisper's guesses on the first
    # second of speech often agree twice and are still wrong ("I'll let you be" for "Unless to be").
    min_commit_s: float = 1.5
    # A segment's start (docs/asr.md, "A segment's first words"): decode steps are counted from the
    # segment's first audio, not from the stream's start, so the first decode falls a whole step
    # into the speech; that warm-up decode counts for the policy's agreement (nothing is committed
    # from it); and after it the step is `first_update_s` (never longer than update_s) until the
    # segment has committed `first_update_words` words. The translator, the chunker and the voice
    # each wait for a few words, and at a segment's start every one of them waits on the
    # recogniser. None: as measured for the source language (SEGMENT_START_LANGUAGES).
    segment_start: bool | None = None
    first_update_s: float = 0.5
    first_update_words: int = 3
    vad: VadConfig | None = field(default_factory=VadConfig)  # None: no gating


class AsrStage:
    name = "asr"

    def __init__(self, recognizer: Any, policy: Any, clock: Clock, log: EventLog,
                 vad: StreamingVad | None = None, update_s: float = 1.0,
                 max_behind_s: float = 0.3, max_update_factor: float = 3.0, min_commit_s: float = 0.0,
                 first_update_s: float | None = None, first_update_words: int = 1,
                 warm_up_agrees: bool = False, segment_steps: bool = False) -> None:
        self.recognizer = recognizer
        self.policy = policy
        self.clock = clock.stage("asr")
        self.log = log
        self.vad = vad
        self.update_s = update_s
        self.max_behind_s = max_behind_s
        self.max_update_factor = max_update_factor
        self.min_commit_s = min_commit_s
        self.first_update_s = first_update_s
        self.first_update_words = first_update_words
        self.warm_up_agrees = warm_up_agrees
        self.segment_steps = segment_steps
        self._segment_words = 0  # words committed in the current speech segment
        self._segment_decodes = 0
        self.skipped = 0  # decodes postponed because the stage was behind
        self._speaking = vad is None
        self._preroll: deque[AudioChunk] = deque()
        self._last_decode_end = 0.0
        self._tentative: tuple[Word, ...] = ()
        self.compute_s = 0.0
        self.update_times: list[float] = []  # seconds per decode+policy step (flat on long input)
        self.updates = 0

    # -- synchronous work (worker thread) -----------------------------------------------------------
    def _emit(self, committed: list[Word], tentative: list[Word], source_time: float, final: bool = False) -> TextUpdate | None:
        tent = tuple(tentative)
        if not committed and tent == self._tentative and not final:
            return None
        self._tentative = tent
        return TextUpdate(tuple(committed), tent, final=final, source_time=source_time,
                          language=getattr(self.recognizer, "language", ""))

    def _decode(self, source_time: float) -> TextUpdate | None:
        t0 = time.perf_counter()
        hyp = self.recognizer.hypothesis()
        self._last_decode_end = self.recognizer.buffer_end
        if getattr(self.recognizer, "buffer_seconds", self.min_commit_s) < self.min_commit_s:
            committed, tentative = [], hyp  # warm-up: show, do not commit
            observe = getattr(self.policy, "observe", None)
            if self.warm_up_agrees and observe is not None:
                observe(hyp, self.recognizer.buffer_end)
        else:
            committed, tentative = self.policy.update(hyp, self.recognizer.buffer_end)
        self._segment_words += len(committed)
        self._segment_decodes += 1
        self.recognizer.commit(committed)
        self.update_times.append(time.perf_counter() - t0)
        return self._emit(committed, tentative, source_time)

    def _close(self, source_time: float, end_of_stream: bool = False, pause: bool = True) -> TextUpdate | None:
        words = self.recognizer.finish() if end_of_stream else self.recognizer.close_segment()
        committed = self.policy.flush(words)
        self.policy.reset()
        self._last_decode_end = 0.0
        self._segment_words = 0
        self._segment_decodes = 0
        if not committed and not self._tentative and not end_of_stream:
            return None  # a pause after nothing (noise that the VAD took for speech)
        return self._emit(committed, [], source_time, final=pause or end_of_stream)

    def _feed(self, chunk: AudioChunk) -> None:
        self.recognizer.feed(chunk)

    def _due(self, behind: float) -> bool:
        last = self._last_decode_end
        if self.segment_steps and hasattr(self.recognizer, "buffer_seconds"):
            last = max(last, self.recognizer.buffer_end - self.recognizer.buffer_seconds)
        new_audio = self.recognizer.buffer_end - last
        step = self.update_s
        if self.first_update_s is not None and self._segment_decodes and self._segment_words < self.first_update_words:
            step = min(step, self.first_update_s)
        if new_audio < step - 1e-6:
            return False
        if behind > self.max_behind_s and new_audio < self.update_s * self.max_update_factor - 1e-6:
            self.skipped += 1
            return False
        return True

    def process(self, chunk: AudioChunk, behind: float = 0.0) -> list[TextUpdate]:
        """One chunk; `behind`: how far the stage lags real time (wall seconds) as it starts."""
        out: list[TextUpdate | None] = []
        if self.vad is None:
            self._feed(chunk)
        else:
            events = self.vad.process(chunk.samples, chunk.start)
            starts = [e.time for e in events if e.kind == "speech_start"]
            if starts and not self._speaking:
                for old in self._preroll:
                    if old.end > starts[0]:
                        self._feed(old)
                self._preroll.clear()
                self._speaking = True
            if self._speaking:
                self._feed(chunk)
            else:
                self._preroll.append(chunk)
                while self._preroll and self._preroll[0].end < chunk.end - self.vad.config.pad_s - chunk.duration:
                    self._preroll.popleft()
            if self._speaking and not self.vad.speaking:
                out.append(self._close(chunk.end))
                self._speaking = False
                return [u for u in out if u is not None]
        if self._speaking and self._due(behind):
            out.append(self._decode(chunk.end))
            limit = getattr(getattr(self.recognizer, "config", None), "chunk_length", None)
            if limit and getattr(self.recognizer, "buffer_seconds", 0.0) > limit - 1.0:
                out.append(self._close(chunk.end, pause=False))  # no commit for a whole window: cut
        return [u for u in out if u is not None]

    def finish(self, source_time: float) -> TextUpdate:
        if self.vad is not None and not self._speaking:
            start = self.vad.finish()  # speech that began too close to the end to be confirmed
            if start is not None:
                for old in self._preroll:
                    if old.end > start:
                        self._feed(old)
                self._preroll.clear()
        update = self._close(source_time, end_of_stream=True)
        assert update is not None
        return TextUpdate(update.committed, (), final=True, source_time=source_time,
                          end_of_stream=True, language=update.language)

    # -- the asyncio task -----------------------------------------------------------------------------
    async def _send(self, outbox: Channel[TextUpdate], update: TextUpdate, wall: float) -> None:
        update = TextUpdate(update.committed, update.tentative, update.final, update.source_time,
                            wall, update.end_of_stream, update.language)
        self.updates += 1
        self.log.update("asr", update)
        await outbox.put(update)

    async def run(self, inbox: Channel[AudioChunk], outbox: Channel[TextUpdate]) -> None:
        last_end, last_arrival = 0.0, 0.0
        async for chunk in inbox:
            if chunk.sample_rate != SAMPLE_RATE:
                raise ValueError(f"the ASR stage takes {SAMPLE_RATE} Hz audio, got {chunk.sample_rate} Hz")
            self.log.write("input", start=round(chunk.start, 4), end=round(chunk.end, 4),
                           wall_time=round(chunk.wall_time, 4))
            last_end, last_arrival = chunk.end, chunk.wall_time
            behind = self.clock.now() - chunk.wall_time
            self.clock.begin(chunk.wall_time)
            t0 = time.perf_counter()
            updates = await asyncio.to_thread(self.process, chunk, behind)
            self.compute_s += time.perf_counter() - t0
            wall = self.clock.end()
            for update in updates:
                await self._send(outbox, update, wall)
        self.clock.begin(last_arrival)
        t0 = time.perf_counter()
        final = await asyncio.to_thread(self.finish, last_end)
        self.compute_s += time.perf_counter() - t0
        await self._send(outbox, final, self.clock.end())
        self.log.write("stats", stage="asr", compute_s=round(self.compute_s, 4), updates=self.updates,
                       decodes=getattr(self.recognizer, "decodes", 0), skipped=self.skipped,
                       update_s=[round(t, 4) for t in self.update_times])


def parse_options(text: str) -> dict[str, float]:
    """"margin_s=0.4,min_probability=0.5" -> {"margin_s": 0.4, "min_probability": 0.5}."""
    out: dict[str, float] = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = float(value) if "." in value else int(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(f"policy option {item!r}: write NAME=NUMBER, e.g. margin_s=0.4")
    return out


def create_policy(registry: Registry, model: str, policy: str, language: str = "") -> Any:
    """A commit policy from "name" or "name:option=value,...", "default" = best for the model and
    source language (options after "default:" override the measured ones)."""
    from .backends import DEFAULT_POLICY, LANGUAGE_POLICY

    name, _, options = policy.partition(":")
    measured: dict[str, float] = {}
    if name == "default":
        name = DEFAULT_POLICY.get(model, "local-agreement-2")
        name, _, tuned = LANGUAGE_POLICY.get((model, language), name).partition(":")
        measured = parse_options(tuned)
    try:
        return registry.create("asr-policy", name, **{**measured, **parse_options(options)})
    except TypeError as e:  # an unknown option name: the registry's message lists the known ones
        raise ValueError(f"--policy {policy}: {e}") from None


def tuned_language(rec_config: Any, language: str) -> str:
    """The source language whose measured policy settings apply, "" for none: they were measured
    on the embedded weights, so a user's own model (a local folder, a hub id) takes the model's."""
    from speech.models.whisper import EMBEDDED

    return language if getattr(rec_config, "model", EMBEDDED[0]) in EMBEDDED else ""


def segment_start(options: AsrOptions, language: str) -> dict[str, Any]:
    """The AsrStage keywords of a segment's start: `options.segment_start`, or when it is None the
    measured choice for `language` (SEGMENT_START_LANGUAGES)."""
    on = options.segment_start
    if on is None:
        on = language in SEGMENT_START_LANGUAGES
    if not on:
        return {}
    return {"segment_steps": True, "warm_up_agrees": True, "first_update_s": options.first_update_s,
            "first_update_words": options.first_update_words}


def create_asr_stage(registry: Registry, model: str, policy: str, language: str, clock: Clock,
                     log: EventLog, options: AsrOptions | None = None,
                     recognizer_options: dict[str, Any] | None = None, **model_options: Any) -> AsrStage:
    """An ASR stage from registry names; `policy="default"` picks the best measured policy.
    `recognizer_options` (or keywords) override the recogniser's config ("model" among them)."""
    options = options or AsrOptions()
    rec_config = registry.config("recognizer", model, **{**(recognizer_options or {}), **model_options})
    if language and language != "auto" and hasattr(rec_config, "language"):
        if rec_config.language and rec_config.language != language:
            only = "English" if rec_config.language == "en" else rec_config.language
            raise ValueError(f"recognizer {model!r} is {only}-only; it cannot take --language {language}")
        rec_config.language = language
    elif language not in ("", "auto", "en") and not hasattr(rec_config, "language"):
        raise ValueError(f"recognizer {model!r} is English-only; it cannot take --language {language}")
    recognizer = registry.create("recognizer", model, rec_config)
    commit_policy = create_policy(registry, model, policy, tuned_language(rec_config, language))
    vad = None
    if options.vad is not None:
        vad = StreamingVad(registry.shared(("silero-vad",), load_silero), options.vad)
    update_s = options.update_s or getattr(rec_config, "update_s", 1.0)
    return AsrStage(recognizer, commit_policy, clock, log, vad=vad, update_s=update_s,
                    max_behind_s=options.max_behind_s, max_update_factor=options.max_update_factor,
                    min_commit_s=options.min_commit_s, **segment_start(options, language))


def build_stage(registry: Registry, config: Any, clock: Clock, log: EventLog) -> AsrStage:
    """The pipeline's entry point (speech.pipeline): uses asr_model, asr_policy, source, vad."""
    typed = config.asr_options  # speech.options.AsrOptions
    options = AsrOptions(update_s=typed.update_s, vad=VadConfig() if config.vad else None,
                         **{k: getattr(typed, k) for k in SEGMENT_START_KEYS})
    # The adaptive step decides on measured compute time; on the simulated clock that would make
    # the computation-unaware figures depend on the machine's load, so it is live-only by default.
    if not (clock.realtime if typed.adaptive is None else typed.adaptive):
        options.max_behind_s = float("inf")
    model, local = recognizer_name(config.asr_model)
    return create_asr_stage(registry, model, config.asr_policy, config.source, clock, log, options,
                            recognizer_options={**local, **recognizer_options(registry, model, typed)})


def recognizer_options(registry: Registry, model: str, typed: Any) -> dict[str, Any]:
    """The recogniser's config overrides from AsrOptions: its `engine` options, and `device` for
    the recognisers that have one (the others run on the CPU whatever is asked)."""
    options = dict(typed.engine)
    if typed.device != "cpu" and "device" not in options:
        if "device" in registry.option_names("recognizer", model):
            options["device"] = typed.device
    return options


def recognizer_name(asr_model: str) -> tuple[str, dict[str, Any]]:
    """(registered recogniser, config overrides) for an `asr_model`: a registered name as it is; a
    path (a local CTranslate2 Whisper folder) as "whisper-base" with `model=PATH`."""
    if "/" in asr_model or asr_model.startswith(("~", ".")):
        return "whisper-base", {"model": asr_model}
    return asr_model, {}
