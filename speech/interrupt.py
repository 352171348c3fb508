"""Stopping the input, not the work: the first SIGINT or SIGTERM of a command that reads a
recording (`speech translate`, `speech stream`) ends the input there, and the pipeline finishes
what it has read, so nothing recognised is lost; a second signal aborts."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys


class InputStop:
    """The first SIGINT or SIGTERM stops reading the input, so the pipeline finishes what it has
    read (nothing recognised is lost); the handlers are then removed, so a second signal aborts."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, bar=None) -> None:
        self.signal = ""
        self.cut = ""  # the signal that stopped the input before its end
        self.event = asyncio.Event()
        self._bar = bar
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> None:
        self._loop = asyncio.get_running_loop()
        for sig in self.SIGNALS:
            self._loop.add_signal_handler(sig, self._on_signal, sig)

    def remove(self) -> None:
        if self._loop is not None:
            for sig in self.SIGNALS:
                self._loop.remove_signal_handler(sig)  # SIGINT back to KeyboardInterrupt, SIGTERM to exit
            self._loop = None

    def _on_signal(self, sig: signal.Signals) -> None:
        self.signal = sig.name
        self.event.set()
        self.remove()
        what = "Ctrl-C" if sig == signal.SIGINT else sig.name
        prefix = "\r\x1b[K" if self._bar is not None and self._bar.tty else "\n"
        print(f"{prefix}{what}: input stopped; finishing what was heard (again to abort)", file=sys.stderr, flush=True)

    async def until_stopped(self, reading) -> None:
        """Runs the coroutine that reads the input until it ends or a signal stops it."""
        task = asyncio.ensure_future(reading)
        waiter = asyncio.ensure_future(self.event.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if task.done():
            self.remove()  # all read: a signal now aborts, as there is nothing left to stop reading
            task.result()
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self.cut = self.signal


class Tap:
    """Looks like a channel to a source that reads a recording (`FileSource`): hands each chunk
    to a coroutine, which passes it on and notes how far the input was read (progress, a stop)."""

    def __init__(self, put) -> None:
        self.put = put
