"""`speech serve --engine ray`: the same websocket protocol through a Ray Serve deployment.

Each Ray Serve replica runs one ordinary `SpeechServer` (the same connection handler, session slots,
models and thread budget as `--engine plain`) on a loopback port of its own, behind a FastAPI
websocket ingress that relays frames both ways. Ray's proxy picks a replica when a websocket opens;
from then on every frame of that connection goes to the same replica, so a session's state (the
recogniser buffer, the translator's KV cache, the chunker) stays where its websocket is. An external
client sees the same endpoints (/ws, /, /ws/listen, /healthz, /metrics, the page) and close codes.

Autoscaling follows live connections (Ray counts an open websocket as an ongoing request): a
replica is added when replicas average more than --max-sessions, and one is removed only after a
long quiet period; a replica being removed first drains (it takes no new connection and waits up
to DRAIN_S for its open sessions to end). On SIGTERM every replica first flushes its open
sessions, as `speech serve` does (`flush_replicas`), so the shutdown does not wait for them.

Ray is imported only here, and only when `--engine ray` is chosen (the optional extra `ray`).
"""

# No `from __future__ import annotations`: FastAPI reads the route handlers' annotations
# (WebSocket, Request), which are imported inside build_app, at definition time.
import argparse
import asyncio
import os
import signal
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from ..errors import UserError

INSTALL_HINT = ("--engine ray needs Ray Serve, an optional extra (about 370 MB): "
                ".venv/bin/pip install -e '.[ray]'  (or: pip install 'ray[serve]==2.60.0')")
WEBSOCKET_ROUTES = ("/", "/ws", "/ws/listen")
DRAIN_S = 3600.0  # a replica scaled down waits this long for its sessions (a talk) to end
DOWNSCALE_DELAY_S = 300.0  # quiet time before a replica is removed


def require_ray() -> None:
    try:
        import ray  # noqa: F401
        from ray import serve  # noqa: F401
    except ImportError:
        raise UserError(INSTALL_HINT) from None


async def start_inner_server(args: argparse.Namespace) -> Any:  # SpeechServer
    """The replica's own `SpeechServer` on 127.0.0.1:0, built as `speech serve` builds it from
    arguments that `speech.server.cli.resolve_args` has filled."""
    from ..backends import default_registry
    from ..budget import ThreadBudget
    from ..pipeline import PipelineConfig
    from .cli import parse_extra
    from .memory import limit_arenas
    from .pipelines import RealPipeline, load_factory
    from .protocol import Hello
    from .server import ServerConfig, SpeechServer

    limit_arenas()
    cores = args.ray_replica_cpus or None  # the CPUs Ray reserved for this replica
    registry = default_registry(ThreadBudget.for_machine(sessions=args.max_sessions, branches=args.targets_per_session,
                                                         cores=cores))
    base = getattr(args, "base_config", None) or PipelineConfig(asr_model=args.asr_model, mt_backend=args.mt_backend,
                                                                voice=args.voice)
    base = base.replace(extra=parse_extra(args.extra))
    english = "whisper-tiny.en" if args.fast_english else None
    factory = load_factory(args.pipeline, registry, base) if args.pipeline else RealPipeline(registry, base, english)
    warm = args.warm_pair
    if warm and hasattr(factory, "warm_up"):
        await factory.warm_up(Hello(warm[0], warm[1], 16000))
    config = ServerConfig(host="127.0.0.1", port=0, token=args.token, max_sessions=args.max_sessions,
                          replica_id=args.replica_id, log_dir=args.log_dir, resume_grace=args.resume_grace,
                          max_listeners=args.max_listeners)  # origins: checked by the ingress
    server = SpeechServer(config, factory)
    await server.start()
    return server


def origin_allowed(headers: Any, allowed: tuple[str, ...]) -> bool:
    """The plain server's rule: no Origin (not a browser), the server's own origin, or a listed one."""
    origin = headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    if parts.scheme in ("http", "https") and parts.netloc == headers.get("host", ""):
        return True
    return origin in allowed


