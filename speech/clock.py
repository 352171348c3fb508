"""Clocks: the wall clock for live use, and a simulated clock for offline evaluation.

Every emitted item carries two stamps:
- source time: seconds of source audio consumed (computation-unaware; deterministic);
- wall time: computation-aware seconds since the session started.

With `WallClock`, wall time is real elapsed time (use it when audio arrives in real time).
With `SimulatedClock`, audio is fed as fast as possible and wall time is *emulated*: each stage
keeps a `StageClock` that starts work on an input at max(input's wall time, when the stage became
free) and finishes it after the measured compute time. That is exactly the time the output would
have had with real-time input, one core per stage, without having to wait for real time.

Decisions taken on the computation-aware timeline (the chunker's time-outs, the synthesis pace)
follow the measured compute time, so a loaded machine changes what is spoken when, and with it the
computation-unaware audio figures. `SimulatedClock(work_s=...)` charges a fixed time per unit of
work instead: a deterministic machine, on which a run is reproducible figure for figure.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod


class StageClock(ABC):
    """Per-stage timing: bracket each unit of work with `begin(arrival)` and `end()`."""

    @abstractmethod
    def begin(self, arrival: float) -> None:
        """Work starts on an input that became available at `arrival` (wall seconds)."""

    @abstractmethod
    def end(self) -> float:
        """Work done; returns the wall time at which the output is available."""

    @abstractmethod
    def now(self) -> float:
        """The stage's current wall time."""


class Clock(ABC):
    """A session's clock. `realtime` says whether sources must pace themselves in real time."""

    realtime: bool

    @abstractmethod
    def now(self) -> float:
        """Seconds since the session started (wall, or emulated)."""

    @abstractmethod
    def stage(self, name: str) -> StageClock:
        """A timer for one stage of the session."""

    @abstractmethod
    async def sleep_until(self, t: float) -> None:
        """Wait until `now() >= t` (a no-op on the simulated clock)."""


class _WallStageClock(StageClock):
    def __init__(self, clock: "WallClock") -> None:
        self._clock = clock

    def begin(self, arrival: float) -> None:
        pass

    def end(self) -> float:
        return self._clock.now()

    def now(self) -> float:
        return self._clock.now()


class WallClock(Clock):
    realtime = True

    def __init__(self) -> None:
        self._t0 = time.monotonic()

    def restart(self) -> None:
        self._t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._t0

    def stage(self, name: str) -> StageClock:
        return _WallStageClock(self)

    async def sleep_until(self, t: float) -> None:
        import asyncio

        delay = t - self.now()
        if delay > 0:
            await asyncio.sleep(delay)


class _SimulatedStageClock(StageClock):
    def __init__(self, work_s: float | None = None) -> None:
        self._free = 0.0
        self._start = 0.0
        self._t0: float | None = None
        self._work_s = work_s

    def begin(self, arrival: float) -> None:
        self._start = max(arrival, self._free)
        self._t0 = time.perf_counter()

    def end(self) -> float:
        if self._t0 is None:
            return self._free
        took = time.perf_counter() - self._t0 if self._work_s is None else self._work_s
        self._free = self._start + took
        self._t0 = None
        return self._free

    def now(self) -> float:
        return self._free


class SimulatedClock(Clock):
    """Offline clock: no waiting; computation-aware time emulated per stage (see module doc).
    `work_s`: None to charge each unit of work its measured compute time; a number of seconds to
    charge every unit that instead (a deterministic machine)."""

    realtime = False

    def __init__(self, work_s: float | None = None) -> None:
        if work_s is not None and work_s < 0:
            raise ValueError(f"work_s must be >= 0 seconds, got {work_s}")
        self._latest = 0.0
        self._work_s = work_s

    def now(self) -> float:
        return self._latest

    def advance(self, t: float) -> None:
        self._latest = max(self._latest, t)

    def stage(self, name: str) -> StageClock:
        return _SimulatedStageClock(self._work_s)

    async def sleep_until(self, t: float) -> None:
        self.advance(t)


def make_clock(realtime: bool) -> Clock:
    return WallClock() if realtime else SimulatedClock()
