"""The thread and session budget: how many threads each engine may use, from the machine's cores
and the number of sessions (and branches per session) the process runs at once.

One object per process, made by whoever owns the process (`speech serve`, the CLI) and handed to
the registry, whose factories ask it when an engine's config leaves its thread count unset
(`None`). An explicit option always wins.

Why a budget: each engine sizes its own pool for the whole machine (CTranslate2, llama.cpp and
onnxruntime each default to every core), so one session alone asked for 5+ threads on 2 cores, and
two sessions for twice that. Spinning OpenMP workers that wait for a busy core collapse throughput
(llama.cpp fell from ~60 to 2-9 tok/s with the recogniser on the other core). The plan keeps the
sum of the threads that can compute at once near the number of cores:

- Whisper (CTranslate2): the loaded model is shared. One worker (a decode at a time) per
  WHISPER_CORES_PER_WORKER cores, at most one per session, each with `cores // workers` threads;
  more sessions than workers queue for a worker. On 2 cores one 2-thread worker beat two 1-thread
  workers at 2 sessions (benchmarks/sessions.py, docs/deploy.md): a decode that runs alone on
  both cores finishes sooner than two that share them, for the same throughput.
- Gemma (llama.cpp): one context per branch; `cores // (sessions x branches)` threads each, at
  least one.
- Piper and Silero VAD (onnxruntime): one thread each: their calls are short (60-110 ms a chunk,
  well under 1 ms a VAD window) and a second thread gains nothing at this size.
- Kokoro (onnxruntime): a piece takes 0.2-0.9 s to synthesise on one thread, which the listener
  waits for; two threads where the plan has the cores (3-minute en->pt talk, listener lag p50 / p90
  4.52 / 5.84 s with one, 4.31 / 5.48 s with two), spinning off so idle workers leave the core
  to the recogniser.
- Bergamot and Apertium: a single native engine or process per pair that serves one call at a
  time (a lock): one core each at most; listed so the plan shows every consumer.

Loaded models take their thread count when they load, so the plan is sized for the session cap
(the most sessions that can be live), not re-sized as sessions come and go.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Sessions per core that one machine holds in real time with the embedded defaults (en->es,
# Apertium, eSpeak NG): benchmarks/sessions.py on a 2-core machine kept 2 sessions within 1.5x of
# one session's p90 translation lag in every run, 3 only in some (docs/deploy.md).
SESSIONS_PER_CORE = 1.0

# Cores per Whisper worker: CTranslate2 gains little from more threads on a model this small, so a
# large machine runs several decodes side by side instead of one very wide one.
WHISPER_CORES_PER_WORKER = 4

ENGINES = ("whisper", "whisper_workers", "llama", "onnx", "kokoro", "vad", "bergamot", "apertium")


def machine_cores() -> int:
    """Cores this process may run on (the affinity mask, which containers and taskset narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def default_max_sessions(cores: int | None = None) -> int:
    """The session cap a machine holds in real time (SESSIONS_PER_CORE, measured)."""
    return max(1, round((cores or machine_cores()) * SESSIONS_PER_CORE))


@dataclass(frozen=True)
class ThreadBudget:
    cores: int
    sessions: int = 1  # the most sessions live at once (the server's --max-sessions)
    branches: int = 1  # translation branches per session (targets)

    def __post_init__(self) -> None:
        for name in ("cores", "sessions", "branches"):
            if getattr(self, name) < 1:
                raise ValueError(f"a thread budget needs {name} >= 1, got {getattr(self, name)}")

    @classmethod
    def for_machine(cls, sessions: int = 1, branches: int = 1, cores: int | None = None) -> "ThreadBudget":
        return cls(cores or machine_cores(), sessions, branches)

    def threads(self, engine: str) -> int:
        """Threads (or, for "whisper_workers", parallel decodes) for one engine."""
        workers = max(1, min(self.sessions, self.cores // WHISPER_CORES_PER_WORKER))
        plan = {
            "whisper": max(1, self.cores // workers),
            "whisper_workers": workers,
            "llama": max(1, self.cores // (self.sessions * self.branches)),
            "onnx": 1,
            "kokoro": max(1, min(2, self.cores // (self.sessions * self.branches))),
            "vad": 1,
            "bergamot": 1,
            "apertium": 1,
        }
        try:
            return plan[engine]
        except KeyError:
            raise ValueError(f"no thread plan for engine {engine!r}; engines: {', '.join(ENGINES)}") from None

    def resolve(self, engine: str, given: int | None) -> int:
        """`given` when an option set it, else the plan's figure."""
        return given if given is not None else self.threads(engine)

    def to_json(self) -> dict:
        return {"cores": self.cores, "sessions": self.sessions, "branches": self.branches,
                "threads": {e: self.threads(e) for e in ENGINES}}

    def describe(self) -> str:
        t = self.to_json()["threads"]
        return (f"{self.cores} cores, {self.sessions} session(s) x {self.branches} branch(es): "
                f"whisper {t['whisper_workers']} worker(s) x {t['whisper']} thread(s), llama {t['llama']}, "
                f"onnx {t['onnx']}, vad {t['vad']}")
