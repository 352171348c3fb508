"""Fault injection at the stage level: a translator that raises or hangs, an engine that fails at
load, a log directory that is unwritable or full. Each ends only its own session, with a named
`error` event; a session running beside it completes, and the server stays healthy."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

from speech.server.client import stream_audio
from speech.server.server import ServerConfig, SpeechServer

from .test_server_fakes import RELEASE_HUNG_CALLS, fake_pipeline

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def tone(seconds: float, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


@pytest.fixture(autouse=True)
def _release_hung_calls():
    RELEASE_HUNG_CALLS.clear()
    yield
    RELEASE_HUNG_CALLS.set()  # the hung worker thread returns and ends


async def faulty_beside_healthy(target: str, **config):
    async with SpeechServer(ServerConfig(port=0, max_sessions=4, **config), fake_pipeline) as srv:
        faulty, healthy = await asyncio.gather(
            stream_audio(srv.url, tone(3.0), 16000, "en", target, speed=4.0),
            stream_audio(srv.url, tone(3.0), 16000, "en", "es", speed=4.0),
        )
        RELEASE_HUNG_CALLS.set()  # the hung call's thread may now return (the session is over)
        after = await stream_audio(srv.url, tone(1.0), 16000, "en", "es", speed=0)
        await asyncio.sleep(0.05)
        return faulty, healthy, after, srv.metrics


def errors(res) -> list[dict]:
    return [e for e in res.events if e["type"] == "error"]


def assert_healthy(healthy, after, metrics) -> None:
    assert healthy.done is not None and healthy.committed("translation") == [f"W{i}" for i in range(6)]
    assert after.done is not None and after.committed("recognition") == ["w0", "w1"]
    assert metrics.sessions_active == 0
    assert metrics.errors.get("internal", 0) == 0


@pytest.mark.parametrize("fault, code, words", [
    ("raise", "pipeline_error", "fake translator exploded"),
    ("hang", "pipeline_error", "did not return within 0.3 s"),
])
def test_a_faulty_translator_ends_only_its_session(fault, code, words):
    faulty, healthy, after, metrics = asyncio.run(asyncio.wait_for(faulty_beside_healthy(f"es-{fault}"), 30))
    (err,) = errors(faulty)
    assert err["code"] == code and words in err["message"] and err.get("stage") == "mt", err
    assert faulty.done is None and faulty.close_code == 1011
    # what was committed before the fault still reached the client
    assert faulty.committed("recognition")[:2] == ["w0", "w1"]
    assert_healthy(healthy, after, metrics)


def test_an_engine_that_fails_at_load_ends_only_its_session():
    faulty, healthy, after, metrics = asyncio.run(asyncio.wait_for(faulty_beside_healthy("es-oom"), 30))
    (err,) = errors(faulty)
    assert err["code"] == "unavailable" and "out of memory" in err["message"], err
    assert faulty.close_code == 1011
    assert_healthy(healthy, after, metrics)


def test_an_unwritable_log_directory_is_a_named_error(tmp_path):
    logs = tmp_path / "not-a-folder"
    logs.write_text("a file where the log folder should be")  # unwritable whoever runs the test
    faulty, healthy, after, metrics = asyncio.run(asyncio.wait_for(faulty_beside_healthy("es", log_dir=logs), 30))
    for res in (faulty, healthy, after):  # every session needs the folder: each says why it cannot run
        (err,) = errors(res)
        assert err["code"] == "log_unwritable" and str(logs) in err["message"], err
    assert metrics.sessions_active == 0 and metrics.errors.get("internal", 0) == 0


async def _one(**config):
    async with SpeechServer(ServerConfig(port=0, **config), fake_pipeline) as srv:
        return await stream_audio(srv.url, tone(1.0), 16000, "en", "es", speed=0)


def test_a_full_log_device_ends_the_session_with_a_named_error(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "session-00001.jsonl").symlink_to("/dev/full")  # the first session's log: every write fails
    faulty, healthy, after, metrics = asyncio.run(asyncio.wait_for(faulty_beside_healthy("es", log_dir=logs), 30))
    full = faulty if errors(faulty) else healthy  # whichever session got number 1
    other = healthy if full is faulty else faulty
    (err,) = errors(full)
    assert err["code"] in ("log_unwritable", "pipeline_error"), err  # at the first record, or mid-session
    assert "No space left" in err["message"] and "event log" in err["message"], err
    assert other.done is not None and other.committed("translation") == [f"W{i}" for i in range(6)]
    assert after.done is not None and metrics.errors.get("internal", 0) == 0
