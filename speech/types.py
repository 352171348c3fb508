"""Core value types that flow between stages.

Everything here is immutable: a stage never changes what another stage emitted. Retraction is
data (a new `tentative` tail replaces the old one), never a side effect.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """A run of mono float32 samples placed on a timeline.

    `start` is on the source timeline (seconds) for input audio, and on the listener timeline for
    synthesised audio. `wall_time` is when the chunk became available, in computation-aware
    seconds since the session started (see `speech.clock`).
    """

    samples: np.ndarray
    sample_rate: int
    start: float = 0.0
    seq: int = 0
    wall_time: float = 0.0
    text: str = ""  # for synthesised audio: the text it speaks
    # For synthesised audio: when the listener starts to hear it (after every earlier chunk), on
    # the same clock as `wall_time`; None for input audio and before the chunk is scheduled.
    play_start: float | None = None
    # For synthesised audio, where the synthesiser reports word timing (eSpeak NG, Piper): (index of
    # a word of `text`, seconds from the start of that text's synthesis when the word begins).
    word_marks: tuple[tuple[int, float], ...] = ()
    # For synthesised audio from a voice that renders a piece window by window (Kokoro): this
    # chunk ends a part of the piece that speaks words [i, j) of its text, which the TTS stage
    # emits at once; None: the chunk continues the part being built (every other voice's chunks
    # make one part, the whole piece).
    part: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.sample_rate <= 0:
            raise ValueError(f"sample_rate must be positive, got {self.sample_rate}")
        if self.samples.ndim != 1:
            raise ValueError(f"AudioChunk holds mono audio; got shape {self.samples.shape}")
        if self.samples.dtype != np.float32:
            object.__setattr__(self, "samples", self.samples.astype(np.float32))

    @property
    def duration(self) -> float:
        return len(self.samples) / self.sample_rate

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True, slots=True)
class Word:
    """A recognised or translated word; timing on the source timeline where known."""

    text: str
    start: float | None = None
    end: float | None = None
    probability: float | None = None

    def to_json(self) -> dict:
        out: dict = {"text": self.text}
        if self.start is not None:
            out["start"] = round(self.start, 4)
        if self.end is not None:
            out["end"] = round(self.end, 4)
        if self.probability is not None:
            out["p"] = round(self.probability, 4)
        return out

    @classmethod
    def from_json(cls, d: dict) -> "Word":
        return cls(d["text"], d.get("start"), d.get("end"), d.get("p"))


def join_words(words: tuple[Word, ...] | list[Word]) -> str:
    return " ".join(w.text for w in words)


@dataclass(frozen=True, slots=True)
class TextUpdate:
    """One step of a streaming text hypothesis.

    - `committed`: words appended for good; never retracted.
    - `tentative`: replaces the previous tentative tail entirely (may be empty).
    - `final`: this update closes a segment (sentence) or, with `end_of_stream`, the stream.
    - `source_time`: seconds of source audio consumed when this was emitted (computation-unaware).
    - `wall_time`: computation-aware seconds since the session started (real or emulated).
    - `spoken_time`: for a translation, when the newest source word it had read was spoken (that
      word's end on the source timeline, from the recogniser's word timestamps); None where unknown.
    """

    committed: tuple[Word, ...] = ()
    tentative: tuple[Word, ...] = ()
    final: bool = False
    source_time: float = 0.0
    wall_time: float = 0.0
    end_of_stream: bool = False
    language: str = ""
    spoken_time: float | None = None

    @property
    def committed_text(self) -> str:
        return join_words(self.committed)

    @property
    def tentative_text(self) -> str:
        return join_words(self.tentative)

    def to_json(self) -> dict:
        return {
            "committed": [w.to_json() for w in self.committed],
            "tentative": [w.to_json() for w in self.tentative],
            "final": self.final,
            "end_of_stream": self.end_of_stream,
            "source_time": round(self.source_time, 4),
            "wall_time": round(self.wall_time, 4),
            "language": self.language,
            **({"spoken_time": round(self.spoken_time, 4)} if self.spoken_time is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> "TextUpdate":
        return cls(
            committed=tuple(Word.from_json(w) for w in d.get("committed", [])),
            tentative=tuple(Word.from_json(w) for w in d.get("tentative", [])),
            final=bool(d.get("final", False)),
            source_time=float(d.get("source_time", 0.0)),
            wall_time=float(d.get("wall_time", 0.0)),
            end_of_stream=bool(d.get("end_of_stream", False)),
            language=d.get("language", ""),
            spoken_time=None if d.get("spoken_time") is None else float(d["spoken_time"]),
        )


@dataclass(frozen=True, slots=True)
class EncodedPacket:
    """One codec packet (for example a 20 ms Opus frame, or a PCM16 block)."""

    data: bytes
    codec: str
    sample_rate: int
    samples: int  # decoded length in samples
    start: float = 0.0
    seq: int = 0
    wall_time: float = 0.0


@dataclass(slots=True)
class Transcript:
    """An accumulating view of a stream of TextUpdates: committed text plus the current tail."""

    committed: list[Word] = field(default_factory=list)
    tentative: tuple[Word, ...] = ()

    def apply(self, update: TextUpdate) -> None:
        self.committed.extend(update.committed)
        self.tentative = update.tentative

    @property
    def text(self) -> str:
        return join_words(self.committed)
