"""`speech serve --engine ray`: the protocol through a Ray Serve deployment on a local Ray cluster
this test starts itself (2 CPUs, its temp dir under the test's tmp), with the fake pipeline.

Skips only when Ray Serve is not installed (the optional extra `ray`; scripts/setup.sh --test
installs it).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from benchmarks.scalekit import FAKE_PIPELINE, REPO, free_port, http_get
from speech.server.cli import configure, resolve_args
from speech.server.client import stream_audio

HAS_RAY = importlib.util.find_spec("ray") is not None and importlib.util.find_spec("fastapi") is not None


def tone(seconds, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["--engine", "ray", "--pipeline", FAKE_PIPELINE, "--warm-up", "none", *argv])
    resolve_args(args)  # as `speech serve` does
    return args


@pytest.fixture(scope="module")
def ray_serve(tmp_path_factory):
    if not HAS_RAY:
        pytest.skip("Ray Serve is not installed: .venv/bin/pip install -e '.[ray]' (scripts/setup.sh --test installs it)")
    import ray
    from ray import serve

    from speech.server.ray_engine import deploy

    # Ray's socket paths must stay under 107 bytes: a short temp dir inside the test's tmp.
    tmp = tmp_path_factory.mktemp("ray")
    temp_dir = tmp if len(str(tmp)) < 40 else Path(tempfile.mkdtemp(prefix="ray", dir=tmp.parent.parent))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])  # the fake pipeline
    ray.init(num_cpus=2, _temp_dir=str(temp_dir), include_dashboard=False, logging_level="WARNING")
    port = free_port()
    try:
        deploy(serve_args("--max-sessions", "2", "--replica-id", "ray1"), "127.0.0.1", port)
        yield port
    finally:
        serve.shutdown()
        ray.shutdown()


def test_two_sessions_through_ray_serve(ray_serve):
    url = f"ws://127.0.0.1:{ray_serve}/ws"

    async def main():
        return await asyncio.gather(*(stream_audio(url, tone(3.0), 16000, "en", "es", speed=1.0) for _ in range(2)))

    results = asyncio.run(asyncio.wait_for(main(), 60))
    for res in results:
        assert [e["type"] for e in res.events][0] == "ready" and res.events[-1]["type"] == "done"
        assert res.committed("recognition") == [f"w{i}" for i in range(6)]
        assert res.committed("translation") == [f"W{i}" for i in range(6)]
        pcm, rate = res.pcm()
        assert rate == 22050 and len(pcm) == 6 * 2205
        assert res.close_code == 1000


def test_same_protocol_errors_and_http_routes(ray_serve):
    base = f"127.0.0.1:{ray_serve}"

    async def main():
        third = await asyncio.gather(*(stream_audio(f"ws://{base}/ws", tone(2.0), 16000, "en", "es", speed=1.0)
                                       for _ in range(3)))
        bad = await stream_audio(f"ws://{base}/ws", tone(0.5), 16000, "en", "es-boom", speed=0)
        try:
            async with connect(f"ws://{base}/ws", origin="http://evil.example"):
                forbidden = None
        except InvalidStatus as e:
            forbidden = e.response.status_code
        return third, bad, forbidden

    third, bad, forbidden = asyncio.run(asyncio.wait_for(main(), 60))
    codes = sorted((r.error or {}).get("code", "ok") for r in third)
    assert codes == ["busy", "ok", "ok"]  # --max-sessions 2 on the one replica
    busy = next(r for r in third if r.error)
    assert busy.close_code == 1013
    assert forbidden == 403
    status, health = http_get(f"http://{base}/healthz")
    assert status == 200 and health["status"] == "ok" and health["replica"] == "ray1"
    status, page = http_get(f"http://{base}/")
    assert status == 200 and "<html" in page.lower()
    status, metrics = http_get(f"http://{base}/metrics")
    assert status == 200 and metrics["sessions"]["total"] >= 5


def test_engine_ray_without_ray_says_how_to_install(tmp_path):
    """A Python where `import ray` fails: the CLI names the extra to install."""
    blocker = tmp_path / "ray"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    out = subprocess.run([sys.executable, "-m", "speech.cli", "serve", "--engine", "ray", "--port", str(free_port()),
                          "--warm-up", "none"], capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert out.returncode != 0
    assert ".[ray]" in out.stderr and "Traceback" not in out.stderr


def test_listener_hears_the_speaker_through_ray_serve(ray_serve):
    """/ws/listen reaches the replica holding the session (one replica here) through the ingress."""
    import json
    from urllib.parse import urlsplit

    base = f"ws://127.0.0.1:{ray_serve}"

    async def main():
        async with connect(f"{base}/ws") as ws:
            await ws.send(json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000}))
            ready = json.loads(await ws.recv())
            query = urlsplit(ready["listen"]["es"]).query
            heard = []

            async def listen():
                async with connect(f"{base}/ws/listen?{query}") as lw:
                    async for message in lw:
                        if isinstance(message, str):
                            heard.append(json.loads(message))

            listener = asyncio.create_task(listen())
            await asyncio.sleep(1.0)
            pcm = (tone(2.0) * 32767).astype("<i2").tobytes()
            for i in range(0, len(pcm), 3200):
                await ws.send(pcm[i:i + 3200])
                await asyncio.sleep(0.1)
            await ws.send(json.dumps({"type": "end"}))
            async for _ in ws:
                pass
            await asyncio.wait_for(listener, 20)
            return ready, heard

    ready, heard = asyncio.run(asyncio.wait_for(main(), 60))
    assert ready["session"].startswith("ray1-")
    words = [w for e in heard if e["type"] == "translation" for w in e["committed"]]
    assert words == [f"W{i}" for i in range(4)]
    assert heard[-1]["type"] == "done"


def test_flush_replicas_ends_live_sessions_with_their_words(ray_serve):
    """SIGTERM's path (`flush_replicas`, then Serve's shutdown): two live sessions each end with
    `done` (reason shutdown) and every word committed before it. Runs last: the replica's server
    is shut down afterwards."""
    import json
    import threading

    from speech.server.ray_engine import flush_replicas

    url = f"ws://127.0.0.1:{ray_serve}/ws"
    flushed = []

    async def speaker():
        async with connect(url) as ws:
            await ws.send(json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000}))
            events = [json.loads(await ws.recv())]
            pcm = (tone(2.0) * 32767).astype("<i2").tobytes()
            for i in range(0, len(pcm), 3200):  # 2 s of speech, then the speaker stays: no `end`
                await ws.send(pcm[i:i + 3200])
                await asyncio.sleep(0.1)
            async for message in ws:
                if isinstance(message, str):
                    events.append(json.loads(message))
            return events

    async def main():
        speakers = [asyncio.create_task(speaker()) for _ in range(2)]
        await asyncio.sleep(4.0)
        assert not any(s.done() for s in speakers)  # both live, waiting for more speech
        flusher = threading.Thread(target=lambda: flushed.append(flush_replicas(timeout_s=30)))
        flusher.start()
        results = await asyncio.wait_for(asyncio.gather(*speakers), 40)
        await asyncio.to_thread(flusher.join, 40)
        return results

    results = asyncio.run(asyncio.wait_for(main(), 60))
    assert flushed == [1]
    for events in results:
        assert events[-1]["type"] == "done" and events[-1]["reason"] == "shutdown", events[-3:]
        words = [w for e in events if e["type"] == "translation" for w in e["committed"]]
        assert words == [f"W{i}" for i in range(4)]
