"""StreamingVad's hysteresis and its recurrent-state reset after silence, over a fake Silero."""

from __future__ import annotations

import numpy as np

from speech.asr.vad import WINDOW, StreamingVad, VadConfig


class FakeSilero:
    """Scores a window by its level (speech = loud) and records the state it was given."""

    def __init__(self) -> None:
        self.states: list[float] = []

    def run(self, _outputs, feeds):
        self.states.append(float(np.abs(feeds["h"]).sum()))
        score = 0.9 if np.abs(feeds["input"][0, -WINDOW:]).mean() > 0.1 else 0.05
        return np.array([[score]], np.float32), feeds["h"] + 1.0, feeds["c"] + 1.0


def run(vad: StreamingVad, pattern: list[tuple[bool, float]]) -> list[tuple[str, float]]:
    events = []
    for speech, seconds in pattern:
        n = int(seconds * 16000)
        events += [(e.kind, round(e.time, 2)) for e in vad.process(np.full(n, 0.5 if speech else 0.0, np.float32))]
    return events


def test_speech_segments_with_hysteresis_and_preroll():
    events = run(StreamingVad(FakeSilero(), VadConfig()), [(False, 1.0), (True, 2.0), (False, 1.0)])
    assert [k for k, _ in events] == ["speech_start", "speech_end"]
    assert abs(events[0][1] - 0.7) < 0.05 and abs(events[1][1] - 3.0) < 0.05


def test_the_recurrent_state_starts_afresh_after_a_pause():
    model = FakeSilero()
    run(StreamingVad(model, VadConfig(reset_after_s=0.5)), [(True, 2.0), (False, 1.0), (True, 0.5)])
    # The state grows window by window; after the segment's 0.5 s pause it is zero once.
    speech_end = int(2.5 * 16000 / WINDOW)
    assert 0.0 in model.states[speech_end:speech_end + 3]
    assert model.states[-1] < model.states[speech_end]


def test_without_reset_the_state_carries_over():
    model = FakeSilero()
    run(StreamingVad(model, VadConfig(reset_after_s=0.0)), [(True, 2.0), (False, 1.0), (True, 0.5)])
    assert 0.0 not in model.states[1:]


def test_end_of_stream_reports_speech_too_short_to_start_a_segment():
    vad = StreamingVad(FakeSilero(), VadConfig())
    assert run(vad, [(False, 1.0), (True, 0.05)]) == []  # under min_speech_s: no speech_start yet
    start = vad.finish()
    assert start is not None and abs(start - (1.0 - 0.3)) < 0.04  # its onset minus the pre-roll
    quiet = StreamingVad(FakeSilero(), VadConfig())
    run(quiet, [(False, 1.0)])
    assert quiet.finish() is None
