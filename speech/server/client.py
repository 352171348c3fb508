"""A small Python client: stream audio to a server in real time (or faster) and collect the events.

    result = await stream_file("ws://127.0.0.1:8765/ws", "talk.wav", "en", "es")
    print(result.text("translation"), result.done["summary"])
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from ..audio import read_audio, resample
from . import protocol as P


@dataclass
class StreamResult:
    events: list[dict] = field(default_factory=list)  # every JSON event, in order
    audio: list[tuple[dict, bytes]] = field(default_factory=list)  # (audio event, payload)
    close_code: int | None = None
    sent_s: float = 0.0  # seconds of audio sent
    elapsed_s: float = 0.0

    @property
    def done(self) -> dict | None:
        return next((e for e in self.events if e["type"] == "done"), None)

    @property
    def error(self) -> dict | None:
        return next((e for e in self.events if e["type"] == "error"), None)

    def committed(self, kind: str) -> list[str]:
        """Every committed word of `kind` ("recognition" or "translation"), in order."""
        return [w for e in self.events if e["type"] == kind for w in e["committed"]]

    def text(self, kind: str) -> str:
        return " ".join(self.committed(kind))

    def pcm(self) -> tuple[np.ndarray, int]:
        """The output audio as float32 samples and their rate (pcm16 or Opus frames)."""
        if not self.audio:
            return np.zeros(0, np.float32), 0
        rate = self.audio[0][0]["sample_rate"]
        parts = []
        decoder = None
        for meta, data in self.audio:
            if meta["codec"] == "pcm16":
                parts.append(np.frombuffer(data, "<i2").astype(np.float32) / 32768.0)
            else:
                import opuslib

                decoder = decoder or opuslib.Decoder(rate, 1)
                pcm = decoder.decode(data, meta["samples"])
                parts.append(np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0)
        return np.concatenate(parts), rate


def encode_frames(samples: np.ndarray, rate: int, codec: str, frame_ms: int) -> tuple[list[bytes], int, int]:
    """Audio as protocol frames: (frames, rate announced in hello, samples per frame)."""
    if codec == "opus":
        import opuslib

        if rate not in P.OPUS_RATES:
            samples, rate = resample(samples, rate, 16000), 16000
        frame_ms = 20  # an Opus frame size
        step = rate * frame_ms // 1000
        enc = opuslib.Encoder(rate, 1, opuslib.APPLICATION_VOIP)
        pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
        pcm = np.concatenate([pcm, np.zeros((-len(pcm)) % step, "<i2")])
        return [enc.encode(pcm[i : i + step].tobytes(), step) for i in range(0, len(pcm), step)], rate, step
    step = max(1, rate * frame_ms // 1000)
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    return [pcm[i : i + step].tobytes() for i in range(0, len(pcm), step)], rate, step


async def stream_audio(
    url: str,
    samples: np.ndarray,
    sample_rate: int,
    source: str,
    target: str,
    *,
    token: str = "",
    codec: str = "pcm16",
    output_codec: str = "pcm16",
    frame_ms: int = 100,
    speed: float = 1.0,
    stop_after_s: float | None = None,
    on_event: Callable[[dict], Any] | None = None,
    timeout: float = 300.0,
    origin: str | None = None,
) -> StreamResult:
    """Send `samples` paced at `speed` x real time (0: as fast as possible); collect everything.

    `stop_after_s` sends `end` after that much audio (mid-sentence ends are part of the protocol).
    """
    frames, rate, step = encode_frames(samples, sample_rate, codec, frame_ms)
    if stop_after_s is not None:
        frames = frames[: max(0, int(np.ceil(stop_after_s * rate / step)))]
    result = StreamResult()
    hello = P.Hello(source, target, rate, codec, output_codec, token, client="speech.server.client").to_json()
    t0 = time.monotonic()
    headers = {"Origin": origin} if origin else None
    async with connect(url, max_size=P.MAX_TRANSPORT_BYTES, compression=None, additional_headers=headers,
                       open_timeout=30) as ws:
        await ws.send(json.dumps(hello))

        async def send() -> None:
            for i, frame in enumerate(frames):
                if speed > 0:
                    delay = t0 + (i + 1) * step / rate / speed - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)  # a frame exists once its last sample was spoken
                await ws.send(frame)
                result.sent_s += step / rate
            await ws.send(json.dumps({"type": "end"}))

        async def receive() -> None:
            pending_audio: dict | None = None
            async for message in ws:
                if isinstance(message, bytes):
                    result.audio.append((pending_audio or {}, message))
                    pending_audio = None
                    continue
                event = json.loads(message)
                if event.get("type") == "audio":
                    pending_audio = event
                result.events.append(event)
                if on_event is not None:
                    on_event(event)

        sender = asyncio.create_task(send())
        try:
            await asyncio.wait_for(receive(), timeout)
        except ConnectionClosed:
            pass  # closed with an error code: the error event before it says why
        finally:
            if not sender.done():
                sender.cancel()
            else:
                try:
                    sender.result()
                except ConnectionClosed:
                    pass  # the server closed first (an error event says why)
        result.close_code = ws.close_code
    result.elapsed_s = time.monotonic() - t0
    return result


async def stream_file(url: str, path: str | Path, source: str, target: str, **options: Any) -> StreamResult:
    samples, rate, _ = read_audio(path)
    return await stream_audio(url, samples, rate, source, target, **options)
