"""The real pipeline factory: one registry (so one copy of each loaded model) per server process."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

import numpy as np

from ..channel import Channel
from ..clock import Clock, SimulatedClock
from ..events import EventLog
from ..languages import served_languages
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
