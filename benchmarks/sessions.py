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

A session with several targets, `--targets es,pt,fr`: every configuration then runs as two
servers alternated level by level, NAME (sessions with the first target alone) and NAME/multi
(sessions with every target, the server started with --targets-per-session 3). Per level, each
target's translation lag p90 in the multi-target sessions and its ratio to NAME's p90 at the same
level; the multi-target session holds when every target translated words, no error, and every
ratio <= --max-target-ratio (1.3). E.g. one English speaker to es, pt and fr against es alone:
    .venv/bin/python benchmarks/sessions.py --levels 1 --clips 3 --targets es,pt,fr
and 2 sessions against 1 with the thread budget:
    .venv/bin/python benchmarks/sessions.py --levels 1,2 --clips 3
Each server first runs one session that is not measured (models the warm-up left cold load there).
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


def run_level(server: ServerProcess, n: int, paths: list[Path], clips_each: int, source: str, target: str,
              targets: tuple[str, ...] = ()) -> dict:
    lags = Lags()
    cpu0, t0 = server.cpu_s(), now()

    async def level() -> None:
        await asyncio.gather(*(stream_clips(server.url, [paths[(i + j) % len(paths)] for j in range(clips_each)],
                                            source, target, lags, targets=targets) for i in range(n)))

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


def multi_target(rows: list[dict], single: list[dict], targets: tuple[str, ...], max_ratio: float) -> dict:
    """Each target's p90 in the multi-target sessions against the single-target sessions' p90."""
    out = []
    for row in rows:
        ref = next(r for r in single if r["concurrency"] == row["concurrency"])["translation_lag_p90"]
        per = {}
        for t in targets:
            fig = row["targets"].get(t, {})
            p90 = fig.get("translation_lag_p90")
            per[t] = {"translation_lag_p90": p90, "words": fig.get("words", 0),
                      "ratio": round(p90 / ref, 3) if ref and p90 is not None else None}
        holds = not row["errors"] and all(f["words"] and f["ratio"] is not None and f["ratio"] <= max_ratio
                                          for f in per.values())
        out.append({"concurrency": row["concurrency"], "single_p90": ref, "targets": per, "holds": holds})
    return {"max_ratio": max_ratio, "levels": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,2,3", help="concurrent sessions to try (default 1,2,3; include 1)")
    parser.add_argument("--clips", type=int, default=5, help="recordings each client streams in turn (default 5)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the configurations (default 1)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=ARGS",
                        help="a server configuration (repeatable; default: budget= , the plain defaults)")
    parser.add_argument("--max-ratio", type=float, default=1.5, help="p90 lag ratio that still holds (default 1.5)")
    parser.add_argument("--targets", metavar="T1,T2,...",
                        help="measure sessions with these targets at once against the first target alone "
                             "(e.g. es,pt,fr; overrides --target)")
    parser.add_argument("--max-target-ratio", type=float, default=1.3,
                        help="with --targets: each target's p90 / the single-target p90 that still holds (default 1.3)")
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="es")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sessions.json"))
    args = parser.parse_args()
    levels = sorted({int(x) for x in args.levels.split(",")})
    if 1 not in levels:
        parser.error("--levels must include 1 (the reference)")
    targets = tuple(t.strip() for t in args.targets.split(",") if t.strip()) if args.targets else ()
    if args.targets and len(targets) < 2:
        parser.error("--targets needs at least two languages, e.g. es,pt,fr")
    target = targets[0] if targets else args.target
    configs = dict(c.partition("=")[::2] for c in (args.config or ["budget="]))
    # name -> (server arguments, the sessions' targets; () is `target` alone)
    variants: dict[str, tuple[str, tuple[str, ...]]] = {}
    for name, extra in configs.items():
        variants[name] = (extra, ())
        if targets:
            variants[f"{name}/multi"] = (f"{extra} --targets-per-session {len(targets)}", targets)
    paths = clips(max(levels) + args.clips)
    servers: dict[str, ServerProcess] = {}
    per: dict[str, dict[int, list]] = {name: {n: [] for n in levels} for name in variants}
    try:
        for name, (extra, session_targets) in variants.items():  # in the try: a failing server stops the others
            servers[name] = ServerProcess("--max-sessions", str(max(levels)), "--warm-up",
                                          f"{args.source}:{target}", *shlex.split(extra))
            run_level(servers[name], 1, paths, 1, args.source, target, session_targets)  # not measured
        with Progress(len(levels) * len(variants) * args.rounds, "sessions") as progress:
            for _ in range(args.rounds):
                for n in levels:
                    for name, server in servers.items():  # alternate: the machine's load drifts alike
                        row = run_level(server, n, paths, args.clips, args.source, target, variants[name][1])
                        per[name][n].append(row)
                        progress.update(1, f"{name} {n}: p90 {row['translation_lag_p90']} s")
    finally:
        for server in servers.values():
            server.stop()
    report = {"pair": f"{args.source}-{target}", "clips_per_client": args.clips, "rounds": args.rounds,
              "max_ratio": args.max_ratio, "targets": list(targets), "configs": {}}
    for name, by_level in per.items():
        # one row per level: the round with the median p90 (rounds differ by the machine's load)
        rows = [sorted(rs, key=lambda r: r["translation_lag_p90"] or 0)[len(rs) // 2] for rs in by_level.values()]
        report["configs"][name] = {"args": variants[name][0], "targets": list(variants[name][1] or (target,)),
                                   "levels": rows, "sessions_held": held(rows, args.max_ratio)}
    for name in configs:
        if targets:
            multi = report["configs"][f"{name}/multi"]
            multi["per_target"] = multi_target(multi["levels"], report["configs"][name]["levels"], targets,
                                               args.max_target_ratio)
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
    for name, c in report["configs"].items():
        if "per_target" not in c:
            continue
        print(f"\n| config | sessions | {target} alone: MT lag p90 | " + " | ".join(
            f"{t}: p90 (ratio)" for t in targets) + " | holds |")
        print("| --- " * (len(targets) + 4) + "|")
        for lv in c["per_target"]["levels"]:
            cells = " | ".join(f"{f['translation_lag_p90']} ({f['ratio']})" for f in lv["targets"].values())
            print(f"| {name} | {lv['concurrency']} | {lv['single_p90']} | {cells} | {'yes' if lv['holds'] else 'no'} |")
        print(f"{name}: each target's p90 <= {args.max_target_ratio} x the single-target session's")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
