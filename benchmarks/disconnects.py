"""Random disconnects during real sessions: nothing committed is lost, and a speaker who resumes
misses no event.

Starts `speech serve` with the embedded defaults (Whisper base, the default translation path,
eSpeak NG / Piper) and streams the shared LibriVox recordings (English -> Spanish) through it,
cutting each speaker's network connection (a transport abort, not a close) at random moments:

- with resume: each session is cut up to `--cuts` times; the client reconnects with its resume
  token. Checked per session: it ends with `done`, every numbered event arrives exactly once and
  in order, and what the client holds as committed recognition and translation is exactly what
  the session's event log committed;
- without resume: each session is cut once and never comes back (resume grace 0). Checked per
  session: its log ends with `end`, what the client got is a prefix of what the log committed,
  and every committed translated word was spoken (the TTS records cover the translation, words
  the duration control dropped counted as spoken).

Both modes check every committed translated word was synthesised. Audio goes at `--speed` x real
time, so a session lasts a few seconds and the recogniser runs behind; that changes nothing about
what is committed. Prints a JSON report; `--out` stores it. Takes 5-10 minutes.

    .venv/bin/python benchmarks/disconnects.py --sessions 40 --out benchmarks/results/disconnects.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.loadkit import ServerProcess, clips  # noqa: E402
from benchmarks.scalekit import http_get  # noqa: E402
from speech.audio import read_audio, resample  # noqa: E402
from speech.events import read_events  # noqa: E402
from speech.progress import Progress  # noqa: E402
from speech.server.client import stream_audio  # noqa: E402

RATE = 16000


def recordings(n: int) -> list[np.ndarray]:
    out = []
    for path in clips(n):
        samples, rate, _ = read_audio(path)
        out.append(resample(samples, rate, RATE))
    return out


def cutter(rng: random.Random, cuts: int, window_s: float):
    """Aborts the first `cuts` connections at a random moment within `window_s` of opening."""
    state = {"n": 0}

    def on_connection(ws) -> None:  # noqa: ANN001 - a websockets connection
        if state["n"] < cuts:
            state["n"] += 1
            asyncio.get_running_loop().call_later(rng.uniform(0.05, window_s), ws.transport.abort)
    return on_connection


def settle(http_base: str, timeout_s: float = 120.0) -> None:
    """Wait until the server holds no session: a cut session has flushed and written its `end`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, body = http_get(f"{http_base}/metrics")
        if status == 200 and isinstance(body, dict) and body["sessions"]["active"] == 0:
            return
        time.sleep(0.2)
    raise TimeoutError(f"sessions still open after {timeout_s:g} s")


def committed(records: list[dict], stage: str) -> list[str]:
    return [w["text"] for r in records if r.get("kind") == "update" and r.get("stage") == stage
            for w in r.get("committed", [])]


def spoken(records: list[dict]) -> list[str]:
    """The translated words the TTS stage accounted for: spoken, dropped by the duration control,
    or skipped as unspeakable (nothing but symbols)."""
    words = []
    for r in records:
        if r.get("kind") == "audio" and r.get("stage") == "tts":
            words += [w[0] for w in r.get("word_times") or []] or r.get("text", "").split()
            words += list(r.get("dropped", []))
        elif r.get("kind") == "tts_skip":
            words += r.get("text", "").split()
    return words


def _bag(words: list[str]) -> list[str]:
    return sorted(k for k in (w.strip(".,;:!?¡¿\"'«»()").casefold() for w in words) if k)


def session_log(log_dir: Path, session: str) -> list[dict]:
    for path in log_dir.glob("session-*.jsonl"):
        records = read_events(path)
        if any(r.get("kind") == "session" and r.get("id") == session for r in records):
            return records
    raise LookupError(f"no log for session {session}")


