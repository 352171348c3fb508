"""Assembles a session from a configuration: source -> ASR -> translate -> TTS -> codec -> sink.

Each stage folder provides `build_stage(registry, config, clock, log) -> Stage` in its `stage`
module; this module only chains them. A stage folder that a configuration does not use is never
imported.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from .channel import Channel
from .clock import Clock, SimulatedClock
from .events import EventLog
from .registry import Registry
from .session import Link, Session
from .stage import Stage


@dataclass
class PipelineConfig:
    """Everything that chooses how one stream is processed. Defaults are the embedded models."""

    source: str = "en"
    target: str = "es"
    # recognition
    asr_model: str = "whisper-base"
    asr_policy: str = "default"  # "default": the best measured policy for the model
    chunk_ms: int = 100  # how the source is fed
    vad: bool = True
    # translation ("default": the best measured backend for the pair)
    mt_backend: str = "default"
    mt_policy: str = "default"
    # synthesis ("default": the registry's voice for the target language)
    voice: str = "default"
    # output codec: "pcm16" or "opus"
    codec: str = "pcm16"
    codec_rate: int = 24000
    codec_bitrate: int = 24000
    # which stages run: "asr", "mt", "tts", "codec"
    stages: tuple[str, ...] = ("asr", "mt", "tts")
    extra: dict[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> "PipelineConfig":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


STAGE_MODULES = {
    "asr": "speech.asr.stage",
    "mt": "speech.translate.stage",
    "tts": "speech.tts.stage",
    "codec": "speech.codecs.stage",
}

# Back-pressure (BLOCK) on every link: nothing committed may be lost. A live microphone source
# chooses its own overflow policy on the first link (see speech.demo.mic).
DEFAULT_LINK = Link(maxsize=32)


def build_stages(registry: Registry, config: PipelineConfig, clock: Clock, log: EventLog) -> list[Stage]:
    stages: list[Stage] = []
    for name in config.stages:
        try:
            module = importlib.import_module(STAGE_MODULES[name])
        except KeyError:
            raise ValueError(f"unknown stage {name!r}; stages: {', '.join(STAGE_MODULES)}") from None
        stages.append(module.build_stage(registry, config, clock, log))
    return stages


def build_session(
    registry: Registry,
    config: PipelineConfig,
    source: Callable[[Channel[Any]], Awaitable[None]],
    sink: Callable[[Channel[Any]], Awaitable[None]],
    clock: Clock | None = None,
    log: EventLog | None = None,
    first_link: Link | None = None,
) -> Session:
    clock = clock or SimulatedClock()
    log = log if log is not None else EventLog()
    log.meta(config=config.to_json(), clock="wall" if clock.realtime else "simulated")
    stages = build_stages(registry, config, clock, log)
    links = [first_link or DEFAULT_LINK] + [DEFAULT_LINK] * len(stages)
    return Session(stages, source, sink, clock=clock, log=log, links=links)
