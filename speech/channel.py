"""Bounded channels between stages, with close, end-of-stream and a per-link overflow policy."""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from typing import AsyncIterator, Generic, TypeVar

T = TypeVar("T")


class Overflow(enum.Enum):
    """What `put` does when the channel is full.

    BLOCK waits (back-pressure: text and synthesised audio, where nothing may be lost).
    DROP_OLDEST and DROP_NEWEST never wait and count what they dropped (live microphone input,
    where falling behind real time is worse than losing a frame).
    """

    BLOCK = "block"
    DROP_OLDEST = "drop_oldest"
    DROP_NEWEST = "drop_newest"


class ChannelClosed(Exception):
    """Raised by `put` on a channel that was closed."""


class Channel(Generic[T]):
    """A bounded FIFO for one producer and one consumer.

    `close()` marks end of stream: the consumer drains what is queued, then iteration ends.
    `abort()` drops what is queued and wakes both sides (teardown after an error).
    """

    def __init__(self, maxsize: int = 16, overflow: Overflow = Overflow.BLOCK, name: str = "") -> None:
        if maxsize < 1:
            raise ValueError("a channel needs room for at least one item")
        self.maxsize = maxsize
        self.overflow = overflow
        self.name = name
        self.dropped = 0
        self.put_count = 0
        self._items: deque[T] = deque()
        self._closed = False
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        return f"Channel({self.name!r}, {len(self._items)}/{self.maxsize}, closed={self._closed})"

    @property
    def closed(self) -> bool:
        return self._closed

    def qsize(self) -> int:
        return len(self._items)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def put(self, item: T) -> None:
        while True:
            if self._closed:
                raise ChannelClosed(f"channel {self.name!r} is closed")
            if len(self._items) < self.maxsize:
                break
            if self.overflow is Overflow.DROP_OLDEST:
                self._items.popleft()
                self.dropped += 1
                break
            if self.overflow is Overflow.DROP_NEWEST:
                self.dropped += 1
                return
            await self._changed.wait()
        self._items.append(item)
        self.put_count += 1
        self._notify()

    def put_nowait(self, item: T) -> bool:
        """Put without waiting; False when a BLOCK channel is full (the caller decides)."""
        if self._closed:
            raise ChannelClosed(f"channel {self.name!r} is closed")
        if len(self._items) >= self.maxsize:
            if self.overflow is Overflow.DROP_OLDEST:
                self._items.popleft()
                self.dropped += 1
            else:
                if self.overflow is Overflow.DROP_NEWEST:
                    self.dropped += 1
                return False
        self._items.append(item)
        self.put_count += 1
        self._notify()
        return True

    async def get(self) -> T:
        """The next item; raises EndOfStream once the channel is closed and drained."""
        while not self._items:
            if self._closed:
                raise EndOfStream(self.name)
            await self._changed.wait()
        item = self._items.popleft()
        self._notify()
        return item

    def close(self) -> None:
        """End of stream: queued items are still delivered."""
        if not self._closed:
            self._closed = True
            self._notify()

    def abort(self) -> None:
        """Teardown: drop queued items and end the stream at once."""
        self._items.clear()
        self.close()

    def __aiter__(self) -> AsyncIterator[T]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[T]:
        while True:
            try:
                yield await self.get()
            except EndOfStream:
                return


class EndOfStream(Exception):
    """The channel was closed and everything in it has been consumed."""
