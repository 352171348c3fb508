"""What a load balancer costs per frame: the same fake pipeline reached directly, through HAProxy
(deploy/haproxy.cfg, two replicas) and through Ray Serve (`--engine ray`, one replica), measured in
alternation within one run; plus each engine's memory and start time.

    .venv/bin/python benchmarks/overhead.py [--frames 300] [--rounds 3] [--out benchmarks/results/overhead.json]

Per frame: a client sends 100 ms of PCM16 and waits for the recognition event it causes (the fake
recogniser answers every frame at once), so the round trip is the transport's cost alone. Paths
that cannot run here (haproxy or Ray not installed) are reported as missing. Memory: RSS of the
replica processes, of HAProxy, and of every process of the local Ray cluster (psutil).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.scalekit import (FAKE_PIPELINE, REPO, HaproxyProcess, ReplicaProcess, free_port,  # noqa: E402
                                 render_haproxy)
from speech.stats import percentile  # noqa: E402


async def round_trips(url: str, frames: int) -> list[float]:
    from websockets.asyncio.client import connect

    frame = (np.sin(np.arange(1600) / 5) * 8000).astype("<i2").tobytes()  # 100 ms at 16 kHz
    out = []
    async with connect(url, max_size=None, compression=None) as ws:
        await ws.send(json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000}))
        while json.loads(await ws.recv())["type"] != "ready":
            pass
        for _ in range(frames):
            t0 = time.perf_counter()
            await ws.send(frame)
            while True:
                message = await ws.recv()
                if isinstance(message, str) and json.loads(message)["type"] == "recognition":
                    break
            out.append(time.perf_counter() - t0)
        await ws.send(json.dumps({"type": "end"}))
        async for _ in ws:
            pass
    return out


def rss_mb(pids: list[int]) -> float:
    import psutil

    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            pass
    return round(total / 2**20, 1)


def start_ray(tmp: str) -> tuple[str, dict]:
    import psutil
    import ray

    from benchmarks.scalekit import http_get
    from speech.server.cli import configure, resolve_args
    from speech.server.ray_engine import deploy

    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["--engine", "ray", "--pipeline", FAKE_PIPELINE, "--warm-up", "none"])
    resolve_args(args)
    t0 = time.monotonic()
    ray.init(num_cpus=2, _temp_dir=tmp, include_dashboard=False, logging_level="ERROR")
    t1 = time.monotonic()
    port = free_port()
    deploy(args, "127.0.0.1", port)
    while http_get(f"http://127.0.0.1:{port}/healthz")[0] != 200:
        time.sleep(0.1)
    t2 = time.monotonic()
    pids = [p.pid for p in psutil.Process().children(recursive=True)]
    return f"ws://127.0.0.1:{port}/ws", {"init_s": round(t1 - t0, 2), "deploy_s": round(t2 - t1, 2),
                                         "rss_mb": rss_mb(pids), "processes": len(pids)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=300, help="frames per path per round (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the paths (default 3)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray Serve path")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/overhead.json"))
    args = parser.parse_args()
    report: dict = {"frames": args.frames, "rounds": args.rounds, "paths": {}, "engines": {}}
    t0 = time.monotonic()
    replicas = [ReplicaProcess("r1"), ReplicaProcess("r2")]
    report["engines"]["plain"] = {"start_s": round((time.monotonic() - t0) / 2, 2),
                                  "rss_mb_per_replica": rss_mb([replicas[0].proc.pid])}
    paths = {"direct": replicas[0].url}
    lb = None
    tmp = tempfile.mkdtemp(prefix="ovh")
    try:
        try:
            port = free_port()
            t0 = time.monotonic()
            lb = HaproxyProcess(render_haproxy(port, [r.port for r in replicas]), Path(tmp), port)
            lb.ready()
            report["engines"]["haproxy"] = {"start_s": round(time.monotonic() - t0, 2), "rss_mb": rss_mb([lb.proc.pid])}
            paths["haproxy"] = lb.url
        except FileNotFoundError as e:
            report["engines"]["haproxy"] = {"missing": str(e)}
        if not args.no_ray:
            try:
                paths["ray"], report["engines"]["ray"] = start_ray(tmp)
            except ImportError as e:
                report["engines"]["ray"] = {"missing": str(e)}
        samples: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(args.rounds):
            for name, url in paths.items():
                samples[name] += asyncio.run(round_trips(url, args.frames))
        for name, xs in samples.items():
            report["paths"][name] = {"p50_ms": round(percentile(xs, 50) * 1000, 3),
                                     "p90_ms": round(percentile(xs, 90) * 1000, 3), "frames": len(xs)}
        direct = report["paths"]["direct"]
        for name, row in report["paths"].items():
            row["added_p50_ms"] = round(row["p50_ms"] - direct["p50_ms"], 3)
            row["added_p90_ms"] = round(row["p90_ms"] - direct["p90_ms"], 3)
    finally:
        if "ray" in paths:
            import ray
            from ray import serve

            serve.shutdown()
            ray.shutdown()
        if lb is not None:
            lb.stop()
        for r in replicas:
            r.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print("| path | round trip p50 ms | p90 ms | added p50 ms | added p90 ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in report["paths"].items():
        print(f"| {name} | {r['p50_ms']} | {r['p90_ms']} | {r['added_p50_ms']} | {r['added_p90_ms']} |")
    print(json.dumps(report["engines"]))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
