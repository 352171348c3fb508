"""Streaming voice activity detection with the Silero model that faster-whisper ships.

Silero (v6 ONNX) scores 512-sample windows at 16 kHz with a recurrent state; we keep that state
and 64 samples of context across chunks, so a stream is scored exactly as the batch function in
faster_whisper.vad would score it, one window at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

WINDOW = 512
CONTEXT = 64
SAMPLE_RATE = 16000


def load_silero() -> Any:
    """The onnxruntime session (one thread: it runs beside the recogniser)."""
    from faster_whisper.vad import get_vad_model

    return get_vad_model().session


@dataclass
class VadConfig:
    threshold: float = 0.5
    neg_threshold: float = 0.35  # hysteresis: speech continues until the score drops below this
    min_silence_s: float = 0.5  # a pause this long ends a speech segment
    min_speech_s: float = 0.1  # shorter bursts (clicks) do not start speech
    pad_s: float = 0.3  # audio kept before speech starts, so the first phoneme is not cut
    # After this much silence (counted from its start) the recurrent state starts afresh: carried
    # over from a long speech segment it kept a new voice (FLEURS clips back to back) below the
    # threshold for 1.4 s (the words lost), where a fresh state scores it 0.58 within 0.3 s.
    # 0 = never reset.
    reset_after_s: float = 0.5


@dataclass(frozen=True)
class VadEvent:
    """`speech_start` / `speech_end` at a source time (seconds)."""

    kind: str
    time: float


class StreamingVad:
    """Feed 16 kHz samples; get speech start/end events with hysteresis. One per stream."""

    def __init__(self, session: Any, config: VadConfig | None = None) -> None:
        self.session = session
        self.config = config or VadConfig()
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)
        self._t = 0.0  # source time of the next window
        self._quiet_s = 0.0  # silence since speech ended (state reset: see VadConfig.reset_after_s)
        self.speaking = False
        self._run_start: float | None = None  # candidate speech start (not yet long enough)
        self._silence_start: float | None = None

    def probability(self, window: np.ndarray) -> float:
        x = np.concatenate([self._context, window])[None, :]
        out, self._h, self._c = self.session.run(None, {"input": x, "h": self._h, "c": self._c})
        self._context = window[-CONTEXT:].copy()
        return float(np.asarray(out).reshape(-1)[0])

    def process(self, samples: np.ndarray, start: float | None = None) -> list[VadEvent]:
        if start is not None and not len(self._pending):
            self._t = start
        self._pending = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        events: list[VadEvent] = []
        cfg = self.config
        while len(self._pending) >= WINDOW:
            window, self._pending = self._pending[:WINDOW], self._pending[WINDOW:]
            p = self.probability(window)
            t0, t1 = self._t, self._t + WINDOW / SAMPLE_RATE
            self._t = t1
            if not self.speaking:
                self._quiet_s = self._quiet_s + WINDOW / SAMPLE_RATE if p < cfg.neg_threshold else 0.0
                if cfg.reset_after_s and self._quiet_s >= cfg.reset_after_s:
                    self._h, self._c = np.zeros_like(self._h), np.zeros_like(self._c)
                    self._quiet_s = float("-inf")  # once per silence
                if p >= cfg.threshold:
                    if self._run_start is None:
                        self._run_start = t0
                    if t1 - self._run_start >= cfg.min_speech_s:
                        self.speaking = True
                        self._silence_start = None
                        events.append(VadEvent("speech_start", max(0.0, self._run_start - cfg.pad_s)))
                else:
                    self._run_start = None
            else:
                if p < cfg.neg_threshold:
                    if self._silence_start is None:
                        self._silence_start = t0
                    if t1 - self._silence_start >= cfg.min_silence_s:
                        self.speaking = False
                        self._run_start = None
                        self._quiet_s = t1 - self._silence_start
                        events.append(VadEvent("speech_end", self._silence_start))
                elif p >= cfg.threshold:
                    self._silence_start = None
        return events

    def finish(self) -> float | None:
        """End of stream: score the last partial window (zero-padded) and return where speech that
        began but was too short to start a segment starts (minus `pad_s`), else None. A stream
        that ends within `min_speech_s` of a word's onset would otherwise never feed that word."""
        cfg = self.config
        if len(self._pending):
            n = len(self._pending)
            window = np.concatenate([self._pending, np.zeros(WINDOW - n, np.float32)])
            self._pending = np.zeros(0, dtype=np.float32)
            if self.probability(window) >= cfg.threshold and not self.speaking and self._run_start is None:
                self._run_start = self._t
            self._t += n / SAMPLE_RATE
        if self.speaking or self._run_start is None:
            return None
        return max(0.0, self._run_start - cfg.pad_s)
