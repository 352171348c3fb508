"""Typed options of each stage, the fields of `PipelineConfig` that are not a backend name.

Each class is a frozen dataclass checked when it is made: a value of the wrong type or out of range
raises `speech.errors.ConfigError` naming the key (dotted, as in a configuration file) and what is
allowed. A mapping (a TOML table, a JSON object) becomes the dataclass through `from_mapping`, which
also rejects unknown keys. Engine options (`engine`) are checked against the chosen engine's own
typed configuration when the stage is built, since which engine runs is known only then: the
registry passes them through `from_mapping` too (`"none"` for an optional field, a bad value named
as `synthesizer kokoro.window_s`).

This module imports nothing heavy: `import speech` must stay cheap.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, TypeVar

from .errors import ConfigError

DEVICES = ("cpu", "cuda", "auto")
Device = Literal["cpu", "cuda", "auto"]
T = TypeVar("T")


def from_mapping(cls: type[T], data: Mapping[str, Any] | T, where: str = "") -> T:
    """`cls(**data)` for a dataclass `cls`, with unknown keys and bad values named by `where.key`."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ConfigError(where.rstrip(".") or cls.__name__, f"expected a table of {_keys(cls)}", data)
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    for key in data:
        if key not in known:
            raise ConfigError(f"{where}{key}", f"unknown key; allowed: {_keys(cls)}")
    values = {k: _coerce(v, _hints(cls)[k], f"{where}{k}") for k, v in data.items()}
    try:
        return cls(**values)
    except ConfigError as e:
        if where and not e.key.startswith(where):
            raise ConfigError(f"{where}{e.key}", e.allowed, e.got) from None
        raise


def check_fields(obj: Any, where: str = "") -> None:
    """Check (and normalise: int -> float, list -> tuple, table -> dataclass) every field of `obj`
    against its annotation; raises ConfigError naming `where.field`."""
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        new = _coerce(value, hints[f.name], f"{where}{f.name}")
        if new is not value:
            object.__setattr__(obj, f.name, new)


def check_range(key: str, value: float | None, low: float | None = None, high: float | None = None,
                low_open: bool = False) -> None:
    """Raise ConfigError unless low <= value <= high (low < value with `low_open`); None passes."""
    if value is None:
        return
    bad_low = low is not None and (value <= low if low_open else value < low)
    bad_high = high is not None and value > high
    if bad_low or bad_high:
        above = f"{'>' if low_open else '>='} {low}"
        if high is None:
            allowed = f"must be {above}"
        elif low is None:
            allowed = f"must be <= {high}"
        else:
            allowed = f"must be {above} and <= {high}"
        raise ConfigError(key, allowed, value)


@dataclass(frozen=True)
class AsrOptions:
    """Options of the recogniser stage (`[asr_options]` in a configuration file).

    - `device`: where the recogniser runs: "cpu", "cuda" (an error when CTranslate2 sees no GPU),
      or "auto" (CUDA when present, else the CPU).
    - `update_s`: seconds of new audio between decodes; None keeps the model's own (whisper-base
      1.0, whisper-tiny.en 0.5).
    - `segment_start`: how a speech segment starts (docs/asr.md, "A segment's first words"): on,
      decode steps are counted from the segment's first audio, the warm-up decode counts for the
      commit policy's agreement, and after it the step is `first_update_s` (never longer than
      `update_s`) until the segment has committed `first_update_words` words; None: as measured
      for the source language (on for English).
    - `adaptive`: lengthen the update step when decoding falls behind; None: on for the wall clock
      only (on the simulated clock it would make latency figures depend on the machine's load).
    - `engine`: options of the recogniser's own configuration (for example `cpu_threads`,
      `compute_type`, `beam_size` for Whisper), checked when the stage is built.
    """

    device: Device = "cpu"
    update_s: float | None = None
    segment_start: bool | None = None
    first_update_s: float = 0.5
    first_update_words: int = 3
    adaptive: bool | None = None
    engine: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_fields(self, "asr_options.")
        check_range("asr_options.update_s", self.update_s, 0.0, 30.0, low_open=True)
        check_range("asr_options.first_update_s", self.first_update_s, 0.0, 30.0, low_open=True)
        check_range("asr_options.first_update_words", self.first_update_words, 1, 100)


@dataclass(frozen=True)
class MtOptions:
    """Options of the translation stage (`[mt_options]` in a configuration file).

    - `device`: where an LLM translator runs: "cpu", "cuda" (every layer offloaded by llama.cpp; an
      error when the build cannot offload), or "auto". Apertium and Bergamot always use the CPU.
    - `engine`: options of the translator's own configuration (for example `threads`, `model` for
      the LLM translators), checked when the stage is built.
    - `policy`: options of the commit policy (for example `n` for local-agreement, `k` for
      wait-k), over the measured defaults of the pair's backend.
    """

    device: Device = "cpu"
    engine: dict[str, Any] = field(default_factory=dict)
    policy: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_fields(self, "mt_options.")


