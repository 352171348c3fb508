"""One websocket connection: hello, one Session, audio in, events and audio out, done.

Three tasks share the connection in one TaskGroup: the receiver (frames -> input queue), the
pipeline (the Session, then the `done` summary) and the sender (the only writer to the socket).
Whatever ends the group early (a protocol error, a disconnect, a failing stage) cancels the other
two, so a session never outlives its connection.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from websockets.exceptions import ConnectionClosed

from ..channel import Channel
from ..clock import WallClock
from ..events import EventLog
from ..stage import StageError
from ..types import AudioChunk, EncodedPacket
from . import protocol as P
from .audio_input import InputAudio
from .metrics import percentile

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from .server import SpeechServer

MAX_BACKLOG_S = 30.0  # input audio the pipeline may fall behind before the session is refused
MAX_PENDING_OUT_BYTES = 32 * 1024 * 1024  # output a slow client may leave unread


class Connection:
    def __init__(self, server: "SpeechServer", ws: "ServerConnection", number: int) -> None:
        self.server = server
        self.ws = ws
        self.number = number
        self.clock = WallClock()
        self.input: InputAudio | None = None
        self._inq: asyncio.Queue[AudioChunk | None] = asyncio.Queue()
        self._outq: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self._pending_out = 0
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._receiver: asyncio.Task | None = None
        self.task: asyncio.Task | None = None  # the handler task, for shutdown
        self._ended = False
        self._end_requested = False
        self._end_wall: float | None = None
        # summary figures
        self.lags: dict[str, list[float]] = {"recognition": [], "translation": [], "synthesis": []}
        self.words = {"recognition": 0, "translation": 0}
        self.audio_out_s = 0.0
        self.frames_out = 0
        self.compute_s = 0.0

    # -- entry point -----------------------------------------------------------------------
    async def serve(self) -> None:
        metrics = self.server.metrics
        try:
            hello = await self._read_hello()
            if self.server.config.token and not hmac.compare_digest(
                hello.token.encode(), self.server.config.token.encode()
            ):
                metrics.rejected["unauthorized"] += 1
                raise P.ProtocolError("unauthorized", "a valid token is needed: pass the server's --token in hello")
            if not self.server.try_acquire(self):
                metrics.rejected["busy"] += 1
                raise P.ProtocolError(
                    "busy",
                    f"the server is busy ({self.server.config.max_sessions} sessions); try again later",
                    P.CLOSE_TRY_AGAIN,
                )
            try:
                await self._run(hello)
            finally:
                self.server.release(self)
        except P.ProtocolError as e:
            metrics.errors[e.code] += 1
            await self._close_with_error(e.code, e.message, e.close_code)
        except ConnectionClosed:
            pass

    async def _read_hello(self) -> P.Hello:
        try:
            raw = await asyncio.wait_for(self.ws.recv(), self.server.config.hello_timeout)
        except asyncio.TimeoutError:
            raise P.ProtocolError("hello_timeout", f"no hello within {self.server.config.hello_timeout:g} s") from None
        if isinstance(raw, bytes):
            raise P.ProtocolError("hello_expected", "audio arrived before the hello: send the JSON hello first")
        return P.parse_hello(P.parse_message(raw))

    async def _close_with_error(self, code: str, message: str, close_code: int, **extra: Any) -> None:
        try:
            await self.ws.send(P.dumps(P.error_event(code, message, **extra)))
            await self.ws.close(close_code, code[:100])
        except ConnectionClosed:
            pass

    # -- the session -----------------------------------------------------------------------
    async def _run(self, hello: P.Hello) -> None:
        metrics = self.server.metrics
        self.input = InputAudio(hello.codec, hello.sample_rate)
        try:
            log = EventLog(self.server.log_path(self.number), keep=False, on_record=self._on_record_any_thread)
        except OSError as e:
            raise P.ProtocolError("log_unwritable", f"cannot write the session log: {e}", P.CLOSE_INTERNAL) from None
        try:
            session = await asyncio.to_thread(
                self.server.pipeline, hello, self._source, self._sink, self.clock, log
            )
        except (ValueError, LookupError, RuntimeError, ImportError, MemoryError, OSError) as e:
            log.close()
            raise P.ProtocolError("unavailable", f"cannot build a pipeline for {hello.source}->{hello.target}: {e}", P.CLOSE_INTERNAL) from None
        self.clock.restart()
        await self.ws.send(
            P.dumps({"type": "ready", "version": P.VERSION, "session": self.number, "source": hello.source, "target": hello.target})
        )
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._send_loop())
                self._receiver = tg.create_task(self._receive_loop())
                if self._end_requested:  # shutdown began while the pipeline was being built
                    self.request_end()
                await self._pipeline(session)
        except ExceptionGroup as group:
            errors = _flatten(group)
            protocol = [e for e in errors if isinstance(e, P.ProtocolError)]
            protocol += [e.error for e in errors if isinstance(e, StageError) and isinstance(e.error, P.ProtocolError)]
            stage = [e for e in errors if isinstance(e, StageError) and not isinstance(e.error, P.ProtocolError)]
            if protocol:
                raise protocol[0] from None
            if stage:
                metrics.errors["pipeline_error"] += 1
                await self._close_with_error("pipeline_error", str(stage[0]), P.CLOSE_INTERNAL, stage=stage[0].stage)
            elif all(isinstance(e, ConnectionClosed) for e in errors):
                metrics.errors["disconnected"] += 1
            else:
                raise
        finally:
            log.close()
            metrics.audio_in_s += self.input.seconds

    async def _pipeline(self, session: Any) -> None:
        await session.run()
        # Records logged from worker threads were scheduled before their threads returned; one
        # turn of the loop delivers them, so `done` follows every committed word.
        await asyncio.sleep(0)
        self._put_out(P.dumps({"type": "done", "summary": self.summary()}))
        self._outq.put_nowait(None)
        self.server.metrics.sessions_completed += 1

    def request_end(self) -> None:
        """Shutdown: stop reading the client and flush the session as if it had sent `end`."""
        self._end_requested = True
        if not self._ended and self._receiver is not None and not self._receiver.done():
            self._receiver.cancel()
            self._finish_input()

    # -- input -----------------------------------------------------------------------------
    async def _receive_loop(self) -> None:
        assert self.input is not None
        idle = self.server.config.idle_timeout
        while True:
            try:
                raw = await asyncio.wait_for(self.ws.recv(), idle)
            except asyncio.TimeoutError:
                raise P.ProtocolError("idle_timeout", f"no message for {idle:g} s; send audio or end") from None
            if isinstance(raw, bytes):
                chunk = self.input.frame(raw, self.clock.now())
                if chunk is not None:
                    self._enqueue(chunk)
                continue
            msg = P.parse_message(raw)
            if msg["type"] == "end":
                self._finish_input()
                return
            if msg["type"] == "hello":
                raise P.ProtocolError("duplicate_hello", "hello may be sent once per connection")
            raise P.ProtocolError("bad_message", f"unknown message type {msg['type'][:20]!r}; expected audio frames or end")

    def _finish_input(self) -> None:
        self._ended = True
        self._end_wall = self.clock.now()
        assert self.input is not None
        tail = self.input.finish(self.clock.now())
        if tail is not None:
            self._inq.put_nowait(tail)
        self._inq.put_nowait(None)

    def _enqueue(self, chunk: AudioChunk) -> None:
        backlog = self._inq.qsize() * chunk.duration
        if backlog > MAX_BACKLOG_S:
            raise P.ProtocolError(
                "overloaded", f"the server fell {backlog:.0f} s behind the audio; try again later", P.CLOSE_TRY_AGAIN
            )
        self._inq.put_nowait(chunk)

    async def _source(self, outbox: Channel[AudioChunk]) -> None:
        while (chunk := await self._inq.get()) is not None:
            await outbox.put(chunk)

    # -- output ----------------------------------------------------------------------------
    def _put_out(self, item: str | bytes, check: bool = False) -> None:
        self._pending_out += len(item)
        if check and self._pending_out > MAX_PENDING_OUT_BYTES:
            raise P.ProtocolError("slow_client", "the client does not read its output; closing", P.CLOSE_POLICY)
        self._outq.put_nowait(item)

    async def _send_loop(self) -> None:
        while (item := await self._outq.get()) is not None:
            self._pending_out -= len(item)
            await self.ws.send(item)
        await self.ws.close(P.CLOSE_NORMAL, "done")

    async def _sink(self, inbox: Channel[Any]) -> None:
        async for item in inbox:
            if isinstance(item, EncodedPacket):
                meta = {"codec": item.codec, "sample_rate": item.sample_rate, "samples": item.samples,
                        "start": round(item.start, 4), "seq": item.seq}
                payload = item.data
            elif isinstance(item, AudioChunk):
                pcm = np.clip(item.samples, -1.0, 1.0)
                payload = (pcm * 32767.0).astype("<i2").tobytes()
                meta = {"codec": "pcm16", "sample_rate": item.sample_rate, "samples": len(item.samples),
                        "start": round(item.start, 4), "seq": item.seq}
            else:
                continue  # text-only pipelines: their text already went out as events
            self.audio_out_s += meta["samples"] / meta["sample_rate"]
            self.server.metrics.audio_out_s += meta["samples"] / meta["sample_rate"]
            self.frames_out += 1
            self._put_out(P.dumps({"type": "audio", **meta, "bytes": len(payload)}), check=True)
            self._put_out(payload)

    # -- events ----------------------------------------------------------------------------
    def _on_record_any_thread(self, rec: dict) -> None:
        if threading.get_ident() == self._loop_thread:
            self._on_record(rec)
        else:
            self._loop.call_soon_threadsafe(self._on_record, rec)

    def _lag(self, source_time: float | None) -> float | None:
        if source_time is None or self.input is None:
            return None
        arrived = self.input.arrivals.arrival(float(source_time))
        return None if arrived is None else max(0.0, self.clock.now() - arrived)

    def _on_record(self, rec: dict) -> None:
        kind = rec.get("kind")
        if kind == "update" and rec.get("stage") in ("asr", "mt"):
            name = "recognition" if rec["stage"] == "asr" else "translation"
            lag = self._lag(rec.get("source_time"))
            if rec.get("committed") and lag is not None:
                self.lags[name].append(lag)
                self.server.metrics.observe_lag(lag)
            self.words[name] += len(rec.get("committed", []))
            self._put_out(P.dumps(P.text_event(name, rec, lag)))
        elif kind == "audio" and rec.get("stage") == "tts":
            lag = self._lag(rec.get("source_time"))
            if lag is not None:
                self.lags["synthesis"].append(lag)
            self._put_out(P.dumps({"type": "synthesis", "text": rec.get("text", ""), "start": rec.get("start"),
                                   "duration": rec.get("duration"), "seq": rec.get("seq"),
                                   "lag": None if lag is None else round(lag, 4)}))
        elif kind == "stats":
            value = rec.get("compute_s")
            if isinstance(value, (int, float)):
                self.compute_s += float(value)

    def summary(self) -> dict:
        audio_s = self.input.seconds if self.input else 0.0
        now = self.clock.now()
        main = self.lags["translation"] or self.lags["recognition"]
        rtf = self.compute_s / audio_s if audio_s > 0 and self.compute_s > 0 else None
        if rtf is not None:
            self.server.metrics.recent_rtfs.append(rtf)

        def pct(values: list[float], q: float) -> float | None:
            v = percentile(values, q)
            return None if v is None else round(v, 4)

        return {
            "audio_in_s": round(audio_s, 4),
            "wall_s": round(now, 4),
            "flush_s": None if self._end_wall is None else round(now - self._end_wall, 4),
            "recognized_words": self.words["recognition"],
            "translated_words": self.words["translation"],
            "audio_out_s": round(self.audio_out_s, 4),
            "audio_frames_out": self.frames_out,
            "lag_p50": pct(main, 50),
            "lag_p90": pct(main, 90),
            "recognition_lag_p50": pct(self.lags["recognition"], 50),
            "recognition_lag_p90": pct(self.lags["recognition"], 90),
            "translation_lag_p50": pct(self.lags["translation"], 50),
            "translation_lag_p90": pct(self.lags["translation"], 90),
            "synthesis_lag_p50": pct(self.lags["synthesis"], 50),
            "compute_s": round(self.compute_s, 4),
            "rtf": None if rtf is None else round(rtf, 4),
            "ended_by_client": self._ended,
            "finished_at": time.time(),
        }


def _flatten(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_flatten(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out
