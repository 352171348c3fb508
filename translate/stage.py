"""The "mt" pipeline stage: ASR TextUpdates in, target TextUpdates out (see simultaneous.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from speech.calls import model_call
from speech.channel import Channel
from speech.clock import Clock, StageClock
from speech.events import EventLog
from speech.registry import Registry
from speech.types import TextUpdate

from .backends import default_policy, default_policy_options
from .chain import ChainStream
from .graph import Route, resolve
from .hypothesis import TranslationStream
from .segment import SentenceSegmenter
from .simultaneous import Emitted, SimultaneousTranslation


def open_translation(
    registry: Registry,
    source: str,
    target: str,
    backend: str = "default",
    policy: str = "default",
    backend_options: dict[str, Any] | None = None,
    policy_options: dict[str, Any] | None = None,
    examples: tuple[tuple[str, str], ...] | None = None,
    max_sentence_words: int = 40,
) -> SimultaneousTranslation:
    """One stream's translator: the engines come shared from the registry, the state is new.

    `backend`: "default" (the best measured installed path, graph.py), one engine's name, or a
    path (`bergamot:en-pt,apertium:pt-es`); a path is checked before any engine loads.
    """
    stream, route = open_stream(registry, source, target, backend, backend_options, examples)
    if policy == "default":
        policy = default_policy(route.backend)
        policy_options = {**default_policy_options(route.backend), **(policy_options or {})}
    try:
        rule = registry.create("mt-policy", policy, **(policy_options or {}))
    except BaseException:
        stream.close()
        raise
    return SimultaneousTranslation(stream, rule, language=target, segmenter=SentenceSegmenter(max_sentence_words))


def open_stream(
    registry: Registry,
    source: str,
    target: str,
    backend: str = "default",
    backend_options: dict[str, Any] | None = None,
    examples: tuple[tuple[str, str], ...] | None = None,
) -> tuple[TranslationStream, Route]:
    """The translation stream for `backend` (one engine, or a ChainStream for a path) and its route.

    Options go to every hop whose engine knows them; one that no hop knows is an error. Few-shot
    `examples` are for the pair itself, so only a one-hop path gets them.
    """
    options = backend_options or {}
    route = resolve(registry, source, target, backend, options)
    known: set[str] = set()
    for engine in {e.engine for e in route.path}:
        known |= {f.name for f in dataclasses.fields(registry.config("translator", engine))}
    unknown = set(options) - known
    if unknown and len(route.path) > 1:
        raise TypeError(f"no translator of {route.spec} has option(s) {sorted(unknown)}; options: {sorted(known)}")
    hops: list[TranslationStream] = []
    try:
        for edge in route.path:
            own = options if len(route.path) == 1 else {k: v for k, v in options.items()
                                                        if k in {f.name for f in dataclasses.fields(registry.config("translator", edge.engine))}}
            engine = registry.create("translator", edge.engine, **own)
            hops.append(engine.open(edge.source, edge.target, examples if len(route.path) == 1 else None))
    except BaseException:
        for hop in hops:
            hop.close()
        raise
    return (hops[0] if len(hops) == 1 else ChainStream(hops)), route


@dataclass
class TranslateStage:
    translation: SimultaneousTranslation
    clock: StageClock
    log: EventLog
    name: str = "mt"
    # Longest a translator call may take (one update, or finishing a sentence) before the session
    # ends with ModelCallTimeout; None: no limit. A sentence end on Gemma takes 1-3 s on 2 cores.
    call_timeout_s: float | None = 60.0
    compute_s: float = 0.0
    emitted: int = 0
    _last_source_time: float = field(default=0.0, repr=False)
    # when the newest source word read so far was spoken (its end), for the listener's lag
    _spoken_time: float | None = field(default=None, repr=False)

    async def run(self, inbox: Channel[TextUpdate], outbox: Channel[TextUpdate]) -> None:
        ended = False
        try:
            async for update in inbox:
                self._last_source_time = update.source_time
                self._spoken_time = spoken_time(update, self._spoken_time)
                if not (update.committed or update.final or update.end_of_stream):
                    continue  # only the source's tentative tail changed: nothing to translate
                self.clock.begin(update.wall_time)
                emitted = await self._call(self.translation.step, update)
                if update.end_of_stream:
                    emitted += await self._call(self.translation.finish_steps, update.source_time)
                    ended = True
                await self._emit(emitted, update.source_time, outbox)
                if ended:
                    break
            if not ended:  # the ASR closed without an end-of-stream update: flush anyway
                self.clock.begin(self.clock.now())
                flushed = await self._call(self.translation.finish_steps, self._last_source_time)
                await self._emit(flushed, self._last_source_time, outbox)
        finally:
            self.log.write(
                "stats", stage="mt", compute_s=round(self.compute_s, 4), updates=self.emitted,
                sentences=self.translation.sentences, loops=self.translation.loops, copies=self.translation.copies,
                forced_segments=self.translation.segmenter.forced,
            )
            self.translation.stream.close()

    async def _call(self, fn, *args):  # noqa: ANN001, ANN202 - a bound method of the translation
        return await model_call(fn, *args, timeout_s=self.call_timeout_s, what=f"the translator ({fn.__name__})")

    async def _emit(self, emitted: list[Emitted], source_time: float, outbox: Channel[TextUpdate]) -> None:
        wall = self.clock.end()
        for e in emitted:
            self.compute_s += e.stats.ms / 1000
            u = dataclasses.replace(e.update, source_time=source_time, wall_time=wall, spoken_time=self._spoken_time)
            self.log.update("mt", u, tokens_evaluated=e.stats.tokens_evaluated, update_ms=round(e.stats.ms, 2))
            self.emitted += 1
            await outbox.put(u)


def spoken_time(update: TextUpdate, previous: float | None) -> float | None:
    """When the newest committed source word was spoken: its end from the recogniser's word
    timestamps; the source seconds consumed where a recogniser gives no word times."""
    ends = [w.end for w in update.committed if w.end is not None]
    if ends:
        return max(ends + ([previous] if previous is not None else []))
    if update.committed:
        return update.spoken_time if update.spoken_time is not None else update.source_time
    return previous


def build_stage(registry: Registry, config, clock: Clock, log: EventLog) -> TranslateStage:  # noqa: ANN001
    """The "mt" stage for a speech.pipeline.PipelineConfig (options: config.mt_options, a
    speech.options.MtOptions: engine and policy options, and the device of an LLM translator)."""
    typed = config.mt_options
    backend = config.mt_backend  # "default", one engine, or a path (graph.py)
    backend_options = dict(typed.engine)
    if backend.endswith(".gguf"):  # a local GGUF file: the "gguf" translator with model=PATH
        backend, backend_options = "gguf", {"model": backend, **backend_options}
    if typed.device != "cpu":  # only the engines with a device option (an LLM): Apertium and Bergamot run on the CPU
        engines = {e.engine for e in resolve(registry, config.source, config.target, backend, backend_options).path}
        if any("device" in registry.option_names("translator", e) for e in engines):
            backend_options.setdefault("device", typed.device)
    translation = open_translation(
        registry, config.source, config.target, backend, config.mt_policy,
        backend_options=backend_options, policy_options=dict(typed.policy) or None,
    )
    # Engines that load on their first call (Bergamot's model, Apertium's programs) load now, before
    # the session's clock runs, not on the speaker's first words.
    warm_up = getattr(getattr(translation, "stream", None), "warm_up", None)
    if warm_up is not None:
        warm_up()
    return TranslateStage(translation, clock.stage("mt"), log)