@dataclass(frozen=True)
class TtsOptions:
    """Options of the synthesis stage (`[tts_options]` in a configuration file).

    - `engine`: options of the synthesiser's own configuration (for example `speed`), checked
      when the stage is built.
    - `chunker`: how committed words are cut into pieces to speak (`min_words`, `max_words`,
      `timeout_s`, `short_timeout_s`, `cadence`, `first_words`, `lead_words`, `idle_words`), over
      the voice's preferred values.
    - `pace`: duration control when the listener falls behind (`control`, `target_lag_s`,
      `max_speed`, `min_speed`, `pause_ms`, `condense_lag_s`, `relief_lag_s`, ...;
      speech.tts.pace.PaceConfig).
    - `relief_voice`: the cheaper voice that speaks while the main one is too far behind (a
      `--voice` value; "" or "none": none, pieces are skipped instead). The default, "auto", is
      SVOX Pico where it is installed and is not the main voice, else eSpeak NG (both speak every
      target language at almost no compute, Pico more intelligibly but for English, where eSpeak
      NG comes first); where neither is, none.
    """

    engine: dict[str, Any] = field(default_factory=dict)
    chunker: dict[str, Any] = field(default_factory=dict)
    pace: dict[str, Any] = field(default_factory=dict)
    relief_voice: str = "auto"

    def __post_init__(self) -> None:
        check_fields(self, "tts_options.")
        if self.chunker:
            from speech.tts.chunker import ChunkerConfig  # light: text rules only

            object.__setattr__(self, "chunker", _check_table("tts_options.chunker", self.chunker, ChunkerConfig))
        if self.pace:
            from speech.tts.pace import PaceConfig

            object.__setattr__(self, "pace", _check_table("tts_options.pace", self.pace, PaceConfig))


def _check_table(key: str, table: dict[str, Any], cls: type) -> dict[str, Any]:
    """`table` with its values as the fields of the dataclass `cls` take them ("none" as None
    where a field may be None); ConfigError on a key `cls` lacks or a value it refuses."""
    try:
        checked = from_mapping(cls, table, f"{key}.")
    except ConfigError:
        raise
    except (TypeError, ValueError) as e:  # a check of `cls` itself (a range, an order of levels)
        raise ConfigError(key, str(e)) from None
    return {name: getattr(checked, name) for name in table}


OPUS_APPLICATIONS = ("lowdelay", "voip", "audio")


@dataclass(frozen=True)
class CodecOptions:
    """Options of the codec stage beyond `codec`, `codec_rate` and `codec_bitrate`
    (`[codec_options]` in a configuration file).

    - `frame_ms`: packet length in milliseconds (Opus: 2.5, 5, 10, 20, 40 or 60).
    - `application`: the Opus mode: "lowdelay" (CELT only), "voip" or "audio".
    - `complexity`: Opus encoder complexity, 0 (cheapest) to 10.
    """

    frame_ms: float = 20.0
    application: Literal["lowdelay", "voip", "audio"] = "lowdelay"
    complexity: int = 5

    def __post_init__(self) -> None:
        check_fields(self, "codec_options.")
        check_range("codec_options.frame_ms", self.frame_ms, 2.5, 60.0)
        check_range("codec_options.complexity", self.complexity, 0, 10)


# Old untyped `PipelineConfig.extra` keys -> (options field, key in it; "" = the whole mapping).
EXTRA_KEYS: dict[str, tuple[str, str]] = {
    "asr_update_s": ("asr_options", "update_s"),
    "asr_adaptive": ("asr_options", "adaptive"),
    "asr_options": ("asr_options", "engine"),  # e.g. {"batch_sessions": 4} (docs/deploy.md)
    "mt_options": ("mt_options", "engine"),
    "tts_options": ("tts_options", "engine"),
    "tts_chunker": ("tts_options", "chunker"),
    "tts_pace": ("tts_options", "pace"),
    "codec_options": ("codec_options", ""),
}


def apply_extra(config: Any) -> None:
    """Move the known keys of a `PipelineConfig.extra` onto the typed options (compatibility);
    other keys stay in `extra`."""
    extra = dict(config.extra)
    for old, (name, key) in EXTRA_KEYS.items():
        if old not in extra:
            continue
        value = extra.pop(old)
        options = getattr(config, name)
        where = f"extra.{old}"
        if key == "":
            changes = _mapping(value, where)
        elif key in ("engine", "chunker", "pace"):
            changes = {key: {**getattr(options, key), **_mapping(value, where)}}
        else:
            changes = {key: None if key == "update_s" and not value else value}
        current = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
        object.__setattr__(config, name, from_mapping(type(options), {**current, **changes}, f"{name}."))
    object.__setattr__(config, "extra", extra)


