"""Sessions per machine at real time: concurrent speaker sessions against one `speech serve`, for
one or more server configurations measured in alternation, so every comparison is within one run.

    .venv/bin/python benchmarks/sessions.py [--levels 1,2,3] [--clips 5] [--rounds 1]
        [--config NAME=ARGS ...] [--out benchmarks/results/sessions.json]

A configuration is a name and `speech serve` arguments, e.g.
    --config budget=                                   (the thread budget's plan, the default)
    --config fixed='--extra=asr_options={"cpu_threads": 2, "workers": 1}'   (one 2-thread Whisper worker)
Each configuration runs its own server (started once, with --max-sessions = the top level). Per
level, translation lag p90 pooled over every committed event, its ratio to the same configuration's
one-session p90, and whether the level holds real time: ratio <= --max-ratio (1.5) and no error.
"sessions held" is the highest level that holds, with every level below it holding too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from pathlib import Path

from loadkit import Lags, ServerProcess, clips, now, stream_clips

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from speech.progress import Progress  # noqa: E402


def run_level(server: ServerProcess, n: int, paths: list[Path], clips_each: int, source: str, target: str) -> dict:
    lags = Lags()
    cpu0, t0 = server.cpu_s(), now()

    async def level() -> None:
        await asyncio.gather(*(stream_clips(server.url, [paths[(i + j) % len(paths)] for j in range(clips_each)],
                                            source, target, lags) for i in range(n)))

    asyncio.run(level())
    return {**lags.figures(), "concurrency": n, "cpu_rtf": round((server.cpu_s() - cpu0) / lags.audio_s, 3),
            "wall_s": round(now() - t0, 1), "rss_mb": round(server.rss() / 2**20, 1)}


def held(rows: list[dict], max_ratio: float) -> int:
    base = next(r for r in rows if r["concurrency"] == 1)["translation_lag_p90"]
    best, holding = 0, True
    for r in sorted(rows, key=lambda r: r["concurrency"]):
        r["p90_ratio"] = round(r["translation_lag_p90"] / base, 3) if base and r["translation_lag_p90"] else None
        r["holds"] = not r["errors"] and r["p90_ratio"] is not None and r["p90_ratio"] <= max_ratio
        holding = holding and r["holds"]
        if holding:
            best = r["concurrency"]
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,2,3", help="concurrent sessions to try (default 1,2,3; include 1)")
    parser.add_argument("--clips", type=int, default=5, help="recordings each client streams in turn (default 5)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the configurations (default 1)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=ARGS",
                        help="a server configuration (repeatable; default: budget= , the plain defaults)")
    parser.add_argument("--max-ratio", type=float, default=1.5, help="p90 lag ratio that still holds (default 1.5)")
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="es")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sessions.json"))
    args = parser.parse_args()
    levels = sorted({int(x) for x in args.levels.split(",")})
    if 1 not in levels:
        parser.error("--levels must include 1 (the reference)")
    configs = dict(c.partition("=")[::2] for c in (args.config or ["budget="]))
    paths = clips(max(levels) + args.clips)
    servers: dict[str, ServerProcess] = {}
    per: dict[str, dict[int, list]] = {name: {n: [] for n in levels} for name in configs}
    try:
        for name, extra in configs.items():  # inside the try: a server that fails stops the others
            servers[name] = ServerProcess("--max-sessions", str(max(levels)), "--warm-up",
                                          f"{args.source}:{args.target}", *shlex.split(extra))
        with Progress(len(levels) * len(configs) * args.rounds, "sessions") as progress:
            for _ in range(args.rounds):
                for n in levels:
                    for name, server in servers.items():  # alternate: the machine's load drifts alike
                        row = run_level(server, n, paths, args.clips, args.source, args.target)
                        per[name][n].append(row)
                        progress.update(1, f"{name} {n}: p90 {row['translation_lag_p90']} s")
    finally:
        for server in servers.values():
            server.stop()
    report = {"pair": f"{args.source}-{args.target}", "clips_per_client": args.clips, "rounds": args.rounds,
              "max_ratio": args.max_ratio, "configs": {}}
    for name, by_level in per.items():
        # one row per level: the round with the median p90 (rounds differ by the machine's load)
        rows = [sorted(rs, key=lambda r: r["translation_lag_p90"] or 0)[len(rs) // 2] for rs in by_level.values()]
        report["configs"][name] = {"args": configs[name], "levels": rows, "sessions_held": held(rows, args.max_ratio)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print("| config | sessions | MT lag p50 | MT lag p90 | p90 / 1 session | ASR lag p90 | CPU RTF | errors | holds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, c in report["configs"].items():
        for r in c["levels"]:
            print(f"| {name} | {r['concurrency']} | {r['translation_lag_p50']} | {r['translation_lag_p90']} | "
                  f"{r.get('p90_ratio')} | {r['recognition_lag_p90']} | {r['cpu_rtf']} | {len(r['errors'])} | "
                  f"{'yes' if r.get('holds') else 'no'} |")
        print(f"{name}: {c['sessions_held']} session(s) held at real time (p90 <= {args.max_ratio} x one session)")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
