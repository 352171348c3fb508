"""The default Opus settings judged on a real eSpeak NG voice, in the features the round-trip
judge (Whisper) sees: the reason the default application is CELT-only ("lowdelay")."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opuslib")
pytest.importorskip("espeakng_loader")
pytest.importorskip("faster_whisper")

from speech.audio import resample  # noqa: E402
from speech.codecs.frames import CodecConfig  # noqa: E402
from speech.tts.backends import create_synthesizer  # noqa: E402
from speech.tts.roundtrip import through_codec  # noqa: E402
from speech.types import AudioChunk  # noqa: E402

PT = "O comitê vai se reunir de novo na próxima semana para discutir o orçamento da biblioteca da cidade."


def whisper_features(samples: np.ndarray, rate: int) -> np.ndarray:
    from faster_whisper.feature_extractor import FeatureExtractor

    return FeatureExtractor()(resample(samples, rate, 16000), padding=0)


def feature_distance(reference: np.ndarray, coded: np.ndarray) -> float:
    """Mean absolute difference of Whisper's log-mel features over the loud time-frequency cells
    (within 3 log10 units, 30 dB, of the loudest: the voiced speech, not the silences)."""
    n = min(reference.shape[1], coded.shape[1])
    a, b = reference[:, :n], coded[:, :n]
    loud = a > a.max() - 0.75  # features are log10 / 4
    return float(np.mean(np.abs(a - b)[loud]))


def opus(registry, x: np.ndarray, rate: int, **options) -> np.ndarray:
    pair = registry.create("codec", "opus", CodecConfig(sample_rate=24000, bitrate=24000, **options))
    y = resample(x, rate, 24000)
    packets = [*pair.encoder.encode(AudioChunk(y, 24000)), *pair.encoder.flush()]
    return np.concatenate([pair.decoder.decode(p).samples for p in packets])


def test_default_opus_keeps_espeak_closer_to_pcm16_than_voip(registry):
    synth = create_synthesizer(registry, "pt", "espeak")
    x = np.concatenate([c.samples for c in synth.synthesize(PT)])
    rate = synth.sample_rate
    reference = whisper_features(*through_codec(registry, x, rate, "pcm16"))
    default = feature_distance(reference, whisper_features(opus(registry, x, rate), 24000))
    voip = feature_distance(reference, whisper_features(opus(registry, x, rate, application="voip"), 24000))
    assert CodecConfig().application == "lowdelay"
    # measured 0.039 (lowdelay) against 0.068 (voip); PCM16 itself is 0
    assert default < 0.75 * voip
    assert 0.02 < voip  # the measure sees the codec at all
