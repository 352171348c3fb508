"""One live session's figures for its `done` summary: lags, words and audio, per target."""

from __future__ import annotations

import time

from .metrics import percentile


class SessionStats:
    def __init__(self, targets: tuple[str, ...]) -> None:
        self.targets = targets
        self.lags: dict[str, list[float]] = {"recognition": [], "translation": [], "synthesis": []}
        self.words = {"recognition": 0, "translation": 0}
        self.per_target = {t: {"lags": [], "words": 0, "audio_out_s": 0.0, "frames": 0, "unspoken": 0,
                                "relief": 0} for t in targets}
        self.audio_out_s = 0.0
        self.frames_out = 0
        self.compute_s = 0.0

    def text(self, name: str, target: str | None, committed: int, lag: float | None) -> None:
        if committed and lag is not None:
            self.lags[name].append(lag)
        self.words[name] += committed
        if name == "translation" and target in self.per_target:
            branch = self.per_target[target]
            branch["words"] += committed
            if committed and lag is not None:
                branch["lags"].append(lag)

    def synthesis(self, target: str | None, lags: list[float], relief_words: int = 0) -> None:
        """The listener lags of one synthesised chunk's words (hearing a word - its source spoken);
        `relief_words`: its words, when the relief voice spoke it (tts.pace)."""
        self.lags["synthesis"] += lags
        if target in self.per_target:
            self.per_target[target].setdefault("listener_lags", []).extend(lags)
            self.per_target[target]["relief"] += relief_words

    def unspoken(self, target: str | None, words: int) -> None:
        """Translated words the voice skipped: it fell too far behind the talk (tts.pace)."""
        if target in self.per_target:
            self.per_target[target]["unspoken"] += words

    def voice_rtf(self, target: str | None, rtf: float) -> None:
        """The main voice's synthesis seconds per second of its speech (tts.pace)."""
        if target in self.per_target:
            self.per_target[target]["voice_rtf"] = round(rtf, 3)

    def relief_voice(self, target: str | None, name: str) -> None:
        """The `--voice` value of the relief voice that spoke for the main one (tts.stage)."""
        if target in self.per_target:
            self.per_target[target]["relief_voice"] = name

    def audio_out(self, target: str, seconds: float) -> None:
        self.audio_out_s += seconds
        self.frames_out += 1
        if target in self.per_target:
            self.per_target[target]["audio_out_s"] += seconds
            self.per_target[target]["frames"] += 1

    def compute(self, value: object) -> None:
        if isinstance(value, (int, float)):
            self.compute_s += float(value)

    def summary(self, audio_s: float, now: float, end_wall: float | None, ended_by_client: bool) -> dict:
        main = self.lags["translation"] or self.lags["recognition"]
        rtf = self.compute_s / audio_s if audio_s > 0 and self.compute_s > 0 else None
        return {
            "audio_in_s": round(audio_s, 4),
            "wall_s": round(now, 4),
            "flush_s": None if end_wall is None else round(now - end_wall, 4),
            "recognized_words": self.words["recognition"],
            "translated_words": self.words["translation"],
            "audio_out_s": round(self.audio_out_s, 4),
            "audio_frames_out": self.frames_out,
            "lag_p50": _pct(main, 50),
            "lag_p90": _pct(main, 90),
            "recognition_lag_p50": _pct(self.lags["recognition"], 50),
            "recognition_lag_p90": _pct(self.lags["recognition"], 90),
            "translation_lag_p50": _pct(self.lags["translation"], 50),
            "translation_lag_p90": _pct(self.lags["translation"], 90),
            # on the listener's timeline: when a word is heard - when its source word arrived
            "synthesis_lag_p50": _pct(self.lags["synthesis"], 50),
            "synthesis_lag_p90": _pct(self.lags["synthesis"], 90),
            "targets": {
                t: {"translated_words": b["words"], "translation_lag_p50": _pct(b["lags"], 50),
                    "translation_lag_p90": _pct(b["lags"], 90), "audio_out_s": round(b["audio_out_s"], 4),
                    "synthesis_lag_p50": _pct(b.get("listener_lags", []), 50),
                    "synthesis_lag_p90": _pct(b.get("listener_lags", []), 90),
                    "audio_frames_out": b["frames"], "words_unspoken": b["unspoken"],
                    "words_relief": b["relief"], "relief_voice": b.get("relief_voice"), "voice_rtf": b.get("voice_rtf")}
                for t, b in self.per_target.items()
            },
            "compute_s": round(self.compute_s, 4),
            "rtf": None if rtf is None else round(rtf, 4),
            "ended_by_client": ended_by_client,
            "finished_at": time.time(),
        }


def _pct(values: list[float], q: float) -> float | None:
    v = percentile(values, q)
    return None if v is None else round(v, 4)
