"""One websocket's output: a queue drained by one sender task, with bounds on unread output.

Producers never wait: `put` queues and returns. A client that leaves more than `max_pending` bytes
unread, or (with `max_delay_s`) whose oldest unsent message has waited longer than that, is dropped
(`slow_client`): its queue is cleared, it gets one `error` event and a close, and whoever feeds it
(a session, other listeners) never notices. The delay bound is for live listeners: a listener that
is seconds behind the talk hears nothing live, and with a low-rate output (Opus) the byte bound
alone would hold a stalled listener's backlog for many minutes.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import ConnectionClosed

from . import protocol as P

MAX_PENDING_OUT_BYTES = 32 * 1024 * 1024  # output a slow client may leave unread
ABORT_AFTER_S = 5.0  # after an error, how long a client has to take it before the socket is cut


@dataclass(frozen=True)
class _Close:
    code: int
    reason: str


class Outbox:
    def __init__(self, ws: Any, max_pending: int = MAX_PENDING_OUT_BYTES, name: str = "",
                 max_delay_s: float | None = None) -> None:
        self.ws = ws
        self.name = name
        self.max_pending = max_pending
        self.max_delay_s = max_delay_s
        self.pending = 0
        self.closing = False  # nothing more is queued once a close is queued
        self.error: str | None = None  # the code of the error it was closed with
        self._queue: asyncio.Queue[str | bytes | _Close] = asyncio.Queue()
        self._queued_at: deque[float] = deque()  # when each queued message was put, oldest first
        self._loop = asyncio.get_running_loop()

    def put(self, item: str | bytes) -> bool:
        """Queue one message; False once the outbox is closing (or was just dropped as too slow)."""
        if self.closing:
            return False
        now = self._loop.time()
        if self.max_delay_s is not None and self._queued_at and now - self._queued_at[0] > self.max_delay_s:
            self.fail("slow_client", f"the client is more than {self.max_delay_s:g} s behind; closing",
                      P.CLOSE_POLICY)
            return False
        self.pending += len(item)
        if self.pending > self.max_pending:
            self.fail("slow_client", "the client does not read its output; closing", P.CLOSE_POLICY)
            return False
        self._queue.put_nowait(item)
        self._queued_at.append(now)
        return True

    def close(self, code: int = P.CLOSE_NORMAL, reason: str = "done") -> None:
        """Send what is queued, then close."""
        if not self.closing:
            self.closing = True
            self._queue.put_nowait(_Close(code, reason))
            if self.max_delay_s is not None:  # no put will notice a client that stalls from now on
                self._loop.call_later(self.max_delay_s + ABORT_AFTER_S, self._abort)

    def fail(self, code: str, message: str, close_code: int, **extra: Any) -> None:
        """Drop what is queued; send one `error` event and close."""
        if self.closing:
            return
        self.error = code
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queued_at.clear()
        self.pending = 0
        event = P.dumps(P.error_event(code, message, **extra))
        self._queue.put_nowait(event)
        self._queued_at.append(self._loop.time())
        self.close(close_code, code[:100])
        # A client that reads nothing leaves the sender stuck in a send: cut the connection.
        self._loop.call_later(ABORT_AFTER_S, self._abort)

    def _abort(self) -> None:
        transport = getattr(self.ws, "transport", None)
        if transport is not None and not transport.is_closing():
            transport.abort()

    async def run(self) -> None:
        """The only writer to the socket; returns after the close (or when the peer is gone)."""
        try:
            while True:
                item = await self._queue.get()
                if isinstance(item, _Close):
                    await self.ws.close(item.code, item.reason)
                    return
                self.pending -= len(item)
                self._queued_at.popleft()
                await self.ws.send(item)
        except ConnectionClosed:
            self.closing = True
