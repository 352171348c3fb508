"""Recognition lag against one reference timeline per clip.

The reference is the strongest local recogniser's offline transcription of the clip with word
timestamps (Whisper base, greedy, the standard 30-s encoder window), the same whatever
configuration is measured, so lags of different recognisers, steps and policies are comparable.
It is cached on disk (`$SPEECH_CACHE/asr-reference/`) keyed by the audio file's SHA-256.

Lag per word: committed words are aligned with the reference words (difflib on normalised
words); each matched reference word's lag is the time its committed counterpart was committed
minus the reference word's end. Reference words that no committed word matches are not dropped
silently: they are counted, and reported as `unmatched_share`.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

import numpy as np

from speech.types import Word

from .normalize import word_key

REFERENCE_MODEL = "whisper-base"
# Changes whenever the reference decode changes, so stale cache entries are not read.
REFERENCE_VERSION = "base-greedy-30s-1"


class CommittedWord(Protocol):
    """A committed word and when it was committed (speech.eval's `Emitted` has this shape)."""

    word: Word
    source_time: float
    wall_time: float


@dataclass(frozen=True)
class Committed:
    word: Word
    source_time: float  # source seconds consumed when the word was committed
    wall_time: float  # wall (or emulated) time when it was committed


@dataclass
class RecognitionLag:
    """Lag of one stream's committed words against its reference timeline."""

    reference_words: int
    matched_end: list[float] = field(default_factory=list)  # per matched word: reference end (s)
    lag_source: list[float] = field(default_factory=list)  # commit source time - reference end
    lag_wall: list[float] = field(default_factory=list)  # commit wall time - reference end

    @property
    def matched(self) -> int:
        return len(self.lag_source)

    @property
    def unmatched(self) -> int:
        return self.reference_words - self.matched

    @property
    def unmatched_share(self) -> float | None:
        return self.unmatched / self.reference_words if self.reference_words else None

    def __add__(self, other: "RecognitionLag") -> "RecognitionLag":
        return RecognitionLag(self.reference_words + other.reference_words,
                              self.matched_end + other.matched_end,
                              self.lag_source + other.lag_source, self.lag_wall + other.lag_wall)


def align(committed: list[Word], reference: list[Word]) -> list[tuple[int, int]]:
    """(committed index, reference index) of each matched word, in order."""
    a = [word_key(w.text) for w in committed]
    b = [word_key(w.text) for w in reference]
    pairs = []
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        pairs += [(block.a + k, block.b + k) for k in range(block.size)]
    return pairs


def recognition_lag(committed: Iterable[CommittedWord], reference: list[Word]) -> RecognitionLag:
    """Lag per matched reference word; every reference word counts in `reference_words`."""
    words = list(committed)
    out = RecognitionLag(len(reference))
    for i, j in align([c.word for c in words], reference):
        end = reference[j].end
        if end is None:
            continue
        out.matched_end.append(end)
        out.lag_source.append(words[i].source_time - end)
        out.lag_wall.append(words[i].wall_time - end)
    return out


def transcribe_reference(samples: np.ndarray, rate: int, language: str, registry: Any = None) -> list[Word]:
    """The reference timeline of audio in memory (not cached)."""
    from speech.backends import default_registry

    from .evaluate import offline_words

    registry = registry or default_registry()
    detect = language in ("", "auto")  # Whisper base detects the language itself
    return offline_words(registry, REFERENCE_MODEL, "" if detect else language, samples, rate)


def cache_path(audio_path: str | Path, language: str) -> Path:
    from speech.models.cache import cache_dir, sha256_file

    digest = sha256_file(audio_path)
    return cache_dir("asr-reference") / f"{digest}.{language or 'auto'}.{REFERENCE_VERSION}.json"


def reference_timeline(audio_path: str | Path, language: str, registry: Any = None) -> list[Word]:
    """The reference words of an audio file, from the cache or decoded once and cached."""
    from speech.audio import read_audio
    from speech.models.cache import atomic_target

    path = cache_path(audio_path, language)
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        return [Word(w["text"], w["start"], w["end"], w.get("probability")) for w in data["words"]]
    samples, rate, _ = read_audio(str(audio_path))
    words = transcribe_reference(samples, rate, language, registry)
    data = {"model": REFERENCE_MODEL, "version": REFERENCE_VERSION, "language": language,
            "file": Path(audio_path).name,
            "words": [{"text": w.text, "start": w.start, "end": w.end, "probability": w.probability}
                      for w in words]}
    tmp = atomic_target(path)
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)
    return words
