"""SIGTERM to `speech serve` during two live sessions: every committed word is in the session logs,
each log ends with `end` (reason `shutdown`), both speakers and a listener get `done` saying so,
and the process exits 0 promptly. The server runs as a real process with the fake pipeline (no models)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from speech.server.client import stream_audio

REPO = Path(__file__).resolve().parents[2]
SECONDS = 12.0  # each speaker's audio, streamed in real time: the signal comes long before its end
EXIT_WITHIN_S = 20.0  # generous for a loaded machine; the flush itself takes milliseconds


def tone(seconds: float, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def start(log_dir: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "speech.cli", "serve", "--port", "0", "--warm-up", "none", "--max-sessions", "4",
         "--log-dir", str(log_dir), "--pipeline", "tests.unit.test_server_fakes:make_fake_factory"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on (ws://\S+)", line)
    if not m:
        proc.kill()
        raise AssertionError(f"speech serve did not start: {line!r} {proc.stderr.read()[-2000:]}")
    return proc, m.group(1)


async def two_sessions_then_sigterm(proc: subprocess.Popen, url: str) -> tuple[list, tuple, float]:
    """Both speakers stream, one with a listener; once each has committed words, SIGTERM; returns
    their results, the listener's, and the seconds from the signal to the process's exit."""
    under_way = [asyncio.Event(), asyncio.Event()]
    translated = [0, 0]

    listen_url = asyncio.get_running_loop().create_future()

    def watcher(i: int):  # noqa: ANN202
        def on_event(e: dict) -> None:
            if e["type"] == "ready" and i == 0:
                listen_url.set_result(e["listen"]["es"])
            if e["type"] == "translation":
                translated[i] += len(e["committed"])
                if translated[i] >= 3:
                    under_way[i].set()
        return on_event

    clients = [asyncio.create_task(stream_audio(url, tone(SECONDS), 16000, "en", target, speed=1.0,
                                                on_event=watcher(i), timeout=90, resume=False))
               for i, target in enumerate(("es", "de"))]
    listener = asyncio.create_task(listen(await asyncio.wait_for(listen_url, 60)))
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in under_way)), 60)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    exited = asyncio.create_task(asyncio.to_thread(proc.wait, EXIT_WITHIN_S + 10))
    results = await asyncio.gather(*clients)
    heard = await listener
    await exited
    return results, heard, time.monotonic() - sent


async def listen(url: str) -> tuple[list[dict], int | None]:
    """A listener of the first speaker's session: its events and close code."""
    events = []
    async with connect(url) as ws:
        try:
            async for msg in ws:
                if isinstance(msg, str):
                    events.append(json.loads(msg))
        except ConnectionClosed:
            pass
        return events, ws.close_code


def session_logs(log_dir: Path) -> dict[str, list[dict]]:
    """Each session log's records, by session id."""
    out = {}
    for path in sorted(log_dir.glob("session-*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        out[next(r["id"] for r in records if r["kind"] == "session")] = records
    return out


def words(records: list[dict], stage: str) -> list[str]:
    return [w["text"] for r in records if r.get("kind") == "update" and r.get("stage") == stage for w in r["committed"]]


def test_sigterm_flushes_two_live_sessions_and_exits_zero(tmp_path):
    proc, url = start(tmp_path)
    try:
        results, (listened, close_code), exit_s = asyncio.run(asyncio.wait_for(two_sessions_then_sigterm(proc, url), 120))
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert exit_s < EXIT_WITHIN_S, exit_s
    assert "shutting down" in err
    logs = session_logs(tmp_path)
    assert len(logs) == 2
    for res in results:
        # the speaker is told why its session ended, after every word it was sent
        assert res.error is None, res.error
        assert res.done is not None and res.done["reason"] == "shutdown", res.events[-2:]
        assert res.events[-1]["type"] == "done" and res.close_code == 1000
        heard = res.committed("recognition")
        assert 2 <= len(heard) < SECONDS / 0.5, heard  # cut short by the signal, not by the clip's end
        assert res.committed("translation") == [w.upper() for w in heard]  # the fake translator upper-cases
        records = logs[res.session]
        # every committed word, at every stage, is in the log; the log ends with why
        assert words(records, "asr") == heard
        assert words(records, "mt") == res.committed("translation")
        spoken = [r["text"] for r in records if r.get("kind") == "audio" and r.get("stage") == "tts"]
        assert spoken == res.committed("translation")
        assert records[-1]["kind"] == "end" and records[-1]["reason"] == "shutdown", records[-1]
    # the listener hears the flushed words too, then `done` saying why, and a normal close
    assert listened[0]["type"] == "listening", listened[:1]
    assert listened[-1] == {"type": "done", "reason": "shutdown", "seq": listened[-1]["seq"]}, listened[-2:]
    assert close_code == 1000
    spoken = [w for e in listened if e["type"] == "translation" for w in e["committed"]]
    assert spoken and results[0].committed("translation")[-len(spoken):] == spoken


def test_a_hung_model_call_does_not_hold_the_shutdown(tmp_path):
    """A translator call that hangs (the fake holds its thread 30 s) ended its session long ago;
    SIGTERM still exits 0 within seconds, saying why it did not wait."""
    proc, url = start(tmp_path)
    try:
        hung = asyncio.run(stream_audio(url, tone(3.0), 16000, "en", "es-hang", speed=0, timeout=60, resume=False))
        assert hung.error is not None and "did not return" in hung.error["message"], hung.error
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        proc.wait(60)
        exit_s = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert exit_s < 20, exit_s  # the hung thread would hold it 30 s
    assert "exiting without it" in err, err[-2000:]
