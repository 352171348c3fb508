"""The effective configuration of a command: defaults < the command's defaults < `--config FILE` < flags.

A configuration file (TOML, or JSON) holds the same keys as the Python API: the fields of
`PipelineConfig` at the top level, its stage options as tables (`[asr_options]`, `[mt_options]`,
`[tts_options]`, `[codec_options]`) and the server's options as `[server]` (`ServerOptions`). Each
value remembers where it came from, so `speech config show` can say it. A bad key or value is one
line naming the file (or flag), the key and what is allowed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError
from .options import ServerOptions

# Keys that are tables of a dataclass (flattened one level: "asr_options.device").
TABLES = ("asr_options", "mt_options", "tts_options", "codec_options", "server")
NOT_IN_FILES = {"extra"}  # the untyped compatibility mapping: not a configuration file key


def _none_if_zero(v: Any) -> Any:
    return None if not v else v


def _text_or_none(v: Any) -> Any:
    return None if v is None else str(v)


def lag_levels(target_lag_s: float) -> dict[str, float]:
    """The duration control's levels for a target lag: condensation at least 3 s above it, the
    relief voice at least 7 s above it, skipping at least 12 s above it (never below their
    defaults, 6, 10 and 15 s; speech.tts.pace)."""
    return {"target_lag_s": target_lag_s, "condense_lag_s": max(6.0, target_lag_s + 3.0),
            "relief_lag_s": max(10.0, target_lag_s + 7.0), "skip_lag_s": max(15.0, target_lag_s + 12.0)}


def _target_lag(v: Any) -> dict[str, Any]:
    return {f"tts_options.pace.{k}": x for k, x in lag_levels(v).items()}


# argparse dest -> (dotted keys it sets, conversion of the flag's value; a dict: key -> value).
# Keys with two dots are entries of an options mapping (tts_options.pace.max_speed).
FLAG_KEYS: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "source": (("source",), lambda v: v),
    "target": (("target",), lambda v: v),
    "asr_model": (("asr_model",), lambda v: v),
    "mt_backend": (("mt_backend",), lambda v: v),
    "voice": (("voice",), lambda v: v),
    "codec": (("codec",), lambda v: v),
    "codec_rate": (("codec_rate",), lambda v: v),
    "bitrate": (("codec_bitrate",), lambda v: v),
    "device": (("asr_options.device", "mt_options.device"), lambda v: v),
    "asr_update_s": (("asr_options.update_s",), _none_if_zero),
    "host": (("server.host",), lambda v: v),
    "port": (("server.port",), lambda v: v),
    "token": (("server.token",), lambda v: v),
    "max_sessions": (("server.max_sessions",), lambda v: {} if v is None else {"server.max_sessions": v}),
    "allow_origin": (("server.allow_origins",), lambda v: tuple(v or ())),
    "warm_up": (("server.warm_up",), lambda v: v),
    "log_dir": (("server.log_dir",), _text_or_none),
    "fast_english": (("server.fast_english",), lambda v: v),
    "resume_grace": (("server.resume_grace",), lambda v: v),
    "max_listeners": (("server.max_listeners",), lambda v: v),
    "replica_id": (("server.replica_id",), lambda v: v),
    "engine": (("server.engine",), lambda v: v),
    "ray_max_replicas": (("server.ray_max_replicas",), lambda v: v),
    "ray_replica_cpus": (("server.ray_replica_cpus",), lambda v: v),
    "target_lag": (("tts_options.pace.target_lag_s", "tts_options.pace.condense_lag_s", "tts_options.pace.relief_lag_s",
                    "tts_options.pace.skip_lag_s"),
                   _target_lag),
    "max_speed": (("tts_options.pace.max_speed",), lambda v: {} if v is None else {"tts_options.pace.max_speed": v}),
    "no_pace_control": (("tts_options.pace.control",), lambda v: not v),
}


@dataclass
class Effective:
    """A command's configuration and where each value came from (dotted key -> origin)."""

    config: Any  # PipelineConfig
    server: ServerOptions
    origins: dict[str, str]

    def items(self) -> list[tuple[str, Any, str]]:
        """(dotted key, value, origin) for every key, in declaration order."""
        out = []
        for key, value in _flatten(self.config).items():
            if key not in NOT_IN_FILES:
                out.append((key, value, self.origin(key)))
        for key, value in _flatten(self.server, "server.").items():
            out.append((key, value, self.origin(key)))
        return out

    def origin(self, key: str) -> str:
        """Where `key` came from; for a mapping set entry by entry, where its entries came from."""
        return _origin(self.origins, key)


