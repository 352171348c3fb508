"""The websocket server: routes, origin check, session slots, metrics and a flushing shutdown.

The stage list comes from an injectable `PipelineFactory` (see speech.server.pipelines for the
real one); tests pass a fake. One factory, hence one registry of loaded models, per server.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import mimetypes
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, Protocol
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..channel import Channel
from ..clock import Clock
from ..events import EventLog
from ..session import Session
from . import protocol as P
from .connection import LISTEN_PATH, Connection
from .hub import SessionHub
from .memory import trim
from .metrics import Metrics

WEBSOCKET_PATHS = ("/", "/ws", LISTEN_PATH)


class PipelineFactory(Protocol):
    def __call__(
        self,
        hello: P.Hello,
        source: Callable[[Channel[Any]], Awaitable[None]],
        sink: Mapping[str, Callable[[Channel[Any]], Awaitable[None]]],  # one per target
        clock: Clock,
        log: EventLog,
    ) -> Session: ...


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str = ""
    max_sessions: int = 2
    allowed_origins: tuple[str, ...] = ()  # besides the server's own origin
    hello_timeout: float = 10.0
    idle_timeout: float = 30.0
    shutdown_timeout: float = 30.0
    log_dir: Path | None = None  # one event log per session when set
    static_dir: Path | None = None  # the browser page; default: speech.demo's static/
    resume_grace: float = 30.0  # seconds a dropped speaker has to resume its session (0: no resume)
    max_listeners: int = 100  # listener connections per session
    listener_max_pending: int = 4 * 1024 * 1024  # output a listener may leave unread before it is dropped
    listener_max_delay_s: float = 10.0  # how far behind the live stream a listener may fall before it is dropped
    # The kernel's send buffer of a listener's socket: small, so that a stalled listener's backlog
    # shows in its outbox (and is dropped) instead of filling megabytes of kernel memory first.
    listener_send_buffer: int = 64 * 1024
    replica_id: str = ""  # prefix of this server's session ids behind a load balancer (deploy/)


@dataclass
class SpeechServer:
    config: ServerConfig
    pipeline: PipelineFactory
    metrics: Metrics = field(default_factory=Metrics)
    connections: set[Connection] = field(default_factory=set)
    _sessions: set[Any] = field(default_factory=set)  # live sessions holding a slot
    _server: Server | None = None
    _count: int = 0
    _closing: bool = False
    hub: SessionHub = field(init=False)

    def __post_init__(self) -> None:
        self.hub = SessionHub(self)

    @property
    def closing(self) -> bool:
        return self._closing

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            process_request=self._answer,
            max_size=P.MAX_TRANSPORT_BYTES,
            compression=None,  # audio does not compress; deflate only costs CPU
            server_header=None,
        )
        self.config.port = self.port

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"ws://{self.config.host}:{self.port}/ws"

    async def shutdown(self) -> None:
        """Stop accepting; flush every open session (as if it had sent `end`); then close."""
        self._closing = True
        if self._server is not None:
            self._server.close(close_connections=False)
        for conn in list(self.connections):
            if conn.live is None and not conn.listening and conn.task is not None:
                conn.task.cancel()  # still before its hello: nothing to flush
        # A listener stays: its session's flushed words and `done` (reason shutdown) reach it, then
        # the session closes it.
        await self.hub.shutdown(self.config.shutdown_timeout)  # every session flushes, then says done
        pending = [c.task for c in self.connections if c.task is not None]
        if pending:
            done, still = await asyncio.wait(pending, timeout=self.config.shutdown_timeout)
            for task in still:
                task.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def __aenter__(self) -> "SpeechServer":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # -- slots -----------------------------------------------------------------------------
    @property
    def full(self) -> bool:
        return len(self._sessions) >= self.config.max_sessions

    def session_id(self, token: str) -> str:
        """A session id that names this replica first ("r1-<token>"), so a load balancer can send a
        listener to the replica holding the session (deploy/haproxy.cfg)."""
        return f"{self.config.replica_id}-{token}" if self.config.replica_id else token

    def try_acquire(self, conn: Any) -> bool:
        if self._closing or len(self._sessions) >= self.config.max_sessions:
            return False
        self._sessions.add(conn)
        self.metrics.sessions_active = len(self._sessions)
        self.metrics.sessions_total += 1
        return True

    def release(self, conn: Any) -> None:
        self._sessions.discard(conn)
        self.metrics.sessions_active = len(self._sessions)

    def log_path(self, number: int) -> Path | None:
        return None if self.config.log_dir is None else Path(self.config.log_dir) / f"session-{number:05d}.jsonl"

    # -- websocket -------------------------------------------------------------------------
    async def _handle(self, ws: ServerConnection) -> None:
        self._count += 1
        conn = Connection(self, ws, self._count)
        conn.task = asyncio.current_task()
        self.connections.add(conn)
        self.metrics.connections_open = len(self.connections)
        try:
            await conn.serve()
        except Exception as e:  # noqa: BLE001 - one connection's bug must never stop the server
            self.metrics.errors["internal"] += 1
            try:
                await ws.send(P.dumps(P.error_event("internal", f"{type(e).__name__}: {e}")))
                await ws.close(P.CLOSE_INTERNAL, "internal error")
            except Exception:  # noqa: BLE001
                pass
        finally:
            self.connections.discard(conn)
            self.metrics.connections_open = len(self.connections)
            if conn.input is not None:  # a session ran: give its freed memory back
                await asyncio.to_thread(trim)

    # -- HTTP ------------------------------------------------------------------------------
    def _origin_allowed(self, request: Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser: authentication is the token's job
        host = request.headers.get("Host", "")
        parts = urlsplit(origin)
        if parts.scheme in ("http", "https") and parts.netloc == host:
            return True
        return origin in self.config.allowed_origins

    def _answer(self, connection: ServerConnection, request: Request) -> Response | None:
        response = self._process_request(connection, request)
        if response is not None and self.config.replica_id:
            response.headers["X-Replica"] = self.config.replica_id  # which replica answered (deploy/)
        return response

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if upgrade:
            if url.path not in WEBSOCKET_PATHS:
                return _text(HTTPStatus.NOT_FOUND, f"no websocket at {url.path}; use /ws\n")
            if not self._origin_allowed(request):
                self.metrics.rejected["origin"] += 1
                return _text(HTTPStatus.FORBIDDEN, "origin not allowed; start the server with --allow-origin\n")
            if self._closing:
                return _text(HTTPStatus.SERVICE_UNAVAILABLE, "the server is shutting down\n")
            return None
        if url.path == "/healthz":
            # 503 when no session slot is free (or closing), so a load balancer routes elsewhere.
            replica = {"replica": self.config.replica_id} if self.config.replica_id else {}
            if self._closing or self.full:
                return _json(HTTPStatus.SERVICE_UNAVAILABLE, {"status": "closing" if self._closing else "full",
                                                              "protocol": P.VERSION, **replica})
            return _json(HTTPStatus.OK, {"status": "ok", "protocol": P.VERSION, **replica})
        if url.path == "/languages":
            languages = getattr(self.pipeline, "languages", None)
            return _json(HTTPStatus.OK, languages() if languages is not None else _all_languages())
        if url.path == "/metrics":
            if self.config.token and not self._http_token_ok(request):
                return _text(HTTPStatus.UNAUTHORIZED, "pass ?token=... or Authorization: Bearer ...\n")
            return _json(HTTPStatus.OK, self.metrics.to_json())
        return self._static(url.path)

    def _http_token_ok(self, request: Request) -> bool:
        given = parse_qs(urlsplit(request.path).query).get("token", [""])[0]
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            given = auth[7:]
        return hmac.compare_digest(given.encode(), self.config.token.encode())

    def _static(self, path: str) -> Response:
        root = self.config.static_dir or _default_static()
        name = "index.html" if path in ("/", "") else path.lstrip("/")
        target = (root / name).resolve()
        if root.resolve() not in target.parents or not target.is_file():
            return _text(HTTPStatus.NOT_FOUND, f"not found: {path}\n")
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype.endswith("javascript"):
            ctype += "; charset=utf-8"
        headers = Headers([("Content-Type", ctype), ("Cache-Control", "no-store")])
        return Response(HTTPStatus.OK, "OK", headers, target.read_bytes())


def _default_static() -> Path:
    from importlib.resources import files

    return Path(str(files("speech.demo") / "static"))


def _json(status: HTTPStatus, body: dict) -> Response:
    data = json.dumps(body).encode()
    return Response(status.value, status.phrase, Headers([("Content-Type", "application/json")]), data)


def _text(status: HTTPStatus, body: str) -> Response:
    return Response(status.value, status.phrase, Headers([("Content-Type", "text/plain; charset=utf-8")]), body.encode())


def _all_languages() -> dict[str, list[dict[str, str]]]:
    """Every language of the table, for a pipeline factory that does not say which it serves."""
    from speech.translate.languages import NAMES

    listed = [{"code": c, "name": n} for c, n in NAMES.items()]
    return {"sources": listed, "targets": listed, "pairs": {c: [t for t in NAMES if t != c] for c in NAMES}}
