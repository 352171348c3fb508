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
