"""Soak test on loopback: clients stream shared recordings in real time, back to back, for a while.

    .venv/bin/python benchmarks/soak.py [--minutes 10] [--clients 1] [--out benchmarks/results/soak.json]

Samples the server's memory (RSS) every 5 s and pools commit lags per minute. Reports memory growth
(mean RSS of the last minute vs the second: the first warms up) and lag drift (translation lag p50 of the last third of
the run vs the first third). Targets: growth <= 5 %, drift <= 10 %. Run it in the background:
it takes --minutes plus the model loading.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from loadkit import Lags, ServerProcess, clips, now

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from speech.progress import Progress  # noqa: E402
from speech.server.client import stream_file  # noqa: E402
from speech.stats import percentile  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=1, help="concurrent clients (default 1)")
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="es")
    parser.add_argument("--asr-model", default="whisper-tiny.en")
    parser.add_argument("--extra", action="append", default=[], metavar="KEY=JSON",
                        help="pipeline option for the server (repeatable), e.g. asr_update_s=0.5")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/soak.json"))
    args = parser.parse_args()
    paths = clips(20)
    duration = args.minutes * 60
    memory: list[tuple[float, int]] = []  # (seconds since start, rss)
    per_minute: dict[int, Lags] = {}
    with ServerProcess("--max-sessions", str(args.clients), "--asr-model", args.asr_model,
                       "--warm-up", f"{args.source}:{args.target}",
                       *[f"--extra={e}" for e in args.extra]) as server, \
            Progress(int(args.minutes), "soak (minutes)") as progress:
        t0 = now()

        async def client(i: int) -> None:
            k = i
            while now() - t0 < duration:
                path = paths[k % len(paths)]
                k += 1
                minute = int((now() - t0) // 60)
                result = await stream_file(server.url, path, args.source, args.target, speed=1.0, timeout=600)
                per_minute.setdefault(minute, Lags()).add(result)

        async def sampler() -> None:
            shown = 0
            while now() - t0 < duration:
                memory.append((now() - t0, server.rss()))
                if int((now() - t0) // 60) > shown:
                    shown += 1
                    progress.update(1, f"rss {memory[-1][1] / 2**20:.0f} MB")
                await asyncio.sleep(5)

        async def run() -> None:
            await asyncio.gather(sampler(), *(client(i) for i in range(args.clients)))

        asyncio.run(run())
        errors = sum(len(v.errors) for v in per_minute.values())

    # The first minute warms up (allocator pools, first decodes); the baseline is the second one.
    lo = 60 if duration >= 180 else 0
    first = [m for t, m in memory if lo <= t < lo + 60]
    last = [m for t, m in memory if t >= duration - 60]
    growth = (sum(last) / len(last)) / (sum(first) / len(first)) - 1 if first and last else None
    minutes = sorted(per_minute)
    third = max(1, len(minutes) // 3)

    def pooled(ms: list[int]) -> list[float]:
        return [x for m in ms for x in per_minute[m].translation]

    early, late = percentile(pooled(minutes[:third]), 50), percentile(pooled(minutes[-third:]), 50)
    drift = late / early - 1 if early and late else None
    report = {
        "minutes": args.minutes, "clients": args.clients, "asr_model": args.asr_model, "extra": args.extra,
        "sessions": sum(v.sessions for v in per_minute.values()), "errors": errors,
        "memory_growth": None if growth is None else round(growth, 4),
        "rss_baseline_minute_mb": round(sum(first) / len(first) / 2**20, 1) if first else None,
        "rss_last_minute_mb": round(sum(last) / len(last) / 2**20, 1) if last else None,
        "lag_p50_first_third": None if early is None else round(early, 3),
        "lag_p50_last_third": None if late is None else round(late, 3),
        "lag_drift": None if drift is None else round(drift, 4),
        "per_minute": {m: per_minute[m].figures() for m in minutes},
        "memory_mb": [(round(t, 1), round(m / 2**20, 1)) for t, m in memory],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"sessions {report['sessions']}, errors {errors}; memory {report['rss_baseline_minute_mb']} -> "
          f"{report['rss_last_minute_mb']} MB (growth {report['memory_growth']}, target <= 0.05); "
          f"lag p50 {report['lag_p50_first_third']} -> {report['lag_p50_last_third']} s "
          f"(drift {report['lag_drift']}, target <= 0.10); written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
