"""`--config FILE.toml` on the real commands: `speech serve` listens where the file says, flags win."""

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start(args, cwd):
    return subprocess.Popen([sys.executable, "-m", "speech.cli", "serve", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})


def listening_line(proc) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "listening on" in line:
            return line
        if not line:
            break
    raise AssertionError(proc.stderr.read())


def test_serve_reads_its_file_and_flags_win(tmp_path):
    config = tmp_path / "server.toml"
    config.write_text('asr_model = "whisper-tiny.en"\n[server]\nport = 0\nwarm_up = "none"\nmax_sessions = 1\n'
                      'token = "from-file"\n')
    proc = start(["--config", str(config)], tmp_path)
    try:
        line = listening_line(proc)
        port = int(re.search(r":(\d+)/", line).group(1))
        assert "token=from-file" in line  # the file's [server] token
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            assert r.status == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_bad_file_is_one_line(tmp_path):
    config = tmp_path / "server.toml"
    config.write_text("[server]\nport = 70000\n")
    r = subprocess.run([sys.executable, "-m", "speech.cli", "serve", "--config", str(config)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"{config}: server.port: must be >= 0 and <= 65535, got 70000" in r.stderr
    # The flag given on the command line wins over the file.
    r = subprocess.run([sys.executable, "-m", "speech.cli", "serve", "--config", str(config), "--port", "-1"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "--port: server.port" in r.stderr


def test_serve_refuses_an_unknown_voice_before_loading_models(tmp_path):
    r = subprocess.run([sys.executable, "-m", "speech.cli", "serve", "--port", "0", "--voice", "robot"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and "speech serve: error: unknown voice 'robot'; available:" in r.stderr
    assert "loading models" not in r.stderr and "--warm-up none" not in r.stderr  # not a load failure
    r = subprocess.run([sys.executable, "-m", "speech.cli", "serve", "--port", "0", "--mt-backend", "bergamot:en-pt"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and "goes from en to pt, not from en to es" in r.stderr
    assert "checked for the warm-up pair en:es; --warm-up SRC:TGT checks another" in r.stderr


def test_device_cuda_where_absent_is_one_line_on_every_command(tmp_path):
    import pytest

    from speech.devices import cuda_devices_ctranslate2, llama_gpu_offload
    from tests.conftest import DATA

    clip = DATA / "speech" / "leopard" / "test.wav"
    if cuda_devices_ctranslate2() or llama_gpu_offload():
        pytest.skip("a GPU is usable here")
    if not clip.exists():
        pytest.skip("../shared/data is not beside the repository")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args, engine in ((["translate", str(clip)], "recogniser"), (["transcribe", str(clip)], "recogniser"),
                         (["translate-text", "--source", "en", "--target", "de"], "LLM translator"),
                         (["eval", str(clip.parent / "manifest.jsonl"), "--source", "en", "--target", "es", "--out",
                          str(tmp_path / "run")], "recogniser")):
        r = subprocess.run([sys.executable, "-m", "speech.cli", *args, "--device", "cuda"], cwd=tmp_path, input="hi\n",
                           capture_output=True, text=True, timeout=120, env=env)
        errors = [line for line in r.stderr.splitlines() if "error:" in line]  # eval notes come first
        assert r.returncode == 2 and len(errors) == 1 and "Traceback" not in r.stderr, (args, r.stderr)
        assert f"device cuda for the {engine}" in errors[0] and "--device cpu" in errors[0]
