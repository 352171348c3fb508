"""HAProxy (deploy/haproxy.cfg) in front of two `speech serve` replicas with the fake pipeline.

Skips only when haproxy is not installed (scripts/setup.sh --test installs the Debian package).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from benchmarks.scalekit import HaproxyProcess, ReplicaProcess, free_port, http_get, render_haproxy
from speech.server.client import stream_audio

HAPROXY = shutil.which("haproxy") or (Path("/usr/sbin/haproxy") if Path("/usr/sbin/haproxy").exists() else None)
pytestmark = pytest.mark.skipif(
    HAPROXY is None, reason="haproxy is not installed: apt-get install haproxy (scripts/setup.sh --test installs it)")


def tone(seconds, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # A speaker cut off by a failed test must not hold its slot through a resume grace period and
    # turn the next test's replicas "full": no grace here (resume has its own tests).
    replicas = [ReplicaProcess(name, "--max-sessions", "2", "--resume-grace", "0") for name in ("r1", "r2")]
    port = free_port()
    lb = HaproxyProcess(render_haproxy(port, [r.port for r in replicas]), tmp_path_factory.mktemp("haproxy"), port)
    try:
        lb.ready()
        yield lb, replicas
    finally:
        lb.stop()
        for r in replicas:
            r.stop()


def test_shipped_config_is_valid(tmp_path):
    import subprocess

    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(render_haproxy(free_port(), [free_port(), free_port()]))
    check = subprocess.run([str(HAPROXY), "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def replica_for(lb, session):
    """Which replica HAProxy sends a listener of `session` to (the X-Replica header of its answer)."""
    headers = {}
    http_get(f"http://127.0.0.1:{lb.port}/ws/listen?session={session}&target=es", headers=headers)
    return headers.get("x-replica")


def test_listener_session_prefix_routes_to_its_replica(cluster):
    lb, _ = cluster
    for replica in ("r1", "r2", "r2", "r1", "r2", "r1"):
        assert replica_for(lb, f"{replica}-abc123") == replica


def settle(replicas, lb):
    """Every replica has a free slot again, and HAProxy's health checks (every 0.5 s) have seen it:
    HAProxy sends requests to every replica again (leastconn takes turns among idle servers)."""
    for _ in range(1200):  # up to a minute: a loaded machine flushes the last test's sessions slowly
        if all(http_get(f"http://127.0.0.1:{r.port}/healthz")[0] == 200 for r in replicas):
            break
        time.sleep(0.05)
    names = {r.replica_id for r in replicas}
    seen: set = set()
    for _ in range(600):  # up to a minute for a replica marked down on a slow check to come back
        headers = {}
        status, _ = http_get(f"http://127.0.0.1:{lb.port}/healthz", headers=headers)
        if status == 200:
            seen.add(headers.get("x-replica"))
        if names <= seen:
            return
        time.sleep(0.1)
    raise AssertionError(f"HAProxy routes only to {seen} of {names}")


async def _wait_active(replicas, n, timeout=30.0):
    for _ in range(int(timeout / 0.05)):
        active = [await asyncio.to_thread(lambda r=r: r.metrics()["sessions"]["active"]) for r in replicas]
        if sum(active) >= n:
            return active
        await asyncio.sleep(0.05)
    raise AssertionError(f"only {active} sessions became active")


# Long enough that all four are still talking when the fifth arrives, even when HAProxy holds the
# fifth in its queue for the full 5 s before refusing it.
TALK_S = 16.0


def test_four_speakers_two_per_replica_and_a_fifth_is_refused(cluster):
    lb, replicas = cluster
    settle(replicas, lb)
    before = [r.metrics()["sessions"]["total"] for r in replicas]

    async def main():
        speakers = []
        for i in range(4):  # one after another, as users arrive: leastconn sees each one placed
            speakers.append(asyncio.create_task(stream_audio(lb.url, tone(TALK_S), 16000, "en", "es", speed=1.0)))
            await _wait_active(replicas, i + 1)
        active = await _wait_active(replicas, 4)
        # Every replica full: each /healthz says so, HAProxy takes both out within its check interval.
        health = [await asyncio.to_thread(http_get, f"http://127.0.0.1:{r.port}/healthz") for r in replicas]
        for _ in range(100):
            # Until its checks mark both replicas down, HAProxy queues the request for a slot
            # (`timeout queue 5s`) and then answers 503 itself: wait longer than the queue.
            lb_health = await asyncio.to_thread(http_get, f"http://127.0.0.1:{lb.port}/healthz", 15.0)
            if lb_health[0] == 503 and not isinstance(lb_health[1], dict):
                break  # HAProxy's own answer: no server available
            await asyncio.sleep(0.1)
        # A listener's session still reaches its full replica (force-persist), not HAProxy's 503.
        pinned = [await asyncio.to_thread(replica_for, lb, f"{r}-xyz") for r in ("r1", "r2")]
        try:
            fifth = await stream_audio(lb.url, tone(1.0), 16000, "en", "es", speed=0)
            refused = fifth.error["code"] if fifth.error else "served"
        except InvalidStatus as e:
            refused = e.response.status_code
        results = await asyncio.gather(*speakers)
        return active, health, lb_health, pinned, refused, results

    active, health, lb_health, pinned, refused, results = asyncio.run(asyncio.wait_for(main(), 180))
    assert active == [2, 2]
    assert [h[0] for h in health] == [503, 503] and [h[1]["status"] for h in health] == ["full", "full"]
    assert lb_health[0] == 503, lb_health
    assert pinned == ["r1", "r2"]
    assert refused in (503, "busy")
    for res in results:
        assert res.error is None and res.done is not None and res.close_code == 1000
        assert res.committed("translation") == [f"W{i}" for i in range(int(TALK_S * 2))]
    after = [r.metrics()["sessions"]["total"] for r in replicas]
    assert [a - b for a, b in zip(after, before)] == [2, 2]


def test_three_speakers_served_through_the_balancer(cluster):
    lb, replicas = cluster
    settle(replicas, lb)

    async def main():
        return await asyncio.gather(*(stream_audio(lb.url, tone(2.0), 16000, "en", "es", speed=1.0)
                                      for _ in range(3)))

    results = asyncio.run(asyncio.wait_for(main(), 180))
    for res in results:
        assert res.error is None and res.committed("recognition") == [f"w{i}" for i in range(4)]
        assert res.done is not None and res.close_code == 1000


async def _listener_endpoint_exists(replica) -> bool:
    try:
        async with connect(f"ws://127.0.0.1:{replica.port}/ws/listen?session=r1-none&target=es"):
            return True
    except InvalidStatus as e:
        return e.response.status_code != 404
    except Exception:  # noqa: BLE001 - anything but a 404 means the route exists
        return True


def test_listeners_reach_the_replica_holding_their_session(cluster):
    """Two speakers (one per replica), two listeners each, all through HAProxy."""
    lb, replicas = cluster
    if not asyncio.run(_listener_endpoint_exists(replicas[0])):
        pytest.skip("the listener endpoint (/ws/listen) is not in this build")
    settle(replicas, lb)

    async def listen(query, into):
        async with connect(f"{lb.url}/listen?{query}") as ws:
            async for message in ws:
                if isinstance(message, str):
                    into.append(json.loads(message))
                    if into[-1]["type"] in ("done", "error"):
                        return

    async def speaker_with_listeners(placed: asyncio.Event):
        async with connect(lb.url) as ws:
            await ws.send(json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000}))
            ready = json.loads(await ws.recv())
            placed.set()
            session_id = ready["session"]
            assert session_id.split("-")[0] in ("r1", "r2"), ready
            # the listener URL names the replica itself; through the balancer, keep its query only
            query = urlsplit(ready["listen"]["es"]).query
            heard = [[], []]
            listeners = [asyncio.create_task(listen(query, h)) for h in heard]
            await asyncio.sleep(0.5)
            pcm = (tone(3.0) * 32767).astype("<i2").tobytes()
            for i in range(0, len(pcm), 3200):
                await ws.send(pcm[i:i + 3200])
                await asyncio.sleep(0.1)
            await ws.send(json.dumps({"type": "end"}))
            async for _ in ws:
                pass
            await asyncio.wait_for(asyncio.gather(*listeners), 20)
            return session_id, heard

    async def main():
        # The second speaker arrives once the first holds its replica: leastconn then picks the other.
        first_placed, second_placed = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(speaker_with_listeners(first_placed))
        await asyncio.wait_for(first_placed.wait(), 30)
        second = asyncio.create_task(speaker_with_listeners(second_placed))
        return await asyncio.gather(first, second)

    results = asyncio.run(asyncio.wait_for(main(), 180))
    assert {sid.split("-")[0] for sid, _ in results} == {"r1", "r2"}
    for _, heard in results:
        for events in heard:
            assert any(e["type"] == "translation" and e["committed"] for e in events), events
            assert events[-1]["type"] == "done"
