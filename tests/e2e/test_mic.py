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
    # on the listener's timeline: each word heard after the source word it renders was said
    line = next(x for x in res.stderr.splitlines() if x.startswith("the listener heard the first word"))
    p50, p90 = (float(x.split(" s")[0]) for x in line.split("p50 ")[1].split(", p90 "))
    assert 0.0 < p50 <= p90 < 3.0, line


@pytest.mark.parametrize("behind, says", [
    # the fake stage reports its main voice at RTF 2.5 where the relief voice spoke
    ("relief", " (it took 2.5 s to synthesise each second of speech): 3 words spoken by the relief voice (espeak), "
               "0 not spoken (try --voice espeak"),
    ("unspoken", ": 0 words spoken by the relief voice, 3 not spoken"),
])
def test_mic_says_how_many_words_a_voice_too_far_behind_could_not_say(clip, behind, says):
    # the fake voice has every other word (W1, W3, W5) spoken by the relief voice, or leaves it unspoken
    res = speech("mic", "--input-file", clip, "--no-playback", "--target", f"es-{behind}",
                 "--pipeline", "tests.unit.test_server_fakes:make_fake_factory")
    assert res.returncode == 0, res.stderr
    assert f"the voice fell behind the talk{says}" in res.stderr


def test_mic_refuses_an_output_it_cannot_write_before_listening(clip, tmp_path):
    res = speech("mic", "--input-file", clip, "--no-playback", "--output-file", str(tmp_path / "said.mp3"),
                 "--pipeline", "tests.unit.test_server_fakes:make_fake_factory", timeout=60)
    assert res.returncode == 2 and "said.mp3: the translated speech is written as WAV" in res.stderr
    assert "heard:" not in res.stdout  # not after the session


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


def test_mic_screen_in_a_terminal_multiplexer(clip, tmp_path):
    """The live demo's screen as a user sees it: tmux runs it on a terminal, capture-pane reads it."""
    import shutil
    import time

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    name = f"speech-mic-{os.getpid()}"
    command = (f"cd {REPO} && PYTHONPATH={REPO} OMP_WAIT_POLICY=PASSIVE {sys.executable} -m speech.cli mic "
               f"--input-file {clip} --no-playback --pipeline tests.unit.test_server_fakes:make_fake_factory; "
               f"echo EXITED $?; sleep 60")
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "30", command], check=True)
    try:
        screen = ""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "EXITED" not in screen:
            time.sleep(0.5)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
        (tmp_path / "screen.txt").write_text(screen)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert "EXITED 0" in screen, screen
    assert "heard: w0 w1 w2 w3 w4 w5" in screen and "said:  W0 W1 W2 W3 W4 W5" in screen, screen


@pytest.mark.slow
def test_mic_tells_the_language_and_takes_the_multilingual_recogniser_for_it(tmp_path):
    """`--source auto` with the default recogniser (whisper-tiny.en is English-only): the language
    is told from the first seconds of speech, and no word before it is lost."""
    from tests.conftest import FLEURS

    clip = FLEURS / "fleurs-pt-001.ogg"  # "construída pelos egípcios no século 3 antes de Cristo ..."
    require_data(clip)
    log = tmp_path / "events.jsonl"
    res = speech("mic", "--input-file", str(clip), "--no-playback", "--source", "auto", "--target", "en",
                 "--log", str(log))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "language: pt (told from" in res.stderr
    heard = res.stdout.rsplit("\nheard: ", 1)[1].split("\nsaid:  ")[0].lower()
    assert heard.startswith("construída pelos"), heard  # the words said while the language was told
    import json

    records = [json.loads(line) for line in log.read_text().splitlines()]
    meta = next(r for r in records if r["kind"] == "meta")
    assert meta["config"]["source"] == "pt" and meta["config"]["asr_model"] == "whisper-base"
