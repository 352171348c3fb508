"""Every fenced python block of docs/api.md runs as written, in a folder holding `talk.wav`."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO

DOC = REPO / "docs" / "api.md"
CLIP = DATA / "speech" / "leopard" / "test.wav"  # 5.9 s of English
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 6


def _folder(tmp_path: Path) -> Path:
    if not CLIP.exists():
        pytest.skip("../shared/data is not beside the repository")
    shutil.copy(CLIP, tmp_path / "talk.wav")
    return tmp_path


def _env() -> dict:
    return {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}


@pytest.mark.slow
@pytest.mark.parametrize("index", [i for i, b in enumerate(BLOCKS) if "speech.serve(" not in b])
def test_example_runs(index, tmp_path):
    folder = _folder(tmp_path)
    block = BLOCKS[index]
    r = subprocess.run([sys.executable, "-c", block], cwd=folder, capture_output=True, text=True,
                       timeout=600, env=_env())
    assert r.returncode == 0, f"block {index} failed:\n{block}\n{r.stderr[-3000:]}"
    out = r.stdout
    # What each example promises in its comments or text shows in its output.
    if "translate_file(\"talk.wav\", \"en\", \"es\", output" in block:
        assert "apostle" in out and "apóstol" in out and (folder / "talk.es.wav").stat().st_size > 10_000
    if "stream([\"The weather" in block:
        assert "translated:" in out and "spoken:" in out
    if "sample_rate=rate" in block:
        assert "heard:" in out and "translated:" in out
    for comment in re.findall(r"# ((?:asr_options|bad\.toml)\S*: .*)", block):
        assert comment.strip() in out


@pytest.mark.slow
def test_serve_example_listens_and_stops_cleanly(tmp_path):
    block = next(b for b in BLOCKS if "speech.serve(" in b).replace("port=8765", "port=0")
    proc = subprocess.Popen([sys.executable, "-c", block], cwd=_folder(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())
    try:
        deadline = time.monotonic() + 300
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "listening on" in line or not line:
                break
        assert "listening on ws://127.0.0.1:" in line, proc.stderr.read() if proc.poll() is not None else line
        port = int(re.search(r":(\d+)/", line).group(1))
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
            assert response.status == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_command_line_lines_parse(tmp_path):
    """The `speech ...` lines of the page name real commands and flags (config show runs them)."""
    import shlex

    from tests.e2e.test_models_doc import fenced_lines

    lines = [line.split("#")[0].strip() for language, line in fenced_lines(DOC.read_text()) if language == ""]
    assert len(lines) >= 3
    (tmp_path / "german.toml").write_text('target = "de"\n[server]\nport = 9000\n')
    for line in filter(None, lines):
        argv = shlex.split(line)
        assert argv[0] == "speech"
        command = argv[1] if argv[1] != "config" else argv[3]
        flags = [a for a in argv[2:] if a not in ("show", command, "talk.wav")]
        r = subprocess.run([sys.executable, "-m", "speech.cli", "config", "show", command, *flags], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120, env=_env())
        assert r.returncode == 0, (line, r.stderr)
        assert 'target = "de"' in r.stdout
