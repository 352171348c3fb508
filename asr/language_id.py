"""Which language a recording speaks (`speech translate --source auto`).

Whisper's own language detection, on the whole 30-s window as Whisper was trained, over the
first 30 s of the recording's speech (Silero finds it, as for the recogniser), narrowed to the
languages the caller can translate. A language Whisper is sure of that nothing installed takes is
refused with its name rather than read as the nearest one that is: a Japanese talk read as
Spanish would be translated into nonsense.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from speech.errors import UserError

SAMPLE_RATE = 16000
SPEECH_S = 30.0  # Whisper's window: the speech one detection hears
HEAD_S = 180.0  # the most of a recording read to find that speech
MIN_SPEECH_S = 1.0  # less than this is not enough to tell a language
SURE = 0.5  # a language outside the candidates this probable is refused, not replaced


class LanguageUnknown(UserError):
    """The recording's language could not be told, or is not one the caller can take."""


@dataclass(frozen=True)
class Detection:
    language: str  # the likeliest of the candidates
    probability: float  # Whisper's probability of it, among all of Whisper's languages
    ranked: tuple[tuple[str, float], ...]  # Whisper's likeliest languages, first the likeliest
    speech_s: float  # seconds of speech it heard


def choose(ranked: Sequence[tuple[str, float]], candidates: Collection[str] | None, speech_s: float,
           name: str = "the recording") -> Detection:
    """The likeliest candidate of Whisper's ranking (None: any language); refuses a non-candidate
    Whisper is sure of."""
    from speech.translate.languages import NAMES

    def said(code: str, p: float) -> str:
        known = f"{NAMES[code]} ({code}, " if code in NAMES else f"{code} ("
        return f"{known}probability {p:.2f})"

    ranked = sorted(ranked, key=lambda lp: -lp[1])
    if not ranked:
        raise LanguageUnknown(f"{name}: no language could be told; name it with --source")
    if candidates is None:
        candidates = {code for code, _ in ranked}
    top, top_p = ranked[0]
    usable = [(code, p) for code, p in ranked if code in candidates]
    if top not in candidates and top_p >= SURE or not usable:
        served = ", ".join(sorted(candidates)) or "none"
        raise LanguageUnknown(
            f"{name} sounds like {said(top, top_p)}, which nothing installed here translates as asked "
            f"(it takes {served}); name the language with --source if that is wrong")
    code, p = usable[0]
    return Detection(code, p, tuple(ranked[:5]), speech_s)


def speech_of(samples: np.ndarray) -> np.ndarray:
    """The speech in 16-kHz `samples`, pauses cut out (faster-whisper's Silero VAD)."""
    from faster_whisper.vad import get_speech_timestamps

    spans = get_speech_timestamps(samples)
    if not spans:
        return samples[:0]
    return np.concatenate([samples[s["start"]:s["end"]] for s in spans])


def detect(model: Any, samples: np.ndarray, candidates: Collection[str] | None,
           name: str = "the recording") -> Detection:
    """The language of 16-kHz `samples` among `candidates`, by a faster-whisper `model`."""
    from .window import full_window

    speech = speech_of(samples)
    speech_s = len(speech) / SAMPLE_RATE
    if speech_s < MIN_SPEECH_S:
        raise LanguageUnknown(
            f"{name}: {'no speech' if speech_s == 0 else f'only {speech_s:.1f} s of speech'} in its first "
            f"{len(samples) / SAMPLE_RATE:.0f} s, too little to tell its language; name it with --source")
    with full_window():  # the 30-s window language detection was trained on
        _, _, ranked = model.detect_language(audio=speech[:int(SPEECH_S * SAMPLE_RATE)])
    return choose(ranked, candidates, min(speech_s, SPEECH_S), name)


def detect_file(path: str, model: Any, candidates: Collection[str] | None) -> Detection:
    """The language of an audio file's first speech (at most `HEAD_S` of it is read)."""
    from speech.audio import read_audio, resample

    samples, rate, _ = read_audio(path, head_s=HEAD_S)
    return detect(model, resample(samples, rate, SAMPLE_RATE), candidates, name=path)


def file_language(path: str, registry: Any, config: Any, candidates: Collection[str] | None) -> tuple[str, str]:
    """(the language `path` speaks, a line that says how it was told) for `--source auto`, with
    the recogniser of a PipelineConfig (its model, device and engine options, so the model loaded
    is the one the pipeline shares): a multilingual one detects it among `candidates` (None: any);
    an English-only one takes English."""
    from .whisper import load_model

    rec_config = recognizer_config(registry, config)
    fixed = getattr(rec_config, "language", "en")  # Whisper's multilingual models: None
    if fixed:
        return fixed, f"{path}: taken as {named(fixed)}, the only language {config.asr_model} recognises"
    found = detect_file(path, load_model(registry, rec_config), candidates)
    return found.language, (f"{path}: speaks {named(found.language)}, Whisper's probability "
                            f"{found.probability:.2f} over {found.speech_s:.1f} s of speech")


def recognizer_config(registry: Any, config: Any) -> Any:
    """The recogniser's config of a PipelineConfig, as the pipeline's ASR stage makes it (model,
    device, engine options), so a model loaded from it is the one the pipeline shares."""
    from .stage import recognizer_name, recognizer_options

    model, local = recognizer_name(config.asr_model)
    return registry.config("recognizer", model, **local, **recognizer_options(registry, model, config.asr_options))


def named(code: str) -> str:
    """'Spanish (es)'; a language without a name here, its code."""
    from speech.translate.languages import NAMES

    return f"{NAMES[code]} ({code})" if code in NAMES else code
