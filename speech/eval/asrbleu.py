"""ASR-BLEU: the project's own recogniser (registry kind "recognizer") transcribes the output
speech offline; the transcript is scored against the reference translation.

The recogniser is used through its streaming protocol as an offline one: a window of audio is
fed whole and `finish()` returns its words. Windows are at most `window_s` long (Whisper decodes
30 s at a time) and are cut at the quietest 100 ms near their end, so no word is split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..registry import Registry
from ..types import AudioChunk


def split_points(samples: np.ndarray, rate: int, window_s: float = 25.0, search_s: float = 5.0) -> list[int]:
    """Sample indices that cut `samples` into windows of at most `window_s`, each at the
    lowest-energy 100 ms frame in the last `search_s` of its window."""
    cuts: list[int] = []
    start, n, frame = 0, len(samples), max(1, rate // 10)
    limit = int(window_s * rate)
    while n - start > limit:
        lo, hi = start + limit - int(search_s * rate), start + limit
        frames = [(float(np.mean(samples[i : i + frame] ** 2)), i) for i in range(max(lo, start + 1), hi - frame + 1, frame)]
        cut = min(frames)[1] + frame // 2 if frames else hi
        cuts.append(cut)
        start = cut
    return cuts


@dataclass
class OutputTranscriber:
    """Transcribes output speech in `language` with a recogniser from the registry."""

    registry: Registry
    language: str
    recognizer: str = "whisper-base"
    overrides: dict[str, Any] = field(default_factory=dict)
    _rec: Any = None

    def _recognizer(self) -> Any:
        if self._rec is None:
            known = self.registry.config("recognizer", self.recognizer)
            options = dict(self.overrides)
            names = set(getattr(known, "__dataclass_fields__", {}))
            if "language" in names:
                options.setdefault("language", self.language)
            if "max_new_tokens" in names:
                options.setdefault("max_new_tokens", 224)  # a whole window, not one update
            if "new_tokens_per_s" in names:
                options.setdefault("new_tokens_per_s", None)  # the judge reads as it always has
            self._rec = self.registry.create("recognizer", self.recognizer, **options)
        return self._rec

    def __call__(self, samples: np.ndarray, rate: int) -> str:
        from ..audio import resample

        rec = self._recognizer()
        target = getattr(rec, "sample_rate", 16000)
        audio = resample(samples, rate, target)
        bounds = [0] + split_points(audio, target) + [len(audio)]
        words: list[str] = []
        for a, b in zip(bounds, bounds[1:]):
            rec.reset()
            rec.feed(AudioChunk(np.ascontiguousarray(audio[a:b]), target, start=a / target))
            words.extend(w.text for w in rec.finish())
        rec.reset()
        return " ".join(words)
