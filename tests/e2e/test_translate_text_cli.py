"""`speech translate-text` through the real CLI: plain text, an ASR event log, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SPEECH = Path(sys.executable).with_name("speech")
ENV = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}


def speech(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SPEECH), *args], input=stdin, capture_output=True, text=True, env=ENV, timeout=300)


def test_plain_text_with_bergamot_grows_and_logs(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("The cat sleeps on the mat. The dog runs in the park.", encoding="utf-8")
    log = tmp_path / "mt.jsonl"
    out = speech("translate-text", str(src), "--source", "en", "--target", "pt", "--log", str(log))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any("‖" in line for line in lines)  # a tentative tail was shown beside the committed text
    assert sum(line.endswith("⏎") for line in lines) == 2  # two sentences finished
    recs = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    mt = [r for r in recs if r["kind"] == "update" and r["stage"] == "mt"]
    text = " ".join(w["text"] for r in mt for w in r["committed"]).lower()
    assert "gato" in text and mt[-1]["end_of_stream"]
    assert all("tokens_evaluated" in r for r in mt)


def test_asr_event_log_with_gemma(tmp_path):
    log = tmp_path / "asr.jsonl"
    words = "The house is very old.".split()
    recs = [{"kind": "meta"}]
    for i, w in enumerate(words):
        recs.append({"kind": "update", "stage": "asr", "committed": [{"text": w, "start": i * 0.4, "end": i * 0.4 + 0.3}],
                     "tentative": [], "final": False, "end_of_stream": False, "source_time": i * 0.4 + 0.5})
    recs.append({"kind": "update", "stage": "asr", "committed": [], "tentative": [], "final": True, "end_of_stream": True,
                 "source_time": 3.0})
    log.write_text("\n".join(json.dumps(r) for r in recs), encoding="utf-8")
    out = speech("translate-text", str(log), "--target", "es", "--backend", "gemma-270m", "--final-only")
    assert out.returncode == 0, out.stderr
    assert any(w in out.stdout.lower() for w in ("casa", "hogar")) and "muy" in out.stdout.lower()


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (("--source", "en", "--target", "xx"), "hello", "unknown language 'xx'; languages: en, es"),
        ((), "   ", "no words"),
        (("--model", "/nonexistent/model.gguf"), "hello", "does not exist"),
        (("--backend", "bergamot", "--target", "de"), "hello", "supported: en-pt, pt-en"),
    ],
)
def test_bad_input_is_one_clear_line(args, stdin, message):
    out = speech("translate-text", *args, stdin=stdin)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_help():
    out = speech("translate-text", "--help")
    assert out.returncode == 0 and "--policy" in out.stdout and "--wpm" in out.stdout
