"""Listeners per session: what N listeners on one session add to what they hear, and whether they
slow the speaker's session.

    .venv/bin/python benchmarks/listeners.py [--listeners 0,1,10,50] [--seconds 30] [--fast-english]
        [--no-stuck] [--rounds 1] [--json] [--out benchmarks/results/listeners.json]

One `speech serve` subprocess (the embedded models; `--fast-english`: Whisper tiny.en) and, per
level, one speaker session streaming the shared LibriVox recordings (joined, `--seconds` long) in
real time, with N listeners on /ws/listen for the session's target, all connected before the first
frame. Levels run in turn, `--rounds` times (pooled).

- Added lag of an event = when a listener received it - when the speaker's own socket received the
  same event (matched by `seq`), over every translation/synthesis/audio event and every listener:
  p50, p90, max (milliseconds). Both sockets are read by this one process, so its own scheduling is
  part of the figure. Target: p90 <= 50 ms at 50 listeners.
- The speaker's own lags, as the server stamps them: translation (committed events) and synthesis
  (every word's listener lag) p90, and their ratio to the level without listeners: listeners must
  not slow the session.
- With a stuck listener (default; `--no-stuck` skips it): the top level again plus one listener
  that connects and then never reads. The server must drop it (`slow_client` in /metrics) while the
  others keep every event and their added lag.

`--json` prints the report as JSON on stdout (progress always goes to stderr). Wall-clock figures:
run it on a quiet machine, or read them as "under load".
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.loadkit import ServerProcess, clips  # noqa: E402
from benchmarks.scalekit import http_get  # noqa: E402
from speech.audio import read_audio, resample  # noqa: E402
from speech.progress import Progress  # noqa: E402
from speech.server import protocol as P  # noqa: E402
from speech.server.client import encode_frames  # noqa: E402
from speech.stats import percentile  # noqa: E402

RATE = 16000
HEARD = ("translation", "synthesis", "audio")  # the events a listener of a target receives
GAP_S = 0.6  # silence between the joined recordings


def talk(seconds: float) -> np.ndarray:
    """The shared recordings at 16 kHz, joined with short pauses and repeated to `seconds`."""
    pieces = []
    for path in clips(100):
        samples, rate, _ = read_audio(path)
        pieces += [resample(samples, rate, RATE), np.zeros(int(GAP_S * RATE), np.float32)]
    one = np.concatenate(pieces)
    return np.tile(one, int(np.ceil(seconds * RATE / len(one))))[: int(seconds * RATE)]


async def listener(url: str, joined: asyncio.Event) -> dict[int, float]:
    """One listener: when each heard event arrived, by seq."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    times: dict[int, float] = {}
    async with connect(url, max_size=P.MAX_TRANSPORT_BYTES, compression=None, open_timeout=60) as ws:
        try:
            async for message in ws:
                t = time.monotonic()
                if isinstance(message, bytes):
                    continue
                event = json.loads(message)
                if event["type"] == "listening":
                    joined.set()
                elif event["type"] in HEARD:
                    times[event["seq"]] = t
                elif event["type"] in ("done", "error"):
                    break
        except ConnectionClosed:
            pass
    return times


