"""`speech bench asr`'s clip selection: a clip is scored only in the language it is spoken in."""

from __future__ import annotations

import json

import pytest

from speech.asr import bench
from speech.errors import UserError


def _manifest(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_a_line_without_lang_counts_as_the_requested_language(tmp_path):
    m = _manifest(tmp_path / "m.jsonl", [
        {"file": "a.wav", "transcript": "hola"},
        {"file": "b.wav", "transcript": "hello", "lang": "en"},
    ])
    assert [c["ref"] for c in bench.load_clips([m], "es", 0)] == ["hola"]
    assert [c["ref"] for c in bench.load_clips([m], "en", 0)] == ["hola", "hello"]


def test_the_librivox_manifest_is_english_only(tmp_path):
    # LibriVox's lines carry no `lang`: they are English recordings, never Spanish or Portuguese
    # clips scored against English transcripts.
    (tmp_path / "librivox").mkdir()
    librivox = _manifest(tmp_path / "librivox" / "manifest.jsonl", [{"file": "x.wav", "transcript": "and mister john"}])
    fleurs = _manifest(tmp_path / "fleurs.jsonl", [
        {"file": "e.ogg", "transcript_normalized": "however", "lang": "en"},
        {"file": "s.ogg", "transcript_normalized": "sin embargo", "lang": "es"},
    ])
    assert [c["ref"] for c in bench.load_clips([librivox, fleurs], "en", 0)] == ["and mister john", "however"]
    assert [c["ref"] for c in bench.load_clips([librivox, fleurs], "es", 0)] == ["sin embargo"]
    with pytest.raises(UserError, match="no pt clips"):
        bench.load_clips([librivox], "pt", 0)


def test_the_default_clips_per_language():
    assert bench.default_manifests("en") == list(bench.DEFAULT_MANIFESTS)
    others = bench.default_manifests("es")
    assert bench.ENGLISH_MANIFEST not in others and any("leopard" in m for m in others)


def test_speech_eval_reads_the_librivox_manifest_as_english(tmp_path):
    # the evaluation's manifest reader follows the same rule: English recordings are not
    # recognised and scored as another source language
    import numpy as np
    import soundfile as sf

    from speech.eval.manifest import read_manifest

    (tmp_path / "librivox").mkdir()
    sf.write(tmp_path / "librivox" / "x.wav", np.zeros(1600, dtype="float32"), 16000)
    librivox = _manifest(tmp_path / "librivox" / "manifest.jsonl", [{"file": "x.wav", "transcript": "and mister john"}])
    assert [i.transcript for i in read_manifest(librivox, "en", "es").items] == ["and mister john"]
    with pytest.raises(UserError, match="no usable recording for source language 'es'"):
        read_manifest(librivox, "es", "en")
    own = _manifest(tmp_path / "librivox" / "mine.jsonl", [{"file": "x.wav", "transcript": "hola"}])
    assert [i.transcript for i in read_manifest(own, "es", "en").items] == ["hola"]
