"""Load test on loopback: N concurrent clients streaming shared recordings in real time.

    .venv/bin/python benchmarks/load.py [--levels 1,2,4] [--clips 3] [--out benchmarks/results/load.json]

For each concurrency level: translation and recognition commit lag p50/p90 pooled over every
committed event, and the CPU real-time factor (server CPU seconds / seconds of audio streamed).
The target: at 2 sessions, translation lag p90 <= 1.5 x the single-session p90.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from loadkit import Lags, ServerProcess, clips, now, stream_clips

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from speech.progress import Progress  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,2,4", help="concurrency levels (default 1,2,4)")
    parser.add_argument("--clips", type=int, default=3, help="recordings each client streams, one after another")
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="es")
    parser.add_argument("--asr-model", default="whisper-tiny.en")
    parser.add_argument("--extra", action="append", default=[], metavar="KEY=JSON",
                        help="pipeline option for the server (repeatable), e.g. asr_update_s=1.0")
    parser.add_argument("--pipeline", help="module:function of a pipeline factory instead of the real models, "
                        "e.g. tests.unit.test_server_fakes:make_fake_factory (the server's own overhead)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/load.json"))
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    paths = clips(max(levels) + args.clips)
    rows = []
    with ServerProcess("--max-sessions", str(max(levels)), "--asr-model", args.asr_model,
                       "--warm-up", f"{args.source}:{args.target}",
                       *[f"--extra={e}" for e in args.extra],
                       *(["--pipeline", args.pipeline, "--warm-up", "none"] if args.pipeline else [])) as server, \
            Progress(len(levels), "load") as progress:
        for n in levels:
            lags = Lags()
            cpu0, t0 = server.cpu_s(), now()

            async def level() -> None:
                # client i streams a different rotation of the clips, so clients do not speak in unison
                await asyncio.gather(*(stream_clips(server.url, [paths[(i + j) % len(paths)] for j in range(args.clips)],
                                                    args.source, args.target, lags)
                                       for i in range(n)))

            asyncio.run(level())
            cpu, wall = server.cpu_s() - cpu0, now() - t0
            row = {"concurrency": n, **lags.figures(), "cpu_rtf": round(cpu / lags.audio_s, 3),
                   "wall_s": round(wall, 1), "rss_mb": round(server.rss() / 2**20, 1)}
            rows.append(row)
            progress.update(1, f"{n} sessions: p90 {row['translation_lag_p90']} s")
    base = next((r for r in rows if r["concurrency"] == 1), None)
    two = next((r for r in rows if r["concurrency"] == 2), None)
    ratio = None
    if base and two and base["translation_lag_p90"] and two["translation_lag_p90"]:
        ratio = round(two["translation_lag_p90"] / base["translation_lag_p90"], 3)
    report = {"levels": rows, "p90_ratio_2_vs_1": ratio, "asr_model": args.asr_model, "extra": args.extra,
              "pipeline": args.pipeline or "real",
              "pair": f"{args.source}-{args.target}", "clips_per_client": args.clips}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print("| sessions | audio s | MT lag p50 | MT lag p90 | ASR lag p50 | ASR lag p90 | CPU RTF | errors |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['concurrency']} | {r['audio_s']} | {r['translation_lag_p50']} | {r['translation_lag_p90']} | "
              f"{r['recognition_lag_p50']} | {r['recognition_lag_p90']} | {r['cpu_rtf']} | {len(r['errors'])} |")
    print(f"p90 ratio, 2 sessions vs 1: {ratio} (target <= 1.5); written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
