"""`speech bench langid`: its scoring and its refusals (asr/langid_bench.py)."""

from __future__ import annotations

import json

import pytest

from speech.asr.langid_bench import load_clips, parse_seconds, score
from speech.errors import UserError


def test_score_counts_right_clips_per_language_and_names_the_confusions():
    results = [{"language": "pt", "detected": "pt"}, {"language": "pt", "detected": "en"},
               {"language": "es", "detected": "es"}, {"language": "pt", "detected": "lt?"}]
    s = score(results)
    assert s["clips"] == 4 and s["accuracy"] == 0.5
    assert s["per_language"] == {"es": {"clips": 1, "right": 1}, "pt": {"clips": 3, "right": 1}}
    assert s["confusions"] == {"pt->en": 1, "pt->lt?": 1}


def test_seconds_are_numbers_within_whispers_window():
    assert parse_seconds("2, 4,30") == [2.0, 4.0, 30.0]
    for bad in ("", "two", "0.1", "45"):
        with pytest.raises(UserError, match="--seconds"):
            parse_seconds(bad)


def test_a_clip_must_say_its_language_unless_the_manifest_is_librivox(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"file": "a.wav", "lang": "es"}) + "\n" + json.dumps({"file": "b.wav"}) + "\n")
    with pytest.raises(UserError, match=r"m.jsonl:2: no 'lang' field"):
        load_clips([str(manifest)])
    with pytest.raises(UserError, match="no such manifest"):
        load_clips([str(tmp_path / "none.jsonl")])
    manifest.write_text(json.dumps({"file": "a.wav", "lang": "es"}) + "\n")
    assert load_clips([str(manifest)]) == [{"file": str(tmp_path / "a.wav"), "language": "es"}]


def test_a_staged_decision_takes_the_first_sure_choice_else_the_last():
    from speech.asr.langid_bench import staged

    results = {2.0: [{"detected": "pt", "probability": 0.95, "speech_s": 2.0},
                     {"detected": "en", "probability": 0.6, "speech_s": 2.0},
                     {"detected": "lt?", "probability": 0.97, "speech_s": 2.0}],
               4.0: [{"detected": "pt", "probability": 0.99, "speech_s": 4.0},
                     {"detected": "pt", "probability": 0.7, "speech_s": 4.0},
                     {"detected": "pt", "probability": 0.99, "speech_s": 4.0}]}
    assert [r["speech_s"] for r in staged(results, 0.9)] == [2.0, 4.0, 4.0]  # sure; unsure; refused
    assert [r["speech_s"] for r in staged(results, 0.5)] == [2.0, 2.0, 4.0]
