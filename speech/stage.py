"""The Stage protocol and the stage-specific protocols.

A stage is one asyncio task: `run(inbox, outbox)` consumes its inbox until end of stream, flushes
what it holds, and returns; the session closes the outbox after it. Blocking model calls go to a
worker thread (`asyncio.to_thread`), never on the event loop.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Protocol, runtime_checkable

from .channel import Channel
from .types import AudioChunk, EncodedPacket, TextUpdate, Word


@runtime_checkable
class Stage(Protocol):
    name: str

    async def run(self, inbox: Channel[Any], outbox: Channel[Any]) -> None: ...


@runtime_checkable
class StreamingRecognizer(Protocol):
    """Audio in, a growing hypothesis out. One instance per stream."""

    sample_rate: int

    def feed(self, chunk: AudioChunk) -> None: ...

    def hypothesis(self) -> list[Word]:
        """The current full hypothesis of the words not yet committed (may change)."""
        ...

    def finish(self) -> list[Word]:
        """End of stream: the final words."""
        ...

    def reset(self) -> None: ...


@runtime_checkable
class CommitPolicy(Protocol):
    """Turns successive hypotheses into TextUpdates: committed words never come back."""

    def update(self, hypothesis: list[Word], now: float) -> tuple[list[Word], list[Word]]:
        """Returns (newly committed words, tentative tail)."""
        ...

    def flush(self, hypothesis: list[Word]) -> list[Word]:
        """End of speech or stream: commit everything left."""
        ...

    def reset(self) -> None: ...


@runtime_checkable
class SimultaneousTranslator(Protocol):
    """Source TextUpdates in, target TextUpdates out; the committed target prefix stays cached."""

    def update(self, source: TextUpdate) -> TextUpdate: ...

    def finish(self) -> TextUpdate: ...

    def reset(self) -> None: ...


@runtime_checkable
class Synthesizer(Protocol):
    sample_rate: int

    def synthesize(self, text: str) -> Iterator[AudioChunk]:
        """Audio for `text`, streaming where the engine allows."""
        ...


@runtime_checkable
class AudioEncoder(Protocol):
    codec: str
    sample_rate: int

    def encode(self, chunk: AudioChunk) -> Iterable[EncodedPacket]: ...

    def flush(self) -> Iterable[EncodedPacket]: ...

    def reset(self) -> None: ...


@runtime_checkable
class AudioDecoder(Protocol):
    codec: str
    sample_rate: int

    def decode(self, packet: EncodedPacket | None) -> AudioChunk:
        """None (a lost packet) asks for concealment."""
        ...

    def reset(self) -> None: ...


class StageError(RuntimeError):
    """A stage failed; names the stage so the user sees where."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"stage {stage!r} failed: {type(error).__name__}: {error}")
        self.stage = stage
        self.error = error
