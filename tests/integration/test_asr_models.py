"""Where Whisper weights come from (models/whisper.py)."""

from __future__ import annotations

import os

import pytest

from speech.models import whisper


def test_base_is_joined_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEECH_CACHE", str(tmp_path))
    folder = whisper.prepare_base()
    model = folder / "model.bin"
    assert folder.parent.parent == tmp_path and model.stat().st_size > 100_000_000
    assert {p.name for p in folder.iterdir()} == {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"}
    mtime = model.stat().st_mtime_ns
    assert whisper.prepare_base() == folder and model.stat().st_mtime_ns == mtime  # not joined again
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_tiny_en_and_local_folders_resolve(tmp_path):
    tiny = whisper.resolve("tiny.en")
    assert tiny.local and os.path.exists(os.path.join(tiny.path_or_id, "model.bin"))
    assert whisper.resolve(tiny.path_or_id).path_or_id == tiny.path_or_id
    with pytest.raises(whisper.ModelNotFound, match="model.bin"):
        whisper.resolve(str(tmp_path))


def test_hub_ids_need_an_explicit_download_option():
    with pytest.raises(whisper.ModelNotFound, match="allow_download"):
        whisper.resolve("Systran/faster-whisper-small")
    assert whisper.resolve("Systran/faster-whisper-small", allow_download=True).local is False
