"""The duration control with the real eSpeak NG Spanish voice on a 2-minute stream.

The Spanish reference translations of the English FLEURS clips are committed word by word at the
pace the English was spoken (each word 1 s after its share of the clip), clip after clip with
0.5 s pauses, for 2 minutes. Spanish said by eSpeak runs longer than the English it translates, so
without control the listener falls further behind every minute; with it the lag stays bounded.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from speech.eval.listener import audio_records, heard_words, lag_per_minute, listener_latency
from speech.tts.longtalk import replay, run_stages
from speech.types import TextUpdate, Word

from ..conftest import DATA

pytestmark = pytest.mark.slow
MANIFEST = DATA / "speech" / "fleurs" / "manifest.jsonl"


def spanish_stream(seconds: float) -> tuple[list[TextUpdate], float]:
    rows = [json.loads(line) for line in MANIFEST.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r["lang"] == "en"]
    updates, t = [], 0.0
    while t < seconds:
        for r in rows:
            words = r["ref_es"].split()
            for i, w in enumerate(words):
                spoken = t + r["duration_s"] * (i + 1) / len(words)
                commit = spoken + 1.0
                updates.append(TextUpdate(committed=(Word(w, spoken - 0.3, spoken),), source_time=commit, wall_time=commit,
                                          final=i == len(words) - 1))
            t += r["duration_s"] + 0.5
            if t >= seconds:
                break
    updates.sort(key=lambda u: u.wall_time)
    return updates, t


def speak(registry, updates, control: bool) -> list[dict]:
    from speech.pipeline import PipelineConfig

    config = PipelineConfig(source="en", target="es", stages=("tts",), extra={"tts_pace": {"control": control}})
    records, _ = asyncio.run(run_stages(registry, config, replay(updates)))
    return records


def test_control_bounds_the_listener_lag_that_grows_without_it(registry):
    updates, length = spanish_stream(120)
    off = speak(registry, updates, control=False)
    on = speak(registry, updates, control=True)
    off_minutes = lag_per_minute(heard_words(audio_records(off)))
    on_minutes = lag_per_minute(heard_words(audio_records(on)))
    end_off = listener_latency(off, length)["EndOffset"]
    end_on = listener_latency(on, length)["EndOffset"]
    # without control: later words wait longer, and the end is far behind the speaker
    assert off_minutes[-1]["p50"] > off_minutes[0]["p50"] + 3, off_minutes
    assert end_off > 12, end_off
    # with it: bounded, and much closer
    assert end_on < 6 and end_on < end_off / 2, (end_on, end_off)
    assert all(m["p90"] < 6 for m in on_minutes), on_minutes
    stats = next(r for r in on if r.get("kind") == "stats")
    assert stats["speed_max"] > 1.1 and stats["words_dropped"] <= 0.05 * sum(len(u.committed) for u in updates)
