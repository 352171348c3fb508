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
    resumes: int = 0  # sessions resumed after a drop
    drops: int = 0  # connections lost without a close from the server
    stopped: bool = False  # `stop` ended the audio before its end (`end` sent early)

    @property
    def session(self) -> str | None:
        ready = next((e for e in self.events if e["type"] == "ready"), None)
        return None if ready is None else ready.get("session")

    @property
    def done(self) -> dict | None:
        return next((e for e in self.events if e["type"] == "done"), None)

    @property
    def error(self) -> dict | None:
        return next((e for e in self.events if e["type"] == "error"), None)

    def committed(self, kind: str, target: str | None = None) -> list[str]:
        """Every committed word of `kind` ("recognition" or "translation"), in order; `target`
        picks one target's translation in a multi-target session."""
        return [w for e in self.events if e["type"] == kind and (target is None or e.get("target") == target)
                for w in e["committed"]]

    def text(self, kind: str, target: str | None = None) -> str:
        return " ".join(self.committed(kind, target))

    def pcm(self, target: str | None = None) -> tuple[np.ndarray, int]:
        """The output audio as float32 samples and their rate (pcm16 or Opus frames); `target` picks
        one target's audio (a multi-target session interleaves them)."""
        audio = [(m, d) for m, d in self.audio if target is None or m.get("target") == target]
        if not audio:
            return np.zeros(0, np.float32), 0
        rate = audio[0][0]["sample_rate"]
        parts = []
        decoder = None
        for meta, data in audio:
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


class _Dropped(Exception):
    """The connection was lost without a close from the server: resume."""


async def stream_audio(
    url: str,
    samples: np.ndarray,
    sample_rate: int,
    source: str,
    target: str,
    *,
    targets: tuple[str, ...] | list[str] = (),
    token: str = "",
    codec: str = "pcm16",
    output_codec: str = "pcm16",
    frame_ms: int = 100,
    speed: float = 1.0,
    stop_after_s: float | None = None,
    on_event: Callable[[dict], Any] | None = None,
    timeout: float = 300.0,
    origin: str | None = None,
    resume: bool = True,
    resume_for_s: float = 30.0,
    on_connection: Callable[[Any], Any] | None = None,
    stop: asyncio.Event | None = None,
) -> StreamResult:
    """Send `samples` paced at `speed` x real time (0: as fast as possible); collect everything.

    `stop_after_s` sends `end` after that much audio (mid-sentence ends are part of the protocol).
    With `resume` (default), a connection lost without a close from the server is reopened for up to
    `resume_for_s` seconds with the session's resume token: the server sends every event after the
    last one received (each exactly once in `result.events`), and the audio continues from the last
    frame the server got. `on_connection(ws)` is called with each new connection (tests cut it).
    Once `stop` is set no more audio is sent: `end` goes at once and the server finishes what it
    has (as with `stop_after_s`).
    """
    frames, rate, step = encode_frames(samples, sample_rate, codec, frame_ms)
    if stop_after_s is not None:
        frames = frames[: max(0, int(np.ceil(stop_after_s * rate / step)))]
    result = StreamResult()
    hello = P.Hello(source, target, rate, codec, output_codec, token, client="speech.server.client",
                    targets=tuple(targets))
    t0 = time.monotonic()
    headers = {"Origin": origin} if origin else None
    state = {"session": None, "token": "", "last_seq": 0, "next_frame": 0, "ended": False}

    async def session_once(first: bool) -> None:
        this = hello
        if not first:
            this = P.Hello(**{**hello.__dict__, "resume": P.Resume(state["session"], state["token"], state["last_seq"])})
        async with connect(url, max_size=P.MAX_TRANSPORT_BYTES, compression=None, additional_headers=headers,
                           open_timeout=30) as ws:
            if on_connection is not None:
                on_connection(ws)
            await ws.send(json.dumps(this.to_json()))
            ready = asyncio.Event()

            async def send() -> None:
                await ready.wait()
                if state["ended"]:
                    return
                while state["next_frame"] < len(frames):
                    i = state["next_frame"]
                    if speed > 0:
                        delay = t0 + (i + 1) * step / rate / speed - time.monotonic()
                        if delay > 0:  # a frame exists once its last sample was spoken
                            await _sleep_unless(stop, delay)
                    if stop is not None and stop.is_set():
                        result.stopped = True
                        break
                    await ws.send(frames[i])
                    state["next_frame"] = i + 1
                    result.sent_s = max(result.sent_s, (i + 1) * step / rate)
                await ws.send(json.dumps({"type": "end"}))
                state["ended"] = True

            async def receive() -> None:
                pending_audio: dict | None = None
                async for message in ws:
                    if isinstance(message, bytes):
                        if pending_audio is not None:
                            result.audio.append((pending_audio, message))
                            state["last_seq"] = max(state["last_seq"], pending_audio.get("seq", 0))
                        pending_audio = None
                        continue
                    event = json.loads(message)
                    kind = event.get("type")
                    if kind == "ready":
                        state["session"], state["token"] = event.get("session"), event.get("resume_token", "")
                        if event.get("resumed"):
                            state["next_frame"] = int(event.get("frames_received", state["next_frame"]))
                            state["ended"] = bool(event.get("input_ended")) or state["ended"]
                        ready.set()
                        if not first:
                            result.resumes += 1
                            if on_event is not None:
                                on_event(event)
                            continue  # the first ready is the one kept in `events`
                    if kind == "error" and event.get("code") == "slow_client" and resume and state["session"]:
                        state["slow"] = True  # the server dropped a connection that fell behind: resume
                        continue
                    seq = event.get("seq")
                    if isinstance(seq, int) and seq <= state["last_seq"]:
                        pending_audio = None
                        continue  # already received before the connection dropped
                    if kind == "audio":
                        pending_audio = event  # counted once its payload has arrived
                    elif isinstance(seq, int):
                        state["last_seq"] = seq
                    result.events.append(event)
                    if on_event is not None:
                        on_event(event)

            sender = asyncio.create_task(send())
            try:
                await receive()
            except ConnectionClosed:
                pass
            finally:
                if not sender.done():
                    sender.cancel()
                await asyncio.gather(sender, return_exceptions=True)
            result.close_code = ws.close_code
            if (ws.protocol.close_rcvd is None or state.pop("slow", False)) and result.done is None:
                result.drops += 1
                if resume:
                    raise _Dropped()

    async def run() -> None:
        first = True
        deadline = None
        delay = 0.05
        while True:
            try:
                await session_once(first)
                return
            except (_Dropped, OSError, ConnectionClosed) as e:
                if not resume or (first and not isinstance(e, _Dropped)):
                    if isinstance(e, _Dropped):
                        return
                    raise
                # lost before `ready`: nothing was sent yet, so open a new session
                first = state["session"] is None
                deadline = deadline or time.monotonic() + resume_for_s
                if time.monotonic() > deadline:
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    await asyncio.wait_for(run(), timeout)
    result.elapsed_s = time.monotonic() - t0
    return result


async def _sleep_unless(stop: asyncio.Event | None, delay: float) -> None:
    """Sleep `delay` seconds, or less if `stop` is set meanwhile."""
    if stop is None:
        await asyncio.sleep(delay)
        return
    try:
        await asyncio.wait_for(stop.wait(), delay)
    except TimeoutError:
        pass


async def stream_file(url: str, path: str | Path, source: str, target: str, **options: Any) -> StreamResult:
    samples, rate, _ = read_audio(path)
    return await stream_audio(url, samples, rate, source, target, **options)
