"""A long talk through `speech serve` in real time: the listener's lag per minute on the wall clock.

    .venv/bin/python benchmarks/longtalk.py [--minutes 10] [--pair en-es] [--serve-args "..."]
        [--out benchmarks/results/longtalk.json]

The talk is the one `speech bench s2st --long` builds (speech.tts.longtalk: the shared recordings of
the source language joined with 0.3-1.0 s pauses), streamed to a fresh `speech serve` at real-time
pace. The server's `synthesis` events carry each word's listener lag (when the listener hears it -
when its source word was spoken: speech.server.live) and when it is heard; this reports
their p50, p90 and max per minute of the talk and the slope, computed as for the simulated clock
(speech.eval.listener: a word counts in the minute its source word was spoken), the `done`
summary, and when and on which machine it ran (its vector extensions set how fast the int8
models run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
from pathlib import Path

from loadkit import ServerProcess

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from speech.eval.listener import HeardWord, lag_per_minute, lag_slope  # noqa: E402
from speech.progress import Progress  # noqa: E402
from speech.stats import percentile  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the talk (default 10)")
    parser.add_argument("--pair", default="en-es", help="source-target (default en-es)")
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the shared data folder")
    parser.add_argument("--serve-args", default="", help="extra `speech serve` arguments, e.g. '--no-pace-control'")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args()
    from speech.eval.configs import machine
    from speech.tts.longtalk import build_talk

    started, where = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), machine()
    source, target = args.pair.split("-")
    talk = build_talk(Path(args.data), source, args.minutes)
    heard: list[HeardWord] = []  # per word: when heard, when its source word was spoken
    done: dict = {}
    with ServerProcess("--warm-up", f"{source}:{target}", *shlex.split(args.serve_args)) as server, \
            Progress(int(talk.duration), label=f"long talk {args.pair} (real time)") as bar:
        from speech.server.client import stream_audio

        shown = [0.0]

        def on_event(event: dict) -> None:
            if event.get("type") == "synthesis":
                for t, lag in zip(event.get("word_heard") or [], event.get("word_lags") or []):
                    heard.append(HeardWord("", float(t), float(t) - float(lag)))
            if event.get("type") == "done":
                done.update(event.get("summary") or {})
            if event.get("type") == "recognition" and event.get("source_time"):
                t = float(event["source_time"])
                if t - shown[0] >= 5:
                    bar.update(int(t - shown[0]), status=f"{len(heard)} words heard")
                    shown[0] = t

        asyncio.run(stream_audio(server.url, talk.samples, 16000, source, target, speed=1.0, on_event=on_event,
                                 timeout=talk.duration + 600))
    per_minute = lag_per_minute(heard)
    lags = [w.lag for w in heard]
    slope = lag_slope(heard)
    out = {"pair": args.pair, "talk_s": round(talk.duration, 1), "serve_args": args.serve_args,
           "synthesis_lag_p50_s": percentile(lags, 50), "synthesis_lag_p90_s": percentile(lags, 90),
           "synthesis_lag_p90_s_per_minute": [m["p90"] for m in per_minute], "per_minute": per_minute,
           "slope_s_per_min": slope, "done": done, "date": started, "machine": where}
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
