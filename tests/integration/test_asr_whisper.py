"""Streaming recognition with the real embedded models on a few short clips."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from speech.asr.evaluate import lags, offline_words, stream  # noqa: E402
from speech.eval.quality import word_errors  # noqa: E402
from speech.audio import read_audio  # noqa: E402
from tests.conftest import LIBRIVOX  # noqa: E402

CLIPS = ["sense_and_sensibility_01_austen_64kb-0880.wav", "sense_and_sensibility_01_austen_64kb-0930.wav"]


@pytest.fixture(scope="session")
def clips(librivox):
    refs = {c["file"]: c["transcript"] for c in librivox}
    return [(read_audio(LIBRIVOX / f), refs[f]) for f in CLIPS]


@pytest.mark.parametrize("policy", ["local-agreement-2", "stable"])
def test_tiny_en_streaming_matches_offline(registry, clips, policy):
    for (samples, rate, _), ref in clips:
        result = stream(registry, "whisper-tiny.en", policy, "en", samples, rate)
        offline = offline_words(registry, "whisper-tiny.en", "en", samples, rate)
        streamed = word_errors(ref, result.text)
        e_stream, n = streamed.errors, streamed.words
        e_off = word_errors(ref, " ".join(w.text for w in offline)).errors
        assert e_stream <= e_off + 1, (result.text, [w.text for w in offline])
        # Everything heard is committed by the end; the final update ends the stream.
        updates = [r for r in result.log.records if r["kind"] == "update"]
        assert updates[-1]["end_of_stream"] and updates[-1]["tentative"] == []
        assert len(result.words) >= n - 2
        src, wall = lags(result, offline)
        assert src and max(src) < 3.0 and min(wall) >= min(src)  # compute only adds delay


def test_stable_commits_no_later_than_local_agreement(registry, clips):
    (samples, rate, _), _ = clips[0]
    offline = offline_words(registry, "whisper-tiny.en", "en", samples, rate)
    la = lags(stream(registry, "whisper-tiny.en", "local-agreement-2", "en", samples, rate), offline)[0]
    st = lags(stream(registry, "whisper-tiny.en", "stable", "en", samples, rate), offline)[0]
    assert np.median(st) <= np.median(la) + 1e-6


def test_silence_and_noise_give_no_words(registry):
    rng = np.random.default_rng(1)
    silence = np.zeros(16000 * 10, np.float32)
    noise = (0.05 * rng.standard_normal(16000 * 10)).astype(np.float32)
    for audio in (silence, noise):
        result = stream(registry, "whisper-tiny.en", "stable", "en", audio, 16000)
        assert result.words == [], result.text
        updates = [r for r in result.log.records if r["kind"] == "update"]
        assert len(updates) == 1 and updates[0]["end_of_stream"]


def test_base_multilingual_on_one_clip(registry, clips):
    (samples, rate, _), ref = clips[0]
    result = stream(registry, "whisper-base", "default", "en", samples, rate)
    assert word_errors(ref, result.text).errors <= 2, result.text
    assert all(w.start is not None and w.end is not None and w.end >= w.start for w in result.words)
    assert all(0.0 <= w.start <= 3.0 for w in result.words)  # on the clip's source timeline


def test_pocketsphinx_streams(registry, clips):
    (samples, rate, _), ref = clips[0]
    result = stream(registry, "pocketsphinx", "local-agreement-2", "en", samples, rate)
    assert word_errors(ref, result.text).wer < 0.7, result.text
    assert result.words and result.words[0].text == "he"


def test_windowed_encoder_sees_the_buffer_plus_padding_not_30_s(registry, clips):
    from faster_whisper.audio import pad_or_trim

    from speech.asr.whisper import WhisperConfig, load_model
    from speech.asr.window import window_frames

    (samples, rate, _), _ = clips[0]
    model = load_model(registry, WhisperConfig(model="tiny.en", language="en", encoder_pad_s=0.5))
    full = load_model(registry, WhisperConfig(model="tiny.en", language="en", encoder_pad_s=None))
    padded = pad_or_trim(model.feature_extractor(samples[: 3 * rate]))
    frames = window_frames(padded, 50, 200)
    assert 340 <= frames <= 360  # 3 s of audio + 0.5 s
    assert np.array(model.encode(padded)).shape[1] == frames // 2
    assert np.array(full.encode(padded)).shape[1] == 1500  # the standard model: always 30 s