def load_file(path: str | Path) -> dict[str, Any]:
    """The key -> value mapping of a configuration file, keys checked (values: when combined)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(p), "no such configuration file", message=f"{p}: no such configuration file") from None
    except OSError as e:
        raise ConfigError(str(p), "", message=f"{p}: cannot read it ({e.strerror or e})") from None
    try:
        if p.suffix == ".json":
            data = json.loads(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except ValueError as e:
        kind = "JSON" if p.suffix == ".json" else "TOML"
        raise ConfigError(str(p), "", message=f"{p}: not valid {kind} ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(str(p), "", message=f"{p}: expected a table of configuration keys")
    allowed = _allowed_keys()
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key not in allowed:
            raise ConfigError(key, f"unknown key; allowed: {', '.join(allowed)}").within(str(p))
        if key in TABLES:
            if not isinstance(value, dict):
                raise ConfigError(key, "expected a table ([" + key + "])", value).within(str(p))
            fields = _table_fields(key)
            for sub, v in value.items():
                if sub not in fields:
                    raise ConfigError(f"{key}.{sub}", f"unknown key; allowed: {', '.join(fields)}").within(str(p))
                flat[f"{key}.{sub}"] = v
        else:
            flat[key] = value
    return flat


def resolve(command: str, args: argparse.Namespace, fixed: dict[str, Any] | None = None) -> Effective:
    """The effective configuration of `speech COMMAND` from its parsed `args`.

    Layers, later wins: PipelineConfig and ServerOptions defaults; `fixed` (what the command always
    sets) and the defaults of its flags; the file of `args.config`; the flags given on the command
    line (`args._given`, filled by speech.cli). Raises ConfigError naming the origin of a bad value.
    """
    from .pipeline import PipelineConfig

    values = {**_flatten(PipelineConfig()), **_flatten(ServerOptions(), "server.")}
    origins = {key: "default" for key in values}

    def put(key: str, value: Any, origin: str) -> None:
        if key.count(".") == 2:  # an entry of an options mapping: merged into it
            table = key.rpartition(".")[0]
            values[table] = {**values[table], key.rpartition(".")[2]: value}
        else:
            values[key] = value
        origins[key] = origin

    def flag_values(dest: str) -> dict[str, Any]:
        keys, convert = FLAG_KEYS[dest]
        value = convert(getattr(args, dest))
        return value if isinstance(value, dict) else {key: value for key in keys}

    for key, value in (fixed or {}).items():
        put(key, value, f"speech {command}")
    given = set(getattr(args, "_given", ()))
    for dest in FLAG_KEYS:
        if hasattr(args, dest) and dest not in given:
            for key, value in flag_values(dest).items():
                # Entries of a mapping default to the options' own defaults: nothing to record.
                if key.count(".") < 2 and values[key] != value:
                    put(key, value, f"speech {command}")
    path = getattr(args, "config", None)
    if path:
        for key, value in load_file(path).items():
            put(key, value, str(path))
    for dest in FLAG_KEYS:
        if hasattr(args, dest) and dest in given:
            for key, value in flag_values(dest).items():
                put(key, value, "--" + dest.replace("_", "-"))
    return _build(values, origins)


def _build(values: dict[str, Any], origins: dict[str, str]) -> Effective:
    from .pipeline import PipelineConfig

    nested: dict[str, Any] = {}
    for key, value in values.items():
        table, dot, sub = key.partition(".")
        if dot:
            nested.setdefault(table, {})[sub] = value
        else:
            nested[key] = value
    server = nested.pop("server")
    try:
        config = PipelineConfig(**nested)
        server_options = ServerOptions(**server)
    except ConfigError as e:
        raise e.within(_origin(origins, e.key.split("[")[0])) from None
    return Effective(config, server_options, origins)


def _origin(origins: dict[str, str], key: str) -> str:
    """Where `key` came from; for a mapping, also where its entries set one by one came from."""
    while key not in origins and "." in key and not any(k.startswith(key + ".") for k in origins):
        # an entry of a table set whole (tts_options.pace.relief_rtf): where the table came from
        key = key.rsplit(".", 1)[0]
    found = [origins[key]] if origins.get(key, "default") != "default" else []
    found += sorted({o for k, o in origins.items() if k.startswith(key + ".") and o != "default"} - set(found))
    return ", ".join(found) or "default"


def given_dests(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The argparse dests that `argv` sets explicitly (a flag given with its default value counts)."""
    saved = [(a, a.default) for a in parser._actions]
    saved_defaults = dict(parser._defaults)
    try:
        for action, _ in saved:
            action.default = argparse.SUPPRESS
        parser._defaults.clear()
        ns, _ = parser.parse_known_args(argv)
    except SystemExit:
        return set()
    finally:
        for action, default in saved:
            action.default = default
        parser._defaults.update(saved_defaults)
    return set(vars(ns))


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    """`--config FILE`: a TOML (or JSON) file of the API's keys, under the command line's flags."""
    parser.add_argument("--config", metavar="FILE.toml",
                        help="configuration file: PipelineConfig keys, [asr_options], [mt_options], [tts_options], "
                             "[codec_options], [server] (see `speech config show`); flags given here win")


def add_device_flag(parser: argparse.ArgumentParser) -> None:
    """`--device cpu|cuda|auto` for the recogniser (CTranslate2) and an LLM translator (llama.cpp)."""
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu",
                        help="where the recogniser and an LLM translator run (default cpu; auto: CUDA when present)")


def toml_value(value: Any) -> str:
    """`value` written as TOML (strings, numbers, booleans, lists, inline tables; None as "none",
    which the options read back as None where a field may be None)."""
    if value is None:
        return '"none"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def render_toml(effective: Effective, tables: tuple[str, ...] = TABLES) -> str:
    """The effective configuration as a TOML file, each value commented with its origin (None
    values, which TOML cannot hold, are comments)."""
    top: list[str] = []
    sections: dict[str, list[str]] = {}
    for key, value, origin in effective.items():
        table, dot, sub = key.partition(".")
        if dot and table not in tables:
            continue
        name = sub if dot else key
        line = f"# {name} = (unset)" if value is None else f"{name} = {toml_value(value)}"
        line = f"{line:<44} # {origin}"
        (sections.setdefault(table, []) if dot else top).append(line)
    out = top[:]
    for table, lines in sections.items():
        out += ["", f"[{table}]", *lines]
    return "\n".join(out) + "\n"


def _allowed_keys() -> list[str]:
    from .pipeline import PipelineConfig

    return [f.name for f in dataclasses.fields(PipelineConfig) if f.name not in NOT_IN_FILES] + ["server"]


def _table_fields(table: str) -> list[str]:
    from .pipeline import PipelineConfig

    cls = ServerOptions if table == "server" else type(getattr(PipelineConfig(), table))
    return [f.name for f in dataclasses.fields(cls)]


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name in TABLES and dataclasses.is_dataclass(value):
            out.update(_flatten(value, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = value
    return out