async def relay(client: Any, inner: Any) -> tuple[int, str]:
    """Frames both ways until one side closes; returns the close (code, reason) to pass on."""
    from starlette.websockets import WebSocketDisconnect
    from websockets.exceptions import ConnectionClosed

    async def upstream() -> tuple[int, str]:
        while True:
            message = await client.receive()
            if message["type"] == "websocket.disconnect":
                code = message.get("code", 1000)
                await inner.close(code if code in range(1000, 5000) and code not in (1005, 1006) else 1000)
                return code, ""
            data = message.get("bytes")
            await inner.send(data if data is not None else message.get("text", ""))

    async def downstream() -> tuple[int, str]:
        try:
            async for message in inner:
                if isinstance(message, bytes):
                    await client.send_bytes(message)
                else:
                    await client.send_text(message)
        except ConnectionClosed:
            pass
        code = inner.close_code if inner.close_code is not None else 1000
        return code, inner.close_reason or ""

    tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    try:
        result = next(iter(done)).result()
    except (WebSocketDisconnect, ConnectionClosed, RuntimeError):
        result = (1000, "")
    if tasks[1] in done:  # the server closed: pass its code on to the client
        try:
            await client.close(code=result[0], reason=result[1])
        except RuntimeError:
            pass  # the client is gone already
    return result


def build_app(args: argparse.Namespace, max_replicas: int = 1) -> Any:
    """The Ray Serve application: one deployment, a FastAPI ingress, one SpeechServer per replica."""
    from fastapi import FastAPI, Request, WebSocket
    from fastapi.responses import Response
    from ray import serve
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    from ..budget import machine_cores

    app = FastAPI()
    allowed = tuple(args.allow_origin)

    @serve.deployment(
        name="speech",
        # An open websocket counts as one ongoing request: listeners ride on top of speakers.
        max_ongoing_requests=max(8, args.max_sessions * 16),
        autoscaling_config={
            "min_replicas": 1,
            "max_replicas": max_replicas,
            "target_ongoing_requests": args.max_sessions,
            "upscale_delay_s": 5.0,
            "downscale_delay_s": DOWNSCALE_DELAY_S,
        },
        graceful_shutdown_timeout_s=DRAIN_S,
        graceful_shutdown_wait_loop_s=2.0,
        health_check_period_s=5.0,
        ray_actor_options={"num_cpus": args.ray_replica_cpus or machine_cores()},
    )
    @serve.ingress(app)
    class SpeechReplica:
        async def __init__(self, options: argparse.Namespace) -> None:
            self.server = await start_inner_server(options)
            self.flushed: "asyncio.Future | None" = None  # the shutdown of the inner server, once begun
            self.base = f"ws://127.0.0.1:{self.server.port}"

        async def check_health(self) -> None:
            if self.flushed is None and (self.server._server is None or not self.server._server.is_serving()):
                raise RuntimeError("the replica's speech server stopped")

        async def flush_sessions(self) -> int:
            """Flush every open session as `speech serve` does on SIGTERM (each says `done`, reason
            shutdown), once; returns this replica's process id (the caller counts replicas)."""
            if self.flushed is None:
                self.flushed = asyncio.ensure_future(self.server.shutdown())
            await asyncio.shield(self.flushed)
            return os.getpid()

        async def _websocket(self, websocket: WebSocket) -> None:
            if not origin_allowed(websocket.headers, allowed):
                await websocket.close(code=1008)  # before accept: the client sees HTTP 403
                return
            query = websocket.url.query
            target = self.base + websocket.url.path + (f"?{query}" if query else "")
            try:
                inner = await connect(target, max_size=None, compression=None, open_timeout=10)
            except InvalidStatus as e:
                await websocket.close(code=1008 if e.response.status_code in (403, 404) else 1013)
                return
            await websocket.accept()
            async with inner:
                await relay(websocket, inner)

        @app.websocket("/")
        async def ws_root(self, websocket: WebSocket) -> None:
            await self._websocket(websocket)

        @app.websocket("/ws")
        async def ws_main(self, websocket: WebSocket) -> None:
            await self._websocket(websocket)

        @app.websocket("/ws/listen")
        async def ws_listen(self, websocket: WebSocket) -> None:
            await self._websocket(websocket)

        @app.get("/{path:path}")
        async def http(self, request: Request, path: str) -> Response:
            status, headers, body = await asyncio.to_thread(_http_get, self.server.port, request)
            return Response(body, status_code=status, headers=headers)

    return SpeechReplica.bind(args)