def stuck_listener(url: str) -> socket.socket:
    """A listener that completes the websocket handshake and then never reads (a small receive
    buffer, so the server's side fills sooner)."""
    parts = urlsplit(url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect((parts.hostname, parts.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(1)  # byte by byte: nothing after the handshake is read
        if not chunk:
            raise RuntimeError("the server closed the stuck listener during its handshake")
        reply += chunk
    if b" 101 " not in reply.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"listener handshake refused: {reply[:80]!r}")
    return sock


def slow_client_drops(http_base: str) -> int:
    status, body = http_get(f"{http_base}/metrics")
    return int(body["errors"].get("slow_client", 0)) if status == 200 and isinstance(body, dict) else 0


async def run_level(url: str, samples: np.ndarray, n: int, stuck: bool, source: str, target: str) -> dict:
    from websockets.asyncio.client import connect

    http_base = "http://" + urlsplit(url).netloc
    drops0 = await asyncio.to_thread(slow_client_drops, http_base)
    frames, rate, step = encode_frames(samples, RATE, "pcm16", 100)
    spoken: dict[int, float] = {}
    events: list[dict] = []
    stuck_sock = None
    async with connect(url, max_size=P.MAX_TRANSPORT_BYTES, compression=None, open_timeout=60) as ws:
        await ws.send(json.dumps(P.Hello(source, target, rate, client="benchmarks/listeners.py").to_json()))
        ready = json.loads(await ws.recv())
        if ready.get("type") != "ready":
            raise SystemExit(f"the server refused the speaker: {ready}")
        listen_url = ready["listen"][target]
        joined = [asyncio.Event() for _ in range(n)]
        tasks = [asyncio.create_task(listener(listen_url, j)) for j in joined]
        if stuck:
            stuck_sock = await asyncio.to_thread(stuck_listener, listen_url)
        await asyncio.wait_for(asyncio.gather(*(j.wait() for j in joined)), 120)
        t0 = time.monotonic()
        dropped_at: list[float] = []

        async def send() -> None:
            for i, frame in enumerate(frames):
                delay = t0 + (i + 1) * step / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await ws.send(frame)
            await ws.send(json.dumps({"type": "end"}))

        async def watch_drop() -> None:  # when the server counted the stuck listener's drop
            while True:
                if await asyncio.to_thread(slow_client_drops, http_base) > drops0:
                    dropped_at.append(time.monotonic() - t0)
                    return
                await asyncio.sleep(0.5)

        sender = asyncio.create_task(send())
        watcher = asyncio.create_task(watch_drop()) if stuck else None
        async for message in ws:
            t = time.monotonic()
            if isinstance(message, bytes):
                continue
            event = json.loads(message)
            if "seq" in event:
                spoken[event["seq"]] = t
            events.append(event)
            if event["type"] in ("done", "error"):
                break
        await sender
        heard = await asyncio.wait_for(asyncio.gather(*tasks), 60)
        if watcher is not None:
            try:
                await asyncio.wait_for(watcher, 15)  # the drop may be counted just after the end
            except asyncio.TimeoutError:
                pass
    if stuck_sock is not None:
        stuck_sock.close()
    drops = await asyncio.to_thread(slow_client_drops, http_base) - drops0
    wanted = {e["seq"] for e in events if e["type"] in HEARD and e.get("target", target) == target}
    added = [(t - spoken[seq]) * 1000 for times in heard for seq, t in times.items() if seq in spoken]
    missing = sum(len(wanted - set(times)) for times in heard)
    translation = [e["lag"] for e in events if e["type"] == "translation" and e["committed"] and e.get("lag") is not None]
    synthesis = [x for e in events if e["type"] == "synthesis" for x in e.get("word_lags") or []]
    errors = [e["code"] for e in events if e["type"] == "error"]
    return {"listeners": n, "stuck": stuck, "added_ms": added, "missing": missing, "events": len(wanted),
            "translation": translation, "synthesis": synthesis, "errors": errors, "slow_client": drops,
            "dropped_after_s": round(dropped_at[0], 1) if dropped_at else None}


def figures(runs: list[dict]) -> dict:
    def r(x: float | None, nd: int = 3) -> float | None:
        return None if x is None else round(x, nd)

    added = [x for run in runs for x in run["added_ms"]]
    translation = [x for run in runs for x in run["translation"]]
    synthesis = [x for run in runs for x in run["synthesis"]]
    first = runs[0]
    return {
        "listeners": first["listeners"], "stuck": first["stuck"], "runs": len(runs),
        "events": sum(run["events"] for run in runs), "samples": len(added),
        "missing": sum(run["missing"] for run in runs),
        "added_lag_ms": {"p50": r(percentile(added, 50), 2), "p90": r(percentile(added, 90), 2),
                         "max": r(max(added), 2) if added else None},
        "translation_lag_p90": r(percentile(translation, 90)), "synthesis_lag_p90": r(percentile(synthesis, 90)),
        "errors": [e for run in runs for e in run["errors"]],
        "slow_client": sum(run["slow_client"] for run in runs),
        "dropped_after_s": [run["dropped_after_s"] for run in runs] if first["stuck"] else None,
    }


def verdict(rows: list[dict], max_added_ms: float) -> dict:
    base = next((r for r in rows if r["listeners"] == 0 and not r["stuck"]), None)
    for row in rows:
        for kind in ("translation", "synthesis"):
            ref, val = (base or {}).get(f"{kind}_lag_p90"), row[f"{kind}_lag_p90"]
            row[f"{kind}_ratio"] = round(val / ref, 3) if ref and val is not None else None
        p90 = row["added_lag_ms"]["p90"]
        row["holds"] = (not row["errors"] and row["missing"] == 0
                        and (row["listeners"] == 0 or (p90 is not None and p90 <= max_added_ms))
                        and (not row["stuck"] or row["slow_client"] == row["runs"]))
    return {"max_added_ms": max_added_ms, "all_hold": all(r["holds"] for r in rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listeners", default="0,1,10,50", help="listener counts to try (default 0,1,10,50; "
                        "0 is the speaker-alone reference)")
    parser.add_argument("--seconds", type=float, default=30.0, help="speech per session, in seconds (default 30)")
    parser.add_argument("--rounds", type=int, default=1, help="times each level runs, pooled (default 1)")
    parser.add_argument("--no-stuck", action="store_true", help="skip the run with a listener that stops reading")
    parser.add_argument("--fast-english", action="store_true", help="the server's --fast-english (Whisper tiny.en)")
    parser.add_argument("--max-added-ms", type=float, default=50.0, help="added lag p90 that holds (default 50)")
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="es")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/listeners.json"))
    args = parser.parse_args()
    try:
        levels = sorted({int(x) for x in args.listeners.split(",")})
    except ValueError:
        parser.error(f"--listeners must be numbers separated by commas, got {args.listeners!r}")
    if min(levels) < 0 or args.seconds <= 0 or args.rounds < 1:
        parser.error("--listeners, --seconds and --rounds must be positive")
    plan = [(n, False) for n in levels] + ([] if args.no_stuck else [(max(levels), True)])
    samples = talk(args.seconds)
    runs: dict[tuple[int, bool], list[dict]] = {key: [] for key in plan}
    server = ServerProcess("--max-sessions", "1", "--max-listeners", str(max(levels) + 1),
                           "--warm-up", f"{args.source}:{args.target}", *(["--fast-english"] if args.fast_english else []))
    try:
        # one short session first, not measured: the first session pays for what the warm-up left cold
        asyncio.run(run_level(server.url, samples[: 5 * RATE], 0, False, args.source, args.target))
        with Progress(len(plan) * args.rounds, "listeners") as progress:
            for _ in range(args.rounds):
                for n, stuck in plan:
                    run = asyncio.run(run_level(server.url, samples, n, stuck, args.source, args.target))
                    runs[(n, stuck)].append(run)
                    p90 = percentile(run["added_ms"], 90)
                    progress.update(1, f"{n} listeners{' + 1 stuck' if stuck else ''}: added p90 "
                                       f"{'-' if p90 is None else f'{p90:.1f}'} ms")
        cpu_s, rss = server.cpu_s(), server.rss()
    finally:
        server.stop()
    rows = [figures(rs) for rs in runs.values()]
    report = {"pair": f"{args.source}-{args.target}", "seconds": args.seconds, "rounds": args.rounds,
              "asr": "whisper-tiny.en" if args.fast_english else "whisper-base", "levels": rows,
              **verdict(rows, args.max_added_ms), "server_cpu_s": round(cpu_s, 1), "server_rss_mb": round(rss / 2**20, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print("| listeners | added lag p50 ms | p90 ms | max ms | missing | MT lag p90 | ratio | TTS lag p90 | ratio "
          "| slow_client | holds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        a = r["added_lag_ms"]
        name = f"{r['listeners']}{' + 1 stuck' if r['stuck'] else ''}"
        print(f"| {name} | {a['p50']} | {a['p90']} | {a['max']} | {r['missing']} | {r['translation_lag_p90']} | "
              f"{r['translation_ratio']} | {r['synthesis_lag_p90']} | {r['synthesis_ratio']} | {r['slow_client']} | "
              f"{'yes' if r['holds'] else 'no'} |")
    print(f"all hold: {report['all_hold']} (added lag p90 <= {args.max_added_ms} ms, every event, the stuck "
          f"listener dropped); written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
