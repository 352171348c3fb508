import json
import sys
import time

import numpy as np
import pytest

from speech.clock import SimulatedClock, WallClock
from speech.events import EventLog, read_events, updates
from speech.registry import BackendSpec, Registry, UnknownBackend
from speech.types import AudioChunk, TextUpdate, Transcript, Word


def test_audio_chunk_is_mono_float32_with_timing():
    c = AudioChunk(np.zeros(1600, dtype=np.float64), 16000, start=1.0)
    assert c.samples.dtype == np.float32
    assert c.duration == pytest.approx(0.1) and c.end == pytest.approx(1.1)
    with pytest.raises(ValueError):
        AudioChunk(np.zeros((10, 2), dtype=np.float32), 16000)
    with pytest.raises(ValueError):
        AudioChunk(np.zeros(10, dtype=np.float32), 0)


def test_text_update_json_round_trip_and_transcript():
    u = TextUpdate(committed=(Word("hello", 0.1, 0.5, 0.9),), tentative=(Word("wor"),), source_time=1.0, wall_time=1.2)
    assert TextUpdate.from_json(json.loads(json.dumps(u.to_json()))) == u
    t = Transcript()
    t.apply(u)
    t.apply(TextUpdate(committed=(Word("world"),), tentative=()))
    assert t.text == "hello world" and t.tentative == ()


def test_simulated_stage_clock_emulates_queueing():
    clock = SimulatedClock()
    st = clock.stage("asr")
    st.begin(1.0)
    time.sleep(0.02)
    t1 = st.end()
    assert 1.015 < t1 < 1.5
    # Next input arrived earlier than the stage was free: it waits for the stage.
    st.begin(1.0)
    t2 = st.end()
    assert t2 >= t1
    # An input arriving later starts when it arrives.
    st.begin(5.0)
    assert st.end() >= 5.0


def test_simulated_clock_with_fixed_work_ignores_compute_time():
    clock = SimulatedClock(work_s=0.25)
    st = clock.stage("mt")
    st.begin(1.0)
    time.sleep(0.02)  # measured compute is not charged
    assert st.end() == 1.25
    st.begin(1.0)  # queued behind the first unit
    assert st.end() == 1.5
    st.begin(3.0)
    assert st.end() == 3.25
    with pytest.raises(ValueError, match="work_s"):
        SimulatedClock(work_s=-1)


def test_wall_clock_counts_from_start():
    c = WallClock()
    time.sleep(0.01)
    assert 0.005 < c.now() < 1.0 and c.realtime


def test_event_log_writes_json_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        log.meta(config={"a": 1})
        log.update("asr", TextUpdate(committed=(Word("hi", 0.0, 0.3),), source_time=0.5, wall_time=0.6))
        log.audio("tts", AudioChunk(np.zeros(2205, np.float32), 22050, start=1.0, wall_time=1.0, text="hola"))
    recs = read_events(path)
    assert [r["kind"] for r in recs] == ["meta", "update", "audio"]
    assert recs[2]["duration"] == pytest.approx(0.1)
    (u,) = list(updates(recs, "asr"))
    assert u.committed[0].text == "hi" and u.source_time == 0.5


def test_read_events_names_the_bad_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"kind": "meta"}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        read_events(p)


def test_registry_is_lazy_and_lists_alternatives():
    reg = Registry()
    reg.register(BackendSpec("thing", "fake", "tests.unit.fake_backend:make", "tests.unit.fake_backend:FakeConfig", requires=("json",)))
    sys.modules.pop("tests.unit.fake_backend", None)
    assert "tests.unit.fake_backend" not in sys.modules  # nothing imported by registering
    obj = reg.create("thing", "fake", size=3)
    assert obj == ("made", 3)
    with pytest.raises(UnknownBackend, match="available: fake"):
        reg.create("thing", "nope")
    with pytest.raises(TypeError, match="no option"):
        reg.create("thing", "fake", colour="red")
    with pytest.raises(ValueError, match="twice"):
        reg.register(BackendSpec("thing", "fake", "x:y"))
    calls = []
    assert reg.shared("k", lambda: calls.append(1) or "model") == "model"
    assert reg.shared("k", lambda: calls.append(1) or "model") == "model"
    assert calls == [1]
    assert reg.available("thing", "fake")


def test_registry_options_take_their_fields_types_and_bad_values_are_named():
    from speech.errors import ConfigError

    reg = Registry()
    reg.register(BackendSpec("thing", "fake", "tests.unit.fake_backend:make", "tests.unit.fake_backend:FakeConfig"))
    # what `--tts-set` and `[tts_options.engine]` pass: parsed text, as the field's type
    assert reg.create("thing", "fake", size=2) == ("made", 2)
    with pytest.raises(ConfigError, match=r"thing fake\.size: expected a whole number, got 'big'"):
        reg.create("thing", "fake", size="big")  # not a TypeError deep inside the engine
    with pytest.raises(ConfigError, match="expected a whole number, got True"):
        reg.config("thing", "fake", size=True)