def _http_get(port: int, request: Any) -> tuple[int, dict, bytes]:
    """The replica's own answer to a GET (health, metrics, the page)."""
    import urllib.error
    import urllib.request

    url = f"http://127.0.0.1:{port}{request.url.path}" + (f"?{request.url.query}" if request.url.query else "")
    forward = {k: v for k, v in request.headers.items() if k.lower() == "authorization"}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=forward), timeout=10) as r:
            status, headers, body = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, headers, body = e.code, e.headers, e.read()
    keep = {k: v for k, v in headers.items() if k.lower() in ("content-type", "cache-control", "x-replica")}
    return status, keep, body


def deploy(args: argparse.Namespace, host: str, port: int, max_replicas: int = 1) -> None:
    """Start Serve on host:port (on the Ray cluster this process is connected to) and run the app;
    `args`: `speech serve` arguments filled by `speech.server.cli.resolve_args`."""
    from ray import serve

    serve.start(http_options={"host": host, "port": port}, logging_config={"log_level": "WARNING"})
    serve.run(build_app(args, max_replicas), name="speech", route_prefix="/", blocking=False)


def flush_replicas(timeout_s: float = 60.0) -> int:
    """Every running replica of the app flushes its open sessions (SIGTERM's meaning for
    `speech serve`); returns how many replicas did. Without it, Serve's shutdown would wait up to
    DRAIN_S for the sessions to end by themselves.

    Serve routes a handle call to one replica of its choice, so the calls go out in rounds until
    every running replica has answered (each answers with its process id)."""
    from ray import serve

    status = serve.status().applications.get("speech")
    running = status.deployments["speech"].replica_states.get("RUNNING", 0) if status else 0
    if not running:
        return 0
    handle = serve.get_deployment_handle("speech", app_name="speech")
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while len(seen) < running and time.monotonic() < deadline:
        calls = [handle.flush_sessions.remote() for _ in range(2 * running)]
        for call in calls:
            seen.add(call.result(timeout_s=max(1.0, deadline - time.monotonic())))
    return len(seen)


def serve_ray(args: argparse.Namespace, warm: "tuple[str, str] | None") -> int:
    """`speech serve --engine ray`: a local Ray cluster (or $RAY_ADDRESS's), Serve on --host:--port."""
    require_ray()
    import ray
    from ray import serve

    if args.port == 0:
        raise UserError("--engine ray needs a fixed --port (Ray Serve's proxy cannot pick a free one)")
    t0 = time.monotonic()
    print("speech serve: starting Ray Serve ...", file=sys.stderr, flush=True)
    ray.init(address=os.environ.get("RAY_ADDRESS"), logging_level="WARNING", include_dashboard=False)
    try:
        deploy(args, args.host, args.port, args.ray_max_replicas)
        page = f"http://{args.host}:{args.port}/" + (f"?token={args.token}" if args.token else "")
        print(f"speech serve: listening on ws://{args.host}:{args.port}/ws (page {page}, health /healthz, "
              f"metrics /metrics; engine ray, started in {time.monotonic() - t0:.1f} s)", flush=True)
        stop = asyncio.Event()

        async def wait() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()

        asyncio.run(wait())
        print("speech serve: flushing open sessions, then shutting down Ray Serve ...", file=sys.stderr, flush=True)
        flush_replicas()
        serve.shutdown()
    finally:
        ray.shutdown()
    return 0
