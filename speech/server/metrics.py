"""Server-wide figures for /metrics: sessions, lag, real-time factor, errors."""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field

from speech.stats import percentile

__all__ = ["Metrics", "percentile"]  # percentile: re-exported for the connection's summary


@dataclass
class Metrics:
    started: float = field(default_factory=time.monotonic)
    sessions_active: int = 0
    sessions_total: int = 0
    sessions_completed: int = 0
    connections_open: int = 0
    listeners_total: int = 0
    rejected: Counter = field(default_factory=Counter)  # busy, unauthorized, ...
    errors: Counter = field(default_factory=Counter)  # by error code
    # translated words a voice too slow for the machine left to the relief voice or unspoken (tts.pace)
    voice_behind: Counter = field(default_factory=Counter)
    audio_in_s: float = 0.0
    audio_out_s: float = 0.0
    recent_lags: deque = field(default_factory=lambda: deque(maxlen=2000))
    recent_rtfs: deque = field(default_factory=lambda: deque(maxlen=200))
    recent_listener_lags: deque = field(default_factory=lambda: deque(maxlen=2000))

    def observe_lag(self, lag: float) -> None:
        self.recent_lags.append(lag)

    def observe_listener_lag(self, lag: float) -> None:
        """A translated word heard: when the listener hears it - when its source word arrived."""
        self.recent_listener_lags.append(lag)

    def to_json(self) -> dict:
        import psutil

        rss = psutil.Process().memory_info().rss
        lags = list(self.recent_lags)
        rtfs = list(self.recent_rtfs)
        return {
            "uptime_s": round(time.monotonic() - self.started, 3),
            "sessions": {
                "active": self.sessions_active,
                "total": self.sessions_total,
                "completed": self.sessions_completed,
            },
            "connections_open": self.connections_open,
            "listeners_total": self.listeners_total,
            "rejected": dict(self.rejected),
            "errors": dict(self.errors),
            "words_voice_behind": {"relief": self.voice_behind["relief"], "unspoken": self.voice_behind["unspoken"]},
            "audio_in_s": round(self.audio_in_s, 3),
            "audio_out_s": round(self.audio_out_s, 3),
            "lag_s": {"p50": _r(percentile(lags, 50)), "p90": _r(percentile(lags, 90)), "count": len(lags)},
            "listener_lag_s": {"p50": _r(percentile(list(self.recent_listener_lags), 50)),
                               "p90": _r(percentile(list(self.recent_listener_lags), 90)),
                               "count": len(self.recent_listener_lags)},
            "rtf": {"mean": _r(sum(rtfs) / len(rtfs)) if rtfs else None, "count": len(rtfs)},
            "rss_bytes": rss,
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)
