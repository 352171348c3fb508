"""The benchmark's time-to-first-audio: one figure per commit event, from its first chunk."""

from speech.tts.bench import _listener_times, first_audio_per_commit


def test_first_audio_per_commit_event():
    audio = [
        {"wall_time": 1.10, "ttfa_ms": 100.0, "commit_time": 1.0, "duration": 1.0},
        {"wall_time": 1.30, "ttfa_ms": 300.0, "commit_time": 1.0, "duration": 1.0},  # same burst, later chunk
        {"wall_time": 5.05, "ttfa_ms": 50.0, "commit_time": 5.0, "duration": 0.5},
    ]
    assert sorted(first_audio_per_commit(audio)) == [50.0, 100.0]
    # listener timeline: 1.1-2.1, then 2.1-3.1 (waits for the first), then 5.05-5.55
    assert _listener_times(audio) == (1.10, 5.55)


def test_more_texts_are_flores_lines_the_manifest_does_not_read(tmp_path):
    import json

    from speech.tts.bench import more_texts

    fleurs = tmp_path / "speech" / "fleurs"
    flores = tmp_path / "text" / "flores101"
    fleurs.mkdir(parents=True)
    flores.mkdir(parents=True)
    rows = [{"file": "a.ogg", "lang": "en", "flores101_devtest_line": 2},
            {"file": "b.ogg", "lang": "en", "flores101_devtest_line": 4}]
    (fleurs / "manifest.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (flores / "por.devtest").write_text("".join(f"linha {i}\n" for i in range(1, 9)))
    texts = more_texts(fleurs / "manifest.jsonl", "pt", 3, 1)
    # lines 2 and 4 are the manifest's; the held-out lines are 1, 3, 5, 6, ...: skip one, take three
    assert [t["ref_pt"] for t in texts] == ["linha 3", "linha 5", "linha 6"]
    assert texts[0]["file"] == "flores101:3"
    assert more_texts(fleurs / "manifest.jsonl", "pt", 0, 0) == []
