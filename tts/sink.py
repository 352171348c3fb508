"""The listener's end of the pipeline: decode codec packets (or take synthesised chunks as they
are) and place them on the listener timeline; optionally play them live through the speakers."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from speech.channel import Channel
from speech.types import AudioChunk, EncodedPacket

from .joins import ListenerTimeline


@dataclass
class SpeechSink:
    """Consumes AudioChunks or EncodedPackets. Packets of one synthesised chunk share its
    `wall_time`; the first of each chunk is placed at max(emission, previous end), the rest follow
    it without a seam."""

    decoder: Any = None  # speech.stage.AudioDecoder, when the last stage is a codec
    compact: bool = False
    play: bool = False  # play live through the speakers as chunks are placed
    sample_rate: int | None = None  # taken from the first chunk when not given
    timeline: ListenerTimeline | None = None
    player: "LivePlayer | None" = None
    chunks: int = 0
    _last_wall: float | None = None

    async def __call__(self, inbox: Channel[Any]) -> None:
        async for item in inbox:
            if isinstance(item, EncodedPacket):
                if self.decoder is None:
                    raise ValueError("the sink got codec packets but has no decoder")
                chunk = self.decoder.decode(item)
            else:
                chunk = item
            self.add(chunk)

    def add(self, chunk: AudioChunk) -> None:
        if self.timeline is None:
            self.sample_rate = self.sample_rate or chunk.sample_rate
            self.timeline = ListenerTimeline(self.sample_rate, compact=self.compact)
            if self.play:
                self.player = LivePlayer(self.sample_rate)
        if chunk.sample_rate != self.sample_rate:
            raise ValueError(f"sink runs at {self.sample_rate} Hz, got {chunk.sample_rate} Hz")
        continues = self._last_wall is not None and chunk.wall_time == self._last_wall and not chunk.text
        self._last_wall = chunk.wall_time
        if not continues:
            self.chunks += 1
        placement = self.timeline.add(chunk.samples, chunk.wall_time, chunk.text, continues=continues)
        if self.player is not None:
            self.player.schedule(chunk.samples, placement.start)

    def render(self) -> np.ndarray:
        return self.timeline.render() if self.timeline is not None else np.zeros(0, np.float32)

    def boundaries(self) -> list[int]:
        return self.timeline.boundaries() if self.timeline is not None else []

    @property
    def duration(self) -> float:
        return self.timeline.duration if self.timeline is not None else 0.0

    def finish(self) -> None:
        """Live playback: wait until everything placed has been heard."""
        if self.player is not None:
            self.player.finish(timeout=self.duration + 5)


def check_output_device() -> None:
    """Fail early, with what to do, when --play cannot play."""
    try:
        import sounddevice

        sounddevice.query_devices(kind="output")
    except (ImportError, OSError) as e:
        raise ValueError(f"--play needs sounddevice and PortAudio ({e}); install libportaudio2") from None
    except Exception as e:  # noqa: BLE001 - PortAudioError and friends: no output device
        raise ValueError(f"--play: no usable audio output device ({e}); drop --play and open the WAV") from None


class LivePlayer:
    """Plays the listener timeline through the speakers as it is built (sounddevice callback: the
    device pulls what is due; what is not placed yet plays as silence)."""

    def __init__(self, sample_rate: int) -> None:
        try:
            import sounddevice
        except (ImportError, OSError) as e:
            raise ValueError(f"--play needs sounddevice and PortAudio ({e}); install libportaudio2") from None
        self.sample_rate = sample_rate
        self._buf = np.zeros(sample_rate * 60, dtype=np.float32)
        self._pos = 0
        self._end = 0
        self._lock = threading.Lock()
        self._done = threading.Event()
        try:
            self._stream = sounddevice.OutputStream(samplerate=sample_rate, channels=1, dtype="float32", callback=self._pull)
            self._stream.start()
        except sounddevice.PortAudioError as e:
            raise ValueError(f"--play: no usable audio output device ({e}); drop --play and open the WAV") from None

    def schedule(self, samples: np.ndarray, start: float) -> None:
        i = int(round(start * self.sample_rate))
        with self._lock:
            need = i + len(samples)
            if need > len(self._buf):
                self._buf = np.concatenate([self._buf, np.zeros(max(need - len(self._buf), len(self._buf)), np.float32)])
            self._buf[i:need] += samples
            self._end = max(self._end, need)

    def _pull(self, out, frames, time_info, status) -> None:
        with self._lock:
            piece = self._buf[self._pos : self._pos + frames]
            out[: len(piece), 0] = piece
            out[len(piece) :, 0] = 0
            self._pos += frames
            if self._finishing and self._pos >= self._end:
                self._done.set()

    _finishing = False

    def finish(self, timeout: float | None = None) -> None:
        """Wait until everything scheduled has been played, then close the device."""
        self._finishing = True
        self._done.wait(timeout)
        self._stream.stop()
        self._stream.close()
