"""Does a fault in one session slow the others? One healthy session (real recogniser, Apertium
en->es, eSpeak) streams recordings in real time against one `speech serve`: alone, and beside a
cheap session into which one fault is injected (benchmarks/faultkit.py lists them). Reports the
healthy session's translation lag p90 in each case, its ratio to the alone run of the same round,
how the faulty session ended, and whether the healthy one and the server stayed well.

    nice -n 10 .venv/bin/python benchmarks/faults.py [--rounds 3] [--clips 2] [--faults peer,hang,...]
        [--json] [--out FILE]

The cases run in alternation within each round (the machine's load drifts alike for all); a row
gives the median over rounds of the p90 and of its ratio to the same round's alone run, and the p90
of every round's events pooled (more events, so a steadier figure) with its ratio to the pooled
alone runs. Lag is the server's own figure (benchmarks/loadkit.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import urllib.request
from pathlib import Path
from statistics import median

import numpy as np
import psutil
from faultkit import FAULTS
from loadkit import Lags, ServerProcess, clips

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from speech.progress import Progress  # noqa: E402
from speech.server.client import stream_audio, stream_file  # noqa: E402
from speech.stats import percentile  # noqa: E402

APERTIUM_ES_PT = "apertium-es-pt"  # a path in every program of the faulty pair's pipeline (Debian's layout)


class Bench:
    def __init__(self, server: ServerProcess, log_dir: Path, paths: list[Path]) -> None:
        self.server, self.log_dir, self.paths = server, log_dir, paths
        self.connections = 0  # websocket connections opened: the server numbers session logs by them
        self.seconds = sum(len(samples) / rate for samples, rate in map(_read, paths))

    async def healthy(self, lags: Lags) -> None:
        for path in self.paths:
            self.connections += 1
            lags.add(await stream_file(self.server.url, path, "en", "es", speed=1.0, timeout=600, resume=False))

    async def case(self, fault: str | None) -> dict:
        lags = Lags()
        if fault is None:
            await self.healthy(lags)
            return {**lags.figures(), "fault": "alone", "healthz": healthz(self.server.url), "lags": lags.translation}
        if fault == "logfull":  # the next connection's log: every write fails
            link = self.log_dir / f"session-{self.connections + 1:05d}.jsonl"
            link.unlink(missing_ok=True)
            link.symlink_to("/dev/full")
        ready, under_way = asyncio.Event(), asyncio.Event()

        def on_event(e: dict) -> None:
            if e["type"] in ("ready", "error"):
                ready.set()
            if e["type"] == "translation" and e["committed"]:
                under_way.set()

        self.connections += 1
        faulty = asyncio.create_task(stream_audio(
            self.server.url, tone(self.seconds), 16000, "es", f"pt-{fault}", speed=1.0, on_event=on_event,
            timeout=600, resume=False))
        await asyncio.wait([faulty, asyncio.create_task(ready.wait())], return_when=asyncio.FIRST_COMPLETED)
        killed: list[int] = []
        attack = (asyncio.create_task(kill_apertium(self.server.ps, under_way, fault, killed))
                  if fault.startswith("kill") else None)
        if attack is not None:  # the killer scans every process: it stops with its victim's session
            faulty.add_done_callback(lambda _: attack.cancel())
        try:
            await self.healthy(lags)
            result = await faulty
        finally:
            if attack is not None:
                attack.cancel()
        error = result.error
        return {**lags.figures(), "fault": fault, "healthz": healthz(self.server.url), "lags": lags.translation,
                "faulty_ended": f"{error['code']}: {error['message'][:120]}" if error else
                                (f"done ({result.done['reason']})" if result.done else f"closed {result.close_code}"),
                "faulty_translated": len(result.committed("translation")), "processes_killed": len(killed)}


async def kill_apertium(server: psutil.Process, under_way: asyncio.Event, fault: str, killed: list[int]) -> None:
    """killonce: one program of the es->pt pipeline, once; kill: every process of it, as each starts."""
    await under_way.wait()
    while True:
        victims = [p for p in server.children(recursive=True) if _is_es_pt(p)]
        if fault == "killonce":
            if victims:
                _kill(victims[len(victims) // 2].pid, killed)
                return
        else:
            for p in victims:
                _kill(p.pid, killed)
        await asyncio.sleep(0.02)


def _is_es_pt(p: psutil.Process) -> bool:
    try:
        return any(APERTIUM_ES_PT in arg for arg in p.cmdline())
    except psutil.Error:
        return False


def _kill(pid: int, killed: list[int]) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    except ProcessLookupError:
        pass


def _read(path: Path) -> tuple[np.ndarray, int]:
    import soundfile as sf

    data, rate = sf.read(str(path), dtype="float32", always_2d=False)
    return data, rate


def tone(seconds: float, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def healthz(url: str) -> int:
    base = url.replace("ws://", "http://").rsplit("/", 1)[0]
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def summarise(rounds: list[dict[str, dict]], cases: list[str]) -> list[dict]:
    """One row per case: medians over rounds; the ratio is taken within each round first."""
    rows = []
    pooled_alone = percentile([x for r in rounds for x in r["alone"]["lags"]], 90)
    # A fault's own effect: against `peer`, the same second session without a fault (the control).
    pooled_peer = percentile([x for r in rounds for x in r["peer"]["lags"]], 90) if "peer" in cases else None
    for name in cases:
        runs = [r[name] for r in rounds]
        p90s = [x["translation_lag_p90"] for x in runs if x["translation_lag_p90"] is not None]
        ratios = [r[name]["translation_lag_p90"] / r["alone"]["translation_lag_p90"] for r in rounds
                  if r[name]["translation_lag_p90"] and r["alone"]["translation_lag_p90"]]
        pooled = percentile([x for r in runs for x in r["lags"]], 90)
        to_peer = [r[name]["translation_lag_p90"] / r["peer"]["translation_lag_p90"] for r in rounds
                   if "peer" in r and r[name]["translation_lag_p90"] and r["peer"]["translation_lag_p90"]]
        rows.append({
            "fault": name,
            "translation_lag_p90_pooled": round(pooled, 3) if pooled is not None else None,
            "pooled_ratio_to_alone": round(pooled / pooled_alone, 3) if pooled and pooled_alone else None,
            "translation_events": sum(len(r["lags"]) for r in runs),
            "translation_lag_p90": round(median(p90s), 3) if p90s else None,
            "translation_lag_p90_rounds": [x["translation_lag_p90"] for x in runs],
            "ratio_to_alone": round(median(ratios), 3) if ratios else None,
            "ratio_rounds": [round(x, 3) for x in ratios],
            "ratio_to_peer": round(median(to_peer), 3) if to_peer else None,
            "pooled_ratio_to_peer": round(pooled / pooled_peer, 3) if pooled and pooled_peer else None,
            "healthy_errors": sorted({e for x in runs for e in x["errors"]}),
            "healthz": sorted({x["healthz"] for x in runs}),
            "faulty_ended": sorted({x.get("faulty_ended", "-").split(":")[0] for x in runs}),
            "faulty_message": runs[-1].get("faulty_ended", ""),
            "processes_killed": [x.get("processes_killed", 0) for x in runs],
        })
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="alternations of every case (default 3)")
    parser.add_argument("--clips", type=int, default=2, help="recordings the healthy session streams (default 2)")
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated (default all: {','.join(FAULTS)})")
    parser.add_argument("--asr-model", default="whisper-tiny.en", help="the healthy session's recogniser")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    args = parser.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown fault(s) {sorted(unknown)}; faults: {', '.join(FAULTS)}")
    cases = ["alone", *faults]
    paths = clips(args.clips)
    load_before = os.getloadavg()
    rounds: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess("--max-sessions", "2", "--warm-up", "en:es", "--asr-model", args.asr_model,
                               "--mt-backend", "apertium", "--resume-grace", "0", "--log-dir", tmp,
                               "--pipeline", "benchmarks.faultkit:make_factory")
        bench = Bench(server, Path(tmp), paths)
        try:
            with Progress(len(cases) * args.rounds, "faults") as progress:
                for _ in range(args.rounds):
                    row: dict[str, dict] = {}
                    for name in cases:
                        row[name] = asyncio.run(bench.case(None if name == "alone" else name))
                        progress.update(1, f"{name}: p90 {row[name]['translation_lag_p90']} s")
                    rounds.append(row)
        finally:
            server.stop()
    report = {"pair": "en-es", "healthy": f"{args.asr_model} + apertium + espeak, {len(paths)} clips "
                                         f"({bench.seconds:.1f} s) in real time",
              "rounds": args.rounds, "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()], "cases": summarise(rounds, cases)}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print("| fault | healthy MT lag p90 (s), median of rounds | ratio to alone, median of rounds | "
          "p90 pooled over rounds | pooled ratio to alone | ratio to peer (median / pooled) | healthy errors | "
          "/healthz | faulty session ended |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in report["cases"]:
        print(f"| {c['fault']} | {c['translation_lag_p90']} | {c['ratio_to_alone']} | "
              f"{c['translation_lag_p90_pooled']} | {c['pooled_ratio_to_alone']} | "
              f"{c['ratio_to_peer']} / {c['pooled_ratio_to_peer']} | {len(c['healthy_errors'])} | "
              f"{','.join(map(str, c['healthz']))} | {c['faulty_message'] or '-'} |")
    print(f"load average before {report['load_average_before']}, after {report['load_average_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
