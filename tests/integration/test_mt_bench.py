"""`speech bench mt` on real FLORES lines: the JSON keys, and few-shot examples from 900-1011 only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FLORES, require_data

from speech.translate.bench import EXAMPLE_LINES, pick_examples, read_lines

pytestmark = pytest.mark.slow
KEYS = {"chrf", "offline_chrf", "bleu", "al_words", "laal_words", "erasure", "committed_erasure",
        "tokens_per_update_p50", "update_ms_p50", "update_cpu_ms_mean", "updates", "generated_per_update_mean",
        "empty_outputs"}


def test_few_shot_examples_come_from_lines_900_to_1011():
    require_data(FLORES)
    src, tgt = read_lines(FLORES, "en"), read_lines(FLORES, "es")
    examples = pick_examples(src, tgt, 3)
    assert len(examples) == 3
    allowed = {src[i] for i in EXAMPLE_LINES}
    assert all(s in allowed for s, _ in examples)
    assert not {s for s, _ in examples} & set(src[:100])


def test_bench_json_has_the_promised_keys():
    require_data(FLORES)
    speech = Path(sys.executable).with_name("speech")
    out = subprocess.run(
        [str(speech), "bench", "mt", "--pairs", "en-pt", "--backends", "bergamot", "--lines", "3", "--json"],
        capture_output=True, text=True, env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["en-pt"]["bergamot"]
    assert KEYS <= set(result)
    assert result["committed_erasure"] == 0 and result["empty_outputs"] == 0
    assert 0 < result["al_words"] <= result["laal_words"]
    assert result["chrf"] > 40 and result["offline_chrf"] > 40


def test_bench_offline_only_skips_the_stream():
    require_data(FLORES)
    speech = Path(sys.executable).with_name("speech")
    out = subprocess.run(
        [str(speech), "bench", "mt", "--pairs", "pt-en", "--backends", "bergamot", "--lines", "3", "--offline-only", "--json"],
        capture_output=True, text=True, env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["pt-en"]["bergamot"]
    assert result["lines"] == 3 and result["offline_chrf"] > 40
    assert "chrf" not in result and "laal_words" not in result
