"""`speech eval` through the real command line: a run, its resumption, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LIBRIVOX, REPO, require_data

SPEECH = [sys.executable, "-m", "speech.cli"]


def speech(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.run(SPEECH + list(args), capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)


def test_unknown_language_is_one_line_error(tmp_path):
    p = speech("eval", str(tmp_path / "m.jsonl"), "--source", "xx", "--target", "es")
    assert p.returncode == 2
    assert "unknown source language code 'xx'" in p.stderr and "Traceback" not in p.stderr


def test_empty_manifest_is_one_line_error(tmp_path):
    m = tmp_path / "m.jsonl"
    m.write_text("")
    p = speech("eval", str(m), "--source", "en", "--target", "es")
    assert p.returncode == 2 and "no usable recording" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("args,message", [
    (["--phases", "0"], "--phases must be between 1 and 10, got 0"),
    (["--phases", "11"], "--phases must be between 1 and 10, got 11"),
    (["--phases", "2", "--long-form"], "does not combine with --long-form"),
])
def test_phases_out_of_range_is_one_line_error(tmp_path, args, message):
    p = speech("eval", str(tmp_path / "m.jsonl"), "--source", "en", "--target", "es", *args)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_eval_run_and_resume(tmp_path):
    require_data(LIBRIVOX)
    rows = [json.loads(x) for x in (LIBRIVOX / "manifest.jsonl").read_text().splitlines() if x.strip()]
    short = min(rows, key=lambda r: r["duration_s"])
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps({**short, "file": str(LIBRIVOX / short["file"])}) + "\n"
                 + json.dumps({"file": str(tmp_path / "gone.wav"), "transcript": "x"}) + "\n")
    out = tmp_path / "run"
    p = speech("eval", str(m), "--source", "en", "--target", "pt", "--out", str(out), "--no-asr-bleu")
    assert p.returncode == 0, p.stderr
    assert "skipped line 2" in p.stderr and "gone.wav" in p.stderr
    assert "no ref_pt references" in p.stderr  # missing references: said, and left out
    assert "| base | 1 |" in p.stdout
    for name in ("run.json", "report.md", "report.html", "per_utterance.csv", "aggregate.csv", "plots/waterfall.png"):
        assert (out / name).exists(), name
    agg = json.loads((out / "aggregate.json").read_text())[0]
    assert "bleu" not in agg and agg["mt_LAAL_cu"] > 0 and agg["wer"] < 0.3
    again = speech("eval", str(m), "--source", "en", "--target", "pt", "--out", str(out), "--no-asr-bleu")
    assert again.returncode == 0 and "resumed: 1 recording" in again.stderr
    assert json.loads((out / "aggregate.json").read_text())[0]["mt_LAAL_cu"] == agg["mt_LAAL_cu"]
