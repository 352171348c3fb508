"""Session: one stream's stages, chained by bounded channels, run in one asyncio.TaskGroup.

- End of stream: the source closes its channel; each stage drains its inbox, flushes, and the
  session closes its outbox, so the end flushes through every stage.
- Cancel: cancelling `run()` cancels every stage task.
- Error: an exception in one stage aborts every channel (nobody waits forever on a full or empty
  queue), the others are cancelled, and `run()` raises `StageError` naming the stage.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from .channel import Channel, ChannelClosed, Overflow
from .clock import Clock, SimulatedClock
from .events import EventLog
from .stage import Stage, StageError


@dataclass
class Link:
    maxsize: int = 16
    overflow: Overflow = Overflow.BLOCK


@dataclass
class Session:
    """Runs `source -> stages... -> sink`.

    `source(outbox)` fills the first channel (the session closes it when the source returns);
    `sink(inbox)` consumes the last one. `links[i]` configures the channel feeding stage i
    (`links[len(stages)]` the one feeding the sink).
    """

    stages: list[Stage]
    source: Callable[[Channel[Any]], Awaitable[None]]
    sink: Callable[[Channel[Any]], Awaitable[None]]
    clock: Clock = field(default_factory=SimulatedClock)
    log: EventLog = field(default_factory=EventLog)
    links: list[Link] | None = None
    channels: list[Channel[Any]] = field(default_factory=list, init=False)

    def _make_channels(self) -> None:
        n = len(self.stages) + 1
        links = self.links or [Link() for _ in range(n)]
        if len(links) != n:
            raise ValueError(f"a session of {len(self.stages)} stages needs {n} links, got {len(links)}")
        names = ["source"] + [s.name for s in self.stages]
        self.channels = [
            Channel(link.maxsize, link.overflow, name=f"{names[i]}->{(names + ['sink'])[i + 1]}")
            for i, link in enumerate(links)
        ]

    async def run(self) -> None:
        self._make_channels()
        chans = self.channels

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
                raise StageError(name, e) from e
            finally:
                if outbox is not None:
                    outbox.close()

        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(guarded("source", self.source(chans[0]), chans[0]))
                for i, stage in enumerate(self.stages):
                    tg.create_task(guarded(stage.name, stage.run(chans[i], chans[i + 1]), chans[i + 1]))
                tg.create_task(guarded("sink", self.sink(chans[-1]), None))
        except BaseExceptionGroup as group:
            errors = [e for e in _flatten(group) if isinstance(e, StageError)]
            if errors:
                raise errors[0] from None
            stops = [e for e in _flatten(group) if not isinstance(e, _Stop)]
            if stops:
                raise
            # Only _Stop: a channel was closed under a stage without an error (should not happen).
            raise RuntimeError("session stopped: a channel was closed while a stage still used it") from group


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
