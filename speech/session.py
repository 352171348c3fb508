"""Session: one stream's stages, chained by bounded channels, run in one asyncio.TaskGroup.

A session is a chain (`source -> stages -> sink`) or a tree: a trunk (`source -> stages`) whose
output is copied into several branches (one per target language), each `stages -> sink` with its
own bounded links. See `Backlog` for how a slow branch holds back only itself.

- End of stream: the source closes its channel; each stage drains its inbox, flushes, and the
  session closes its outbox, so the end flushes through every stage.
- Cancel: cancelling `run()` cancels every stage task.
- Error: an exception in one stage aborts every channel (nobody waits forever on a full or empty
  queue), the others are cancelled, and `run()` raises `StageError` naming the stage.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from .channel import Channel, ChannelClosed, Overflow
from .clock import Clock, SimulatedClock
from .events import EventLog
from .stage import Stage, StageError
from .types import TextUpdate


@dataclass
class Link:
    maxsize: int = 16
    overflow: Overflow = Overflow.BLOCK


@dataclass
class Branch:
    """One branch of a tree session: `stages -> sink` fed by a copy of the trunk's output.

    `links[i]` configures the channel feeding stage i (`links[len(stages)]` the one feeding the sink).
    """

    name: str  # the target language, in a translation session
    stages: list[Stage]
    sink: Callable[[Channel[Any]], Awaitable[None]]
    links: list[Link] | None = None
    channels: list[Channel[Any]] = field(default_factory=list, init=False)
    backlog: "Backlog | None" = field(default=None, init=False)


@dataclass
class Session:
    """Runs `source -> stages... -> sink`, or `source -> stages... -> each branch`.

    `source(outbox)` fills the first channel (the session closes it when the source returns);
    `sink(inbox)` consumes the last one. `links[i]` configures the channel feeding stage i
    (`links[len(stages)]` the one feeding the sink, or the fan-out when there are branches).
    With `branches`, `sink` is not used (each branch has its own).
    """

    stages: list[Stage]
    source: Callable[[Channel[Any]], Awaitable[None]]
    sink: Callable[[Channel[Any]], Awaitable[None]] | None = None
    clock: Clock = field(default_factory=SimulatedClock)
    log: EventLog = field(default_factory=EventLog)
    links: list[Link] | None = None
    branches: list[Branch] = field(default_factory=list)
    backlog_items: int = 1024  # see Backlog
    channels: list[Channel[Any]] = field(default_factory=list, init=False)

    def _make_channels(self) -> None:
        n = len(self.stages) + 1
        links = self.links or [Link() for _ in range(n)]
        if len(links) != n:
            raise ValueError(f"a session of {len(self.stages)} stages needs {n} links, got {len(links)}")
        if not self.branches and self.sink is None:
            raise ValueError("a session needs a sink or branches")
        names = ["source"] + [s.name for s in self.stages]
        last = "fan-out" if self.branches else "sink"
        self.channels = [
            Channel(link.maxsize, link.overflow, name=f"{names[i]}->{(names + [last])[i + 1]}")
            for i, link in enumerate(links)
        ]
        for branch in self.branches:
            n = len(branch.stages) + 1
            blinks = branch.links or [Link() for _ in range(n)]
            if len(blinks) != n:
                raise ValueError(f"branch {branch.name!r} of {len(branch.stages)} stages needs {n} links")
            bnames = ["fan-out"] + [s.name for s in branch.stages] + ["sink"]
            branch.channels = [
                Channel(link.maxsize, link.overflow, name=f"{branch.name}:{bnames[i]}->{bnames[i + 1]}")
                for i, link in enumerate(blinks)
            ]
            branch.backlog = Backlog(self.backlog_items)

    def all_channels(self) -> list[Channel[Any]]:
        return self.channels + [ch for b in self.branches for ch in b.channels]

    async def run(self) -> None:
        self._make_channels()
        chans = self.all_channels()
        backlogs = [b.backlog for b in self.branches if b.backlog is not None]

        async def guarded(name: str, coro: Awaitable[None], outbox: Channel[Any] | None) -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except ChannelClosed as e:
                # A downstream stage already failed and aborted our outbox; its error is reported.
                raise _Stop() from e
            except BaseException as e:  # noqa: BLE001 - every failure must tear the session down
                self.log.write("error", stage=name, error=f"{type(e).__name__}: {e}")
                for ch in chans:
                    ch.abort()
                for backlog in backlogs:
                    backlog.abort()
                raise StageError(name, e) from e
            finally:
                if outbox is not None:
                    outbox.close()

        trunk = self.channels
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(guarded("source", self.source(trunk[0]), trunk[0]))
                for i, stage in enumerate(self.stages):
                    tg.create_task(guarded(stage.name, stage.run(trunk[i], trunk[i + 1]), trunk[i + 1]))
                if not self.branches:
                    assert self.sink is not None
                    tg.create_task(guarded("sink", self.sink(trunk[-1]), None))
                else:
                    tg.create_task(guarded("fan-out", _fan_out(trunk[-1], backlogs), None))
                for branch in self.branches:
                    bc, backlog = branch.channels, branch.backlog
                    assert backlog is not None
                    tg.create_task(guarded(f"{branch.name}:fan-out", backlog.pump(bc[0]), bc[0]))
                    for i, stage in enumerate(branch.stages):
                        tg.create_task(guarded(f"{branch.name}:{stage.name}", stage.run(bc[i], bc[i + 1]), bc[i + 1]))
                    tg.create_task(guarded(f"{branch.name}:sink", branch.sink(bc[-1]), None))
        except BaseExceptionGroup as group:
            errors = [e for e in _flatten(group) if isinstance(e, StageError)]
            if errors:
                raise errors[0] from None
            stops = [e for e in _flatten(group) if not isinstance(e, _Stop)]
            if stops:
                raise
            # Only _Stop: a channel was closed under a stage without an error (should not happen).
            raise RuntimeError("session stopped: a channel was closed while a stage still used it") from group


async def _fan_out(inbox: Channel[Any], backlogs: list["Backlog"]) -> None:
    """Copies every item of the trunk's output into each branch's backlog; never waits on a branch."""
    try:
        async for item in inbox:
            for backlog in backlogs:
                backlog.push(item)
    finally:
        for backlog in backlogs:
            backlog.close()


class Backlog:
    """The fan-out's buffer for one branch: never drops, never makes the trunk wait.

    The policy, and why: the trunk (the recogniser) is shared, so a branch that waited on it with a
    blocking link would stall every other branch and, through the recogniser, the input. Text is
    tiny, so each branch gets its own buffer between the fan-out and its first bounded link: a slow
    branch falls behind alone and catches up from its buffer. Up to `items` pending updates, the
    branch sees exactly the trunk's sequence of updates (deterministic output). Beyond that, a new
    TextUpdate is merged into the last pending one when that one does not end a segment: the words
    committed are concatenated (none lost), the tentative tail is the newer one (a tentative tail is
    replaced anyway). Memory is then bounded by the committed transcript plus one update per segment.
    Items that are not TextUpdates are never merged.
    """

    def __init__(self, items: int = 1024) -> None:
        self.items = max(1, items)
        self.merged = 0  # updates merged into their predecessor (a branch that fell far behind)
        self.high_water = 0
        self._queue: deque[Any] = deque()
        self._closed = False
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, item: Any) -> None:
        if self._closed:
            return
        last = self._queue[-1] if self._queue else None
        if (len(self._queue) >= self.items and isinstance(item, TextUpdate) and isinstance(last, TextUpdate)
                and not last.final and not last.end_of_stream):
            self._queue[-1] = merge_updates(last, item)
            self.merged += 1
        else:
            self._queue.append(item)
        self.high_water = max(self.high_water, len(self._queue))
        self._changed.set()

    def close(self) -> None:
        self._closed = True
        self._changed.set()

    def abort(self) -> None:
        self._queue.clear()
        self.close()

    async def pump(self, outbox: Channel[Any]) -> None:
        """Moves the buffered items into the branch's first link (which may block: only this branch)."""
        while True:
            while self._queue:
                await outbox.put(self._queue.popleft())
            if self._closed:
                return
            self._changed.clear()
            await self._changed.wait()


def merge_updates(first: TextUpdate, second: TextUpdate) -> TextUpdate:
    """One update equivalent to `first` then `second` for a consumer that keeps committed words."""
    return TextUpdate(
        committed=first.committed + second.committed,
        tentative=second.tentative,
        final=second.final,
        source_time=second.source_time,
        wall_time=second.wall_time,
        end_of_stream=second.end_of_stream,
        language=second.language or first.language,
    )


class _Stop(Exception):
    """A stage stopped because its channel was aborted by another stage's failure."""


def _flatten(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        if isinstance(e, BaseExceptionGroup):
            out.extend(_flatten(e))
        else:
            out.append(e)
    return out
