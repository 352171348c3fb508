"""Shared by the load and soak benchmarks: a `speech serve` subprocess on loopback, clients that
stream shared recordings in real time, and the figures taken from what the clients receive.

Lag (seconds) of a committed recognition/translation event = when the server emitted it minus
when the audio it had consumed had arrived (the server stamps it into each event). A session with
several targets has its translation lags also kept per target.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
LIBRIVOX = (REPO / ".." / "shared" / "data" / "speech" / "librivox").resolve()

from speech.server.client import StreamResult, stream_file  # noqa: E402
from speech.stats import percentile  # noqa: E402


def clips(limit: int) -> list[Path]:
    manifest = LIBRIVOX / "manifest.jsonl"
    if not manifest.exists():
        raise SystemExit(f"{manifest}: not found; the shared recordings must be beside the repository")
    rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    return [LIBRIVOX / r["file"] for r in rows[:limit]]


class ServerProcess:
    """`speech serve` on 127.0.0.1 with a free port; its CPU time and memory read through psutil."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "speech.cli", "serve", "--host", "127.0.0.1", "--port", "0", *args],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (ws://\S+)", line)
        if not m:
            self.proc.kill()
            raise SystemExit(f"speech serve did not start (said {line!r})")
        self.url = m.group(1)
        import psutil

        self.ps = psutil.Process(self.proc.pid)

    def cpu_s(self) -> float:
        t = self.ps.cpu_times()
        return t.user + t.system

    def rss(self) -> int:
        return self.ps.memory_info().rss

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Lags:
    recognition: list[float] = field(default_factory=list)
    translation: list[float] = field(default_factory=list)
    audio_s: float = 0.0
    sessions: int = 0
    errors: list[str] = field(default_factory=list)
    flush_s: list[float] = field(default_factory=list)
    by_target: dict[str, list[float]] = field(default_factory=dict)  # translation lags of each target
    words: dict[str, int] = field(default_factory=dict)  # committed translated words of each target

    def add(self, result: StreamResult) -> None:
        self.sessions += 1
        self.audio_s += result.sent_s
        if result.error:
            self.errors.append(result.error["code"])
        for e in result.events:
            if e["type"] in ("recognition", "translation") and e["committed"] and e.get("lag") is not None:
                getattr(self, e["type"]).append(e["lag"])
                if e["type"] == "translation":
                    target = e.get("target", "")
                    self.by_target.setdefault(target, []).append(e["lag"])
                    self.words[target] = self.words.get(target, 0) + len(e["committed"])
        if result.done and result.done["summary"].get("flush_s") is not None:
            self.flush_s.append(result.done["summary"]["flush_s"])

    def figures(self) -> dict:
        def r(x):
            return None if x is None else round(x, 3)

        return {
            "sessions": self.sessions,
            "audio_s": round(self.audio_s, 2),
            "translation_lag_p50": r(percentile(self.translation, 50)),
            "translation_lag_p90": r(percentile(self.translation, 90)),
            "recognition_lag_p50": r(percentile(self.recognition, 50)),
            "recognition_lag_p90": r(percentile(self.recognition, 90)),
            "flush_p50": r(percentile(self.flush_s, 50)),
            "errors": self.errors,
            "targets": {t: {"translation_lag_p50": r(percentile(xs, 50)), "translation_lag_p90": r(percentile(xs, 90)),
                            "words": self.words[t]} for t, xs in sorted(self.by_target.items())},
        }


async def stream_clips(url: str, paths: list[Path], source: str, target: str, lags: Lags, speed: float = 1.0,
                       targets: tuple[str, ...] = ()) -> None:
    """One client: the clips one after another, each a session, in real time (`targets`: a session
    with several targets; `target` then names the first)."""
    for path in paths:
        result = await stream_file(url, path, source, target, speed=speed, timeout=600, targets=targets)
        lags.add(result)


def now() -> float:
    return time.monotonic()