def check(res, log_dir: Path, resumed: bool) -> list[str]:  # noqa: ANN001 - a StreamResult
    """What went wrong in one session (empty: nothing)."""
    problems = []
    if res.session is None:
        return ["no session"] if resumed else []  # cut before `ready`: nothing was committed
    records = session_log(log_dir, res.session)
    asr, mt = committed(records, "asr"), committed(records, "mt")
    if not records or records[-1].get("kind") != "end":
        problems.append("log does not end with end")
    if _bag(spoken(records)) != _bag(mt):  # as a bag: condensation may move a comma to a neighbour
        problems.append(f"{len(mt)} translated words committed, {len(spoken(records))} spoken")
    got_asr, got_mt = res.committed("recognition"), res.committed("translation")
    if resumed:
        seqs = [e["seq"] for e in res.events if "seq" in e]
        if res.done is None or res.error is not None:
            problems.append(f"no done (error {res.error})")
        if seqs != list(range(1, len(seqs) + 1)):
            problems.append("events missing or repeated")
        if got_asr != asr or got_mt != mt:
            problems.append("client's committed text differs from the log's")
    elif got_asr != asr[: len(got_asr)] or got_mt != mt[: len(got_mt)]:
        problems.append("client's committed text is not a prefix of the log's")
    return problems


async def run_mode(url: str, audio: list[np.ndarray], sessions: int, resumed: bool, cuts: int, speed: float,
                   rng: random.Random, log_dir: Path, bar: Progress) -> dict:
    drops = resumes = asr_words = mt_words = 0
    problems: dict[str, list[str]] = {}
    for i in range(0, sessions, 2):  # two at a time: the server's default cap on 2 cores
        batch = []
        for j in range(i, min(i + 2, sessions)):
            samples = audio[j % len(audio)]
            window = len(samples) / RATE / speed
            batch.append(stream_audio(url, samples, RATE, "en", "es", speed=speed, resume=resumed,
                                      on_connection=cutter(rng, cuts if resumed else 1, window)))
        results = await asyncio.gather(*batch)
        await asyncio.to_thread(settle, url.replace("ws://", "http://").rsplit("/ws", 1)[0])
        for res in results:
            drops += res.drops
            resumes += res.resumes
            if res.session is not None:
                records = session_log(log_dir, res.session)
                asr_words += len(committed(records, "asr"))
                mt_words += len(committed(records, "mt"))
            found = check(res, log_dir, resumed)
            if found:
                problems[res.session or f"unnamed-{i}"] = found
            bar.update(1)
    return {"sessions": sessions, "drops": drops, "resumes": resumes, "asr_words_committed": asr_words,
            "mt_words_committed": mt_words, "sessions_with_problems": len(problems), "problems": problems}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=40, help="sessions per mode (default 40)")
    parser.add_argument("--cuts", type=int, default=3, help="cuts per resumed session (default 3)")
    parser.add_argument("--speed", type=float, default=2.0, help="audio pace, x real time (default 2)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    args = parser.parse_args()
    if args.sessions < 1 or args.cuts < 1 or args.speed <= 0:
        parser.error("--sessions and --cuts must be >= 1 and --speed > 0")
    rng = random.Random(args.seed)
    audio = recordings(10)
    report: dict = {"command": "benchmarks/disconnects.py " + " ".join(sys.argv[1:]), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, Progress(2 * args.sessions, label="disconnects") as bar:
        for mode, resumed, grace in (("resume", True, "30"), ("no_resume", False, "0")):
            log_dir = Path(tmp) / mode
            log_dir.mkdir()
            with ServerProcess("--log-dir", str(log_dir), "--resume-grace", grace) as server:
                report[mode] = asyncio.run(run_mode(server.url, audio, args.sessions, resumed, args.cuts,
                                                    args.speed, rng, log_dir, bar))
    report["wall_s"] = round(time.perf_counter() - started, 1)
    report["drops"] = report["resume"]["drops"] + report["no_resume"]["drops"]
    report["ok"] = not report["resume"]["problems"] and not report["no_resume"]["problems"]
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
