"""`speech mic` through the real CLI, its capture replaced by a recording (no sound card here)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import soundfile as sf

from tests.conftest import LIBRIVOX, REPO, require_data

CLIP = "sense_and_sensibility_01_austen_64kb-0880.wav"  # "he was not an ill disposed young man", 3 s


def speech(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "speech.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def clip():
    require_data(LIBRIVOX)
    return str(LIBRIVOX / CLIP)


def test_mic_with_recording_and_fake_pipeline(clip, tmp_path):
    out = tmp_path / "said.wav"
    res = speech("mic", "--input-file", clip, "--no-playback", "--output-file", str(out),
                 "--pipeline", "tests.unit.test_server_fakes:make_fake_factory")
    assert res.returncode == 0, res.stderr
    # the fake commits a word per 0.5 s of the 2.99 s clip: w0..w5 (w5 flushed at the end)
    assert "heard: w0 w1 w2 w3 w4 w5\n" in res.stdout
    assert "said:  W0 W1 W2 W3 W4 W5" in res.stdout
    data, rate = sf.read(str(out))
    assert rate == 22050 and abs(len(data) / rate - 0.6) < 0.01


def test_mic_without_a_device_says_what_to_do():
    res = speech("mic", "--seconds", "1", "--pipeline", "tests.unit.test_server_fakes:make_fake_factory", timeout=60)
    if res.returncode == 0:
        pytest.skip("this machine has an input device")
    assert res.returncode == 2
    assert "--input-file" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_mic_real_pipeline_translates_a_recording(clip, tmp_path):
    out = tmp_path / "said.wav"
    res = speech("mic", "--input-file", clip, "--no-playback", "--output-file", str(out),
                 "--source", "en", "--target", "es")
    assert res.returncode == 0, res.stderr[-2000:]
    final = res.stdout.rsplit("\nheard: ", 1)[1]
    heard, said = final.split("\nsaid:  ")
    reference = "he was not an ill disposed young man".split()
    words = set(heard.lower().replace(".", "").replace("-", " ").split())
    assert sum(w in words for w in reference) >= 5, heard  # tiny.en hears "old -sposed" for "ill disposed"
    said = said.strip()
    assert len(said.split()) >= 3 and said.lower() != heard.lower(), said
    data, rate = sf.read(str(out))
    assert len(data) / rate > 0.5
