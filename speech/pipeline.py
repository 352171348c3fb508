"""Assembles a session from a configuration: source -> ASR -> translate -> TTS -> codec -> sink.

Each stage folder provides `build_stage(registry, config, clock, log) -> Stage` in its `stage`
module; this module only chains them. A stage folder that a configuration does not use is never
imported.

With several targets (`targets=("es", "pt")`) the session is a tree: the recogniser (the trunk)
feeds one translate -> TTS -> codec branch per target, each built from the configuration with its
own `target`, each with its own bounded links and sink (see `speech.session.Backlog` for how a slow
branch holds back only itself). Every record a branch writes to the event log names its `target`.
One target builds the plain chain, exactly as before.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

from .channel import Channel
from .clock import Clock, SimulatedClock
from .errors import ConfigError
from .events import EventLog
from .options import AsrOptions, CodecOptions, MtOptions, TtsOptions, apply_extra, check_fields, check_range
from .registry import Registry
from .session import Branch, Link, Session
from .stage import Stage


@dataclass
class PipelineConfig:
    """Everything that chooses how one stream is processed. Defaults are the embedded models.

    Checked when made (and on `replace`): a wrong type or a value out of range raises
    `speech.errors.ConfigError` naming the key and what is allowed. Stage options are typed
    (`asr_options`, `mt_options`, `tts_options`, `codec_options`); a mapping given for one of them
    (a TOML table) becomes its dataclass. `extra` is kept for compatibility: its known keys
    (`asr_update_s`, `asr_adaptive`, `mt_options`, `tts_options`, `tts_chunker`, `tts_pace`, `codec_options`)
    are moved onto the typed options.
    """

    source: str = "en"
    target: str = "es"
    # several targets at once (one branch each); empty: just `target`
    targets: tuple[str, ...] = ()
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
    asr_options: AsrOptions = field(default_factory=AsrOptions)
    mt_options: MtOptions = field(default_factory=MtOptions)
    tts_options: TtsOptions = field(default_factory=TtsOptions)
    codec_options: CodecOptions = field(default_factory=CodecOptions)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_fields(self)
        apply_extra(self)
        check_range("chunk_ms", self.chunk_ms, 0, 10_000, low_open=True)
        check_range("codec_rate", self.codec_rate, 0, None, low_open=True)
        check_range("codec_bitrate", self.codec_bitrate, 0, None, low_open=True)
        for name in self.stages:
            if name not in STAGE_MODULES:
                raise ConfigError("stages", f"each stage is one of {', '.join(STAGE_MODULES)}", name)

    def replace(self, **changes: Any) -> "PipelineConfig":
        """A copy with `changes` (checked again)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        """Every field as plain JSON data (the options as objects)."""
        return dataclasses.asdict(self)

    @property
    def all_targets(self) -> tuple[str, ...]:
        """The target languages, in order, without repeats (`targets`, else `target`)."""
        return tuple(dict.fromkeys(self.targets)) if self.targets else (self.target,)

    def for_target(self, target: str) -> "PipelineConfig":
        """The configuration of one branch."""
        return self.replace(target=target, targets=(target,))


def parse_targets(text: str) -> tuple[str, ...]:
    """`"es,pt, fr"` -> ("es", "pt", "fr"); repeats removed."""
    targets = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    if not targets:
        raise ValueError(f"no target language in {text!r}; give one or more codes like es,pt")
    return targets


STAGE_MODULES = {
    "asr": "speech.asr.stage",
    "mt": "speech.translate.stage",
    "tts": "speech.tts.stage",
    "codec": "speech.codecs.stage",
}

# Stages that belong to the trunk of a multi-target session (everything else is per target).
TRUNK_STAGES = ("asr",)

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


Sink = Callable[[Channel[Any]], Awaitable[None]]


def build_session(
    registry: Registry,
    config: PipelineConfig,
    source: Callable[[Channel[Any]], Awaitable[None]],
    sink: Sink | Mapping[str, Sink],
    clock: Clock | None = None,
    log: EventLog | None = None,
    first_link: Link | None = None,
) -> Session:
    """`sink`: one sink, or one per target (`{"es": sink_es, "pt": sink_pt}`) for several targets.
    With `config.source == "auto"` a `DetectingSession` (speech.auto_source): the language is told
    from the first speech, and the session for that language is built once it is known."""
    clock = clock or SimulatedClock()
    log = log if log is not None else EventLog()
    if config.source == "auto" and "asr" in config.stages:
        from .auto_source import DetectingSession

        return DetectingSession(registry, config, source, sink, clock, log, first_link)  # type: ignore[return-value]
    targets = config.all_targets
    sinks = dict(sink) if isinstance(sink, Mapping) else None
    if sinks is not None and set(sinks) != set(targets):
        raise ValueError(f"sinks for {sorted(sinks)} but targets {list(targets)}")
    log.meta(config=config.to_json(), clock="wall" if clock.realtime else "simulated")
    trunk_names = tuple(s for s in config.stages if s in TRUNK_STAGES)
    branch_names = tuple(s for s in config.stages if s not in TRUNK_STAGES)
    if len(targets) == 1 or not branch_names:
        # the plain chain; its per-target records still name the target
        one = config.for_target(targets[0])
        trunk = build_stages(registry, one.replace(stages=trunk_names), clock, log)
        rest = build_stages(registry, one.replace(stages=branch_names), clock, BranchLog(log, targets[0]))
        by_name = dict(zip(trunk_names + branch_names, trunk + rest))
        stages = [by_name[name] for name in config.stages]
        links = [first_link or DEFAULT_LINK] + [DEFAULT_LINK] * len(stages)
        only = sinks[targets[0]] if sinks is not None else sink
        return Session(stages, source, only, clock=clock, log=log, links=links)  # type: ignore[arg-type]
    if config.stages[: len(trunk_names)] != trunk_names:
        raise ValueError(f"stages {config.stages}: the recogniser must come first in a multi-target session")
    if sinks is None:
        raise ValueError(f"{len(targets)} targets need one sink per target")
    trunk = build_stages(registry, config.replace(stages=trunk_names), clock, log)
    branches = []
    for target in targets:
        stages = build_stages(registry, config.for_target(target).replace(stages=branch_names), clock,
                              BranchLog(log, target))
        branches.append(Branch(target, stages, sinks[target], links=[DEFAULT_LINK] * (len(stages) + 1)))
    links = [first_link or DEFAULT_LINK] + [DEFAULT_LINK] * len(trunk)
    return Session(trunk, source, None, clock=clock, log=log, links=links, branches=branches)


class BranchLog:
    """The event log as one branch sees it: every record it writes names the branch's `target`."""

    def __init__(self, log: EventLog, target: str) -> None:
        self.log = log
        self.target = target

    def write(self, kind: str, **fields: Any) -> dict:
        return self.log.write(kind, **fields, target=self.target)

    update = EventLog.update
    audio = EventLog.audio

    def meta(self, **config: Any) -> dict:
        return self.log.meta(**config)

    @property
    def records(self) -> list[dict]:
        return self.log.records

    @property
    def path(self):  # noqa: ANN201 - the parent's
        return self.log.path

    def close(self) -> None:
        """The session's owner closes the log, not a branch."""
