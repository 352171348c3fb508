"""One websocket connection: a speaker (`/ws`) or a listener (`/ws/listen`).

A speaker's hello opens a live session in the server's hub (or, with `resume`, reattaches to one);
the connection is then only a transport: the receiver feeds the session's input, the outbox's
sender is the only writer to the socket. When the connection ends, the session goes on: a dropped
speaker is waited for (`resume_grace`), a refused one has its input ended so every committed word
still flushes into the event log (see speech.server.live).
"""

from __future__ import annotations

import asyncio
import hmac
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed

from . import protocol as P
from .live import LiveSession
from .outbox import Outbox

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from .server import SpeechServer

LISTEN_PATH = "/ws/listen"


class Connection:
    def __init__(self, server: "SpeechServer", ws: "ServerConnection", number: int) -> None:
        self.server = server
        self.ws = ws
        self.number = number
        self.live: LiveSession | None = None
        self.input = None  # set once a session ran on this connection (the server trims memory then)
        self.task: asyncio.Task | None = None  # the handler task, for shutdown
        self.listening = False  # a listener: it ends when its session does (shutdown waits for it)

    # -- entry point -----------------------------------------------------------------------
    async def serve(self) -> None:
        metrics = self.server.metrics
        try:
            if urlsplit(self.ws.request.path).path == LISTEN_PATH:
                self.listening = True
                await self._listen()
                return
            hello = await self._read_hello()
            self._check_token(hello.token)
            outbox = Outbox(self.ws, name=f"speaker-{self.number}")
            if hello.resume is not None:
                live = self.server.hub.resume(hello.resume)
                live.attach(outbox, hello.resume.last_seq, self._listen_base())
            else:
                live = await self.server.hub.open(hello, self.number)
                live.attach(outbox, None, self._listen_base())
            self.live = live
            self.input = live.input
            await self._speak(live, outbox)
        except P.ProtocolError as e:
            metrics.errors[e.code] += 1
            await self._close_with_error(e.code, e.message, e.close_code)
        except ConnectionClosed:
            pass

    def _check_token(self, given: str) -> None:
        token = self.server.config.token
        if token and not hmac.compare_digest(given.encode(), token.encode()):
            self.server.metrics.rejected["unauthorized"] += 1
            raise P.ProtocolError("unauthorized", "a valid token is needed: pass the server's --token")

    def _listen_base(self) -> str:
        host = self.ws.request.headers.get("Host") or f"{self.server.config.host}:{self.server.port}"
        return f"ws://{host}{LISTEN_PATH}"

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

    # -- a speaker -------------------------------------------------------------------------
    async def _speak(self, live: LiveSession, outbox: Outbox) -> None:
        sender = asyncio.create_task(outbox.run())
        receiver = asyncio.create_task(self._receive(live, outbox))
        try:
            await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if receiver.done() and not receiver.cancelled():
                error = receiver.exception()
                if error is None:  # `end`: the rest (flush, done, close) is the sender's
                    await sender
                elif isinstance(error, P.ProtocolError):
                    self.server.metrics.errors[error.code] += 1
                    live.refuse(outbox, error)
                    await asyncio.wait_for(sender, 10)
                elif isinstance(error, ConnectionClosed):
                    self.server.metrics.errors["disconnected"] += 1
                else:
                    raise error
        except (asyncio.TimeoutError, ConnectionClosed):
            pass
        finally:
            for task in (sender, receiver):
                task.cancel()
            await asyncio.gather(sender, receiver, return_exceptions=True)
            if live.finished and live.speaker is outbox and outbox.error is None and self.ws.protocol.close_rcvd:
                self.server.hub.delivered(live)  # done, then a close the client answered
            # the socket is gone (or the session is over): wait for a resume, or nothing to do
            live.detach(outbox, outbox.error or "disconnected")

    async def _receive(self, live: LiveSession, outbox: Outbox) -> None:
        idle = self.server.config.idle_timeout
        while True:
            try:
                raw = await asyncio.wait_for(self.ws.recv(), idle)
            except asyncio.TimeoutError:
                raise P.ProtocolError("idle_timeout", f"no message for {idle:g} s; send audio or end") from None
            if isinstance(raw, bytes):
                live.feed(raw, outbox)
                continue
            msg = P.parse_message(raw)
            if msg["type"] == "end":
                if live.speaker is outbox:
                    live.end_input("end")
                return
            if msg["type"] == "hello":
                raise P.ProtocolError("duplicate_hello", "hello may be sent once per connection")
            raise P.ProtocolError("bad_message", f"unknown message type {msg['type'][:20]!r}; expected audio frames or end")

    def request_end(self) -> None:
        """Shutdown: end the session's input as if the speaker had sent `end`."""
        if self.live is not None:
            self.live.end_input("shutdown")

    # -- a listener ------------------------------------------------------------------------
    async def _listen(self) -> None:
        request = P.parse_listen_query(parse_qs(urlsplit(self.ws.request.path).query))
        auth = self.ws.request.headers.get("Authorization", "")
        self._check_token(auth[7:] if auth.startswith("Bearer ") else request.token)
        live = self.server.hub.find(request.session)
        if live is None:
            raise P.ProtocolError("unknown_session", "no such session; take the listener URL from the speaker's ready")
        config = self.server.config
        self._limit_send_buffer(config.listener_send_buffer)
        outbox = Outbox(self.ws, config.listener_max_pending, name=f"listener-{self.number}",
                        max_delay_s=config.listener_max_delay_s)
        live.add_listener(request.target, outbox)
        self.server.metrics.listeners_total += 1
        sender = asyncio.create_task(outbox.run())
        reader = asyncio.create_task(self._drain_listener())
        try:
            await asyncio.wait({sender, reader}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            live.remove_listener(outbox)
            for task in (sender, reader):
                task.cancel()
            await asyncio.gather(sender, reader, return_exceptions=True)

    def _limit_send_buffer(self, size: int) -> None:
        sock = self.ws.transport.get_extra_info("socket") if self.ws.transport is not None else None
        if sock is not None and size > 0:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
            except OSError:
                pass  # a transport without a settable buffer: the outbox's bounds still hold

    async def _drain_listener(self) -> None:
        """A listener sends nothing that matters; reading notices when it goes away."""
        async for _ in self.ws:
            pass
