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
