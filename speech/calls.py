"""Blocking model calls off the event loop, each with a time-out.

A model call that hangs (a deadlocked binding, a runaway generation) must end its own session with
a named error instead of holding it forever. `model_call` runs the call in a worker thread and
raises `ModelCallTimeout` when it has not returned in time. Python cannot stop a thread: the call
keeps its thread until it returns, but the session tears down and the server stays healthy.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class ModelCallTimeout(TimeoutError):
    """A model call did not return within its time-out."""

    def __init__(self, what: str, timeout_s: float) -> None:
        super().__init__(f"{what} did not return within {timeout_s:g} s")
        self.what = what
        self.timeout_s = timeout_s


async def model_call(fn: Callable[..., T], *args: Any, timeout_s: float | None, what: str) -> T:
    """`fn(*args)` in a worker thread; `timeout_s` None waits for ever."""
    if timeout_s is None:
        return await asyncio.to_thread(fn, *args)
    if timeout_s <= 0:
        raise ValueError(f"a model call time-out must be positive, got {timeout_s}")
    try:
        async with asyncio.timeout(timeout_s) as limit:
            return await asyncio.to_thread(fn, *args)
    except TimeoutError:
        if limit.expired():
            raise ModelCallTimeout(what, timeout_s) from None
        raise  # the call itself raised TimeoutError: not ours to rename