def check_value(value: Any, typ: Any, key: str) -> Any:
    """`value` as the annotation `typ` (numbers widened, lists to tuples, tables to dataclasses);
    ConfigError naming `key` otherwise."""
    return _coerce(value, typ, key)


def _mapping(value: Any, where: str) -> dict:
    if not isinstance(value, Mapping):
        raise ConfigError(where, "expected a table of options", value)
    return dict(value)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _keys(cls: type) -> str:
    return ", ".join(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]


def _coerce(value: Any, typ: Any, key: str) -> Any:
    """`value` as `typ` (numbers widened, sequences to tuples, tables to dataclasses), else ConfigError."""
    origin = typing.get_origin(typ)
    args = typing.get_args(typ)
    if typ is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        if type(None) in args and str not in args and isinstance(value, str) and value.strip().lower() == "none":
            return None  # TOML has no null
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return _coerce(value, option, key)
            except ConfigError as e:
                errors.append(e.allowed)
        allowed = " or ".join(errors) + (' or "none"' if type(None) in args else "")
        raise ConfigError(key, allowed, value)
    if origin is Literal:
        if value in args:
            return value
        raise ConfigError(key, f"expected one of {', '.join(map(str, args))}", value)
    if typ is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(key, "expected true or false", value)
    if typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(key, "expected a whole number", value)
    if typ is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(key, "expected a number", value)
    if typ is str:
        if isinstance(value, str):
            return value
        raise ConfigError(key, "expected text", value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(key, "expected a list", value)
        item = args[0] if args else Any
        out = tuple(_coerce(v, item, f"{key}[{i}]") for i, v in enumerate(value))
        return value if isinstance(value, tuple) and out == value else out
    if origin is dict or typ is dict:
        if isinstance(value, Mapping):
            return value if isinstance(value, dict) else dict(value)
        raise ConfigError(key, "expected a table", value)
    if dataclasses.is_dataclass(typ):
        return from_mapping(typ, value, f"{key}.")
    return value


@dataclass(frozen=True)
class ServerOptions:
    """Options of `speech serve` and `speech.serve` (`[server]` in a configuration file).

    - `host`, `port`: where to listen (port 0 picks a free one).
    - `token`: clients must send it in their hello (empty: no check).
    - `max_sessions`: concurrent sessions.
    - `allow_origins`: browser origins allowed besides the server's own.
    - `warm_up`: "SRC:TGT" whose models load before clients are accepted, or "none".
    - `log_dir`: write one event log per session here (None: no logs).
    - `fast_english`: sessions whose hello says English use whisper-tiny.en.
    - `resume_grace`: seconds a dropped speaker may resume its session (0: no resume).
    - `max_listeners`: listener connections per session.
    - `replica_id`: this server's name among replicas behind a load balancer (letters, digits).
    - `engine`: "plain" (this process serves) or "ray" (a Ray Serve deployment of replicas).
    - `ray_max_replicas`, `ray_replica_cpus`: with the "ray" engine, the replicas autoscaling may
      reach and the CPUs each reserves (0: every core of its node).
    """

    host: str = "127.0.0.1"
    port: int = 8765
    token: str = ""
    max_sessions: int = field(default_factory=lambda: _machine_sessions())
    allow_origins: tuple[str, ...] = ()
    warm_up: str = "en:es"
    log_dir: str | None = None
    fast_english: bool = False
    resume_grace: float = 30.0
    max_listeners: int = 100
    replica_id: str = ""
    engine: Literal["plain", "ray"] = "plain"
    ray_max_replicas: int = 1
    ray_replica_cpus: int = 0

    def __post_init__(self) -> None:
        check_fields(self, "server.")
        if self.replica_id and not self.replica_id.isalnum():
            raise ConfigError("server.replica_id", "letters and digits only", self.replica_id)
        check_range("server.ray_max_replicas", self.ray_max_replicas, 1, None)
        check_range("server.ray_replica_cpus", self.ray_replica_cpus, 0, None)
        check_range("server.port", self.port, 0, 65535)
        check_range("server.max_sessions", self.max_sessions, 1, None)
        check_range("server.resume_grace", self.resume_grace, 0, None)
        check_range("server.max_listeners", self.max_listeners, 0, None)
        if self.warm_up.lower() != "none":
            src, sep, tgt = self.warm_up.partition(":")
            if not (sep and src and tgt):
                raise ConfigError("server.warm_up", "expected SRC:TGT (for example en:es) or none", self.warm_up)

    @property
    def warm_up_pair(self) -> tuple[str, str] | None:
        """The warm-up pair, or None for "none"."""
        if self.warm_up.lower() == "none":
            return None
        src, _, tgt = self.warm_up.partition(":")
        return src, tgt


def _machine_sessions() -> int:
    """The server's default session cap: what the machine holds in real time (speech.budget)."""
    from .budget import default_max_sessions

    return default_max_sessions()
