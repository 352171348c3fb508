"""Keep a long-running server's memory flat under glibc (no-ops elsewhere).

Sessions run model calls in pool threads; glibc gives each thread its own malloc arena and keeps
freed pages, so resident memory creeps up with every new thread and every session's buffers even
though nothing leaks. Two arenas, and trimming after each session, hand the memory back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_ARENA_MAX = -8


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def limit_arenas(count: int = 2) -> bool:
    """Call before worker threads start; True when glibc accepted it."""
    libc = _libc()
    return bool(libc and libc.mallopt(M_ARENA_MAX, count))


def trim() -> bool:
    """Return freed heap pages to the system (after a session ends)."""
    libc = _libc()
    return bool(libc and libc.malloc_trim(0))
