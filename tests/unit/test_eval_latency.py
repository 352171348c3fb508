"""Latency metrics against SimulEval's own scorers.

The reference values in simuleval_cases.json were produced by SimulEval 1.1.4's latency scorers
(`scripts/simuleval_reference.py` regenerates them; `test_simuleval_regenerates_the_stored_values`
checks it does, where SimulEval is installed). Cases cover exact-length, over-generation (B, F),
under-generation (C), a first delay beyond the source (D) and the computation-aware form (E).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from speech.eval.latency import (
    average_token_delay,
    speech_end_offset,
    text_latency,
)
from tests.conftest import in_ci

REPO = Path(__file__).resolve().parents[2]
STORED = json.loads((Path(__file__).with_name("simuleval_cases.json")).read_text(encoding="utf-8"))
# name: (delays s, source s, reference words, elapsed s or None, SimulEval's scores)
CASES = {name: (c["delays"], c["source"], c["reference_words"], c["elapsed"], c["simuleval"])
         for name, c in STORED["text"].items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_latency_equals_simuleval(name):
    delays, source, ref_len, elapsed, expected = CASES[name]
    got = text_latency(delays, source, ref_len, elapsed=elapsed)
    for metric, value in expected.items():
        assert got[metric] == pytest.approx(value, abs=1e-6), metric


def test_brief_reference_values():
    got = text_latency([1, 2, 3, 4], 4, 4)
    assert (got["AL"], got["LAAL"], got["AP"], got["DAL"], got["StartOffset"], got["EndOffset"]) == pytest.approx(
        (1.0, 1.0, 0.625, 1.0, 1.0, 0.0), abs=1e-6
    )
    got = text_latency([1, 1, 2.5, 3, 3, 3], 3, 4)
    assert got["AL"] == pytest.approx(0.75, abs=1e-6)
    assert got["LAAL"] == pytest.approx(1.125, abs=1e-6)


def test_without_reference_uses_hypothesis_length():
    # No reference: |Y| = |hyp| = 6, so AL = LAAL (over-generation is invisible without one).
    got = text_latency([1, 1, 2.5, 3, 3, 3], 3, None)
    assert got["AL"] == pytest.approx(got["LAAL"]) == pytest.approx(1.125)


@pytest.mark.parametrize("name", sorted(STORED["speech_atd"]))
def test_speech_output_atd_equals_simuleval(name):
    case = STORED["speech_atd"][name]
    got = average_token_delay(case["delays"], durations=case["durations"], elapsed=case["elapsed"])
    assert got == pytest.approx(case["simuleval"], abs=1e-6)


def test_speech_end_offset_uses_last_interval_end():
    case = STORED["speech_end_offset"]["two_intervals"]
    assert speech_end_offset([tuple(i) for i in case["intervals"]], case["source"]) == pytest.approx(case["simuleval"])


def _simuleval_python() -> str | None:
    if importlib.util.find_spec("simuleval") is not None:
        return sys.executable
    python = os.environ.get("SIMULEVAL_PYTHON")
    return python if python and os.access(python, os.X_OK) else None


def test_simuleval_regenerates_the_stored_values():
    python = _simuleval_python()
    if python is None:
        reason = ("SimulEval is not installed (scripts/setup.sh --test puts it in .venv/simuleval; or "
                  "SIMULEVAL_PYTHON=a Python that has it): the stored reference values are not regenerated here")
        if in_ci():
            pytest.fail(reason + " (CI=true: this cross-check may not be skipped)", pytrace=False)
        pytest.skip(reason)
    out = subprocess.run([python, str(REPO / "scripts" / "simuleval_reference.py"), "--check"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "reproduces every stored value" in out.stdout


def test_empty_delays_is_an_error():
    with pytest.raises(ValueError):
        text_latency([], 3, 4)
