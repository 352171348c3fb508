"""The real pipeline factory: one registry (so one copy of each loaded model) per server process."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

import numpy as np

from ..channel import Channel
from ..clock import Clock, SimulatedClock
from ..events import EventLog
from ..pipeline import PipelineConfig, Sink, build_session
from ..registry import Registry
from ..session import Session
from ..types import AudioChunk
from .protocol import Hello


@dataclass
class RealPipeline:
    """Builds `asr -> (mt -> tts [-> codec]) per target` per session from `base` and the hello.

    The recogniser is `base.asr_model` (multilingual by default, so any source language works);
    `english_asr_model`, when the operator sets one (e.g. whisper-tiny.en, for speed), replaces it
    for sessions whose hello says the speaker speaks English.
    """

    registry: Registry
    base: PipelineConfig
    english_asr_model: str | None = None
    _languages: dict[str, list[dict[str, str]]] | None = field(default=None, init=False, repr=False)

    def config_for(self, hello: Hello) -> PipelineConfig:
        # pcm16 output is converted by the server itself; Opus needs the codec stage.
        stages = ("asr", "mt", "tts") + (("codec",) if hello.output_codec == "opus" else ())
        targets = hello.all_targets
        asr = self.english_asr_model if hello.source == "en" and self.english_asr_model else self.base.asr_model
        return self.base.replace(source=hello.source, target=targets[0], targets=targets if len(targets) > 1 else (),
                                 stages=stages, codec=hello.output_codec, asr_model=asr)

    def __call__(
        self,
        hello: Hello,
        source: Callable[[Channel[Any]], Awaitable[None]],
        sink: Sink | Mapping[str, Sink],
        clock: Clock,
        log: EventLog,
    ) -> Session:
        return build_session(self.registry, self.config_for(hello), source, sink, clock=clock, log=log)

    def languages(self) -> dict[str, list[dict[str, str]]]:
        """What a speaker may ask for here (`GET /languages`, the page's pickers)."""
        if self._languages is None:
            self._languages = served_languages(self.registry, self.base)
        return self._languages

    async def warm_up(self, hello: Hello, seconds: float = 1.5) -> None:
        """Run a short silent stream so every model is loaded before the first client waits."""
        rng = np.random.default_rng(0)
        samples = (rng.standard_normal(int(16000 * seconds)) * 1e-3).astype(np.float32)

        async def source(outbox: Channel[AudioChunk]) -> None:
            await outbox.put(AudioChunk(samples, 16000, 0.0, 0, wall_time=seconds))

        async def sink(inbox: Channel[Any]) -> None:
            async for _ in inbox:
                pass

        session = self(hello, source, {t: sink for t in hello.all_targets}, SimulatedClock(), EventLog(keep=False))
        await session.run()


def served_languages(registry: Registry, base: PipelineConfig) -> dict[str, list[dict[str, str]]]:
    """Source and target languages a session can take: each language with an installed path out
    of it, and every language such a path reaches (for an operator's fixed path, its two ends; for
    one engine, its own pairs), sources limited to English when the recogniser is English-only.
    Each as {"code", "name"}, in the order of the language table; "pairs" maps each source to
    the targets it reaches."""
    from speech.asr.stage import recognizer_name
    from speech.translate.graph import MAX_HOPS, installed_edges, is_path_spec, parse_path, reachable
    from speech.translate.languages import NAMES

    backend = base.mt_backend
    if is_path_spec(backend):
        path = parse_path(backend)
        reach = {path[0].source: {path[-1].target}}
    else:
        # one engine asked for translates its own pairs, directly; an engine that does not list
        # its pairs (a model of the user's) is not narrowed down
        one = backend != "default" and ("translator", backend) in registry.specs
        edges = installed_edges(registry, (backend,)) if one else []
        hops = 1 if edges else MAX_HOPS
        edges = edges or installed_edges(registry)
        reach = {s: reachable(edges, s, hops) for s in {e.source for e in edges}}
    model, local = recognizer_name(base.asr_model)
    config = registry.config("recognizer", model, **local) if ("recognizer", model) in registry.specs else None
    if config is not None and getattr(config, "language", "en") == "en":
        reach = {s: t for s, t in reach.items() if s == "en"}  # an English-only recogniser
    targets = set().union(*reach.values()) if reach else set()

    def listed(codes: set[str]) -> list[dict[str, str]]:
        return [{"code": c, "name": NAMES[c]} for c in NAMES if c in codes]

    sources = listed({s for s, t in reach.items() if t})
    return {"sources": sources, "targets": listed(targets),
            "pairs": {s["code"]: [t["code"] for t in listed(reach[s["code"]])] for s in sources}}


def load_factory(ref: str, registry: Registry, base: PipelineConfig) -> Any:
    """`module:function` -> function(registry, base) returning a PipelineFactory (tests, custom stacks)."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"--pipeline must look like 'package.module:function', got {ref!r}")
    try:
        make = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"--pipeline {ref}: cannot load it ({e})") from None
    return make(registry, base)
