"""`speech serve`: the websocket audio API and the browser page."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from ..errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8765, help="TCP port (default 8765; 0 picks a free one)")
    parser.add_argument("--token", default=os.environ.get("SPEECH_TOKEN", ""),
                        help="clients must send this token in their hello (default: $SPEECH_TOKEN; empty: no check)")
    parser.add_argument("--max-sessions", type=int, default=None,
                        help="concurrent sessions; the thread budget is sized for them (default: one per core, "
                             "what benchmarks/load.py showed a machine holds in real time; docs/deploy.md)")
    parser.add_argument("--targets-per-session", type=int, default=1, metavar="N",
                        help="targets a session usually has; the thread budget gives each translation branch "
                             "its share of the cores for this many (default 1)")
    parser.add_argument("--replica-id", default="",
                        help="a name for this server among replicas behind a load balancer (letters, digits); "
                             "session ids start with it, so a balancer can route a listener by its session "
                             "(deploy/haproxy.cfg)")
    parser.add_argument("--engine", choices=("plain", "ray"), default="plain",
                        help="plain: this process serves (default); ray: a Ray Serve deployment of replicas "
                             "(needs the 'ray' extra; docs/deploy.md)")
    parser.add_argument("--ray-max-replicas", type=int, default=1, metavar="N",
                        help="--engine ray: replicas autoscaling may reach (default 1), each with --max-sessions")
    parser.add_argument("--ray-replica-cpus", type=int, default=0, metavar="N",
                        help="--engine ray: CPUs each replica reserves and budgets threads for "
                             "(default 0: every core of its node)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="a browser origin allowed besides the server's own (repeatable), e.g. https://example.org")
    parser.add_argument("--asr-model", default="whisper-base",
                        help="recogniser (default whisper-base: multilingual, any source language)")
    parser.add_argument("--fast-english", action="store_true",
                        help="sessions whose hello says English use whisper-tiny.en (English only: commits "
                             "sooner, translates a little worse)")
    parser.add_argument("--resume-grace", type=float, default=30.0, metavar="SECONDS",
                        help="how long a dropped speaker may resume its session (default 30; 0: no resume)")
    parser.add_argument("--max-listeners", type=int, default=100,
                        help="listener connections per session (default 100)")
    parser.add_argument("--mt-backend", default="default",
                        help="translator (apertium, bergamot, gemma-270m, a local .gguf file) or a path of "
                             "translators, e.g. bergamot:en-pt,apertium:pt-es (default: the best measured "
                             "installed path for the pair)")
    parser.add_argument("--voice", default="default", help="synthesis voice (default: the target language's)")
    parser.add_argument("--warm-up", default="en:es", metavar="SRC:TGT",
                        help="load the models for this pair before accepting clients (default en:es; 'none' to skip)")
    parser.add_argument("--asr-update-s", type=float, default=1.0, metavar="SECONDS",
                        help="seconds of new audio between recogniser updates (default 1.0: with 2 concurrent "
                             "sessions it kept p90 lag within 1.3x of one session, 0.5 did not; 0: the model's own)")
    parser.add_argument("--extra", action="append", default=[], metavar="KEY=JSON",
                        help="a pipeline option passed to the stages (repeatable), e.g. asr_update_s=1.0 "
                             "or 'mt_options={\"threads\": 1}'")
    parser.add_argument("--log-dir", type=Path, help="write one event log per session here")
    parser.add_argument("--pipeline", help=argparse.SUPPRESS)  # module:function, a custom factory (tests)
    from ..configuration import add_config_flag, add_device_flag

    add_config_flag(parser)
    from speech.tts.pace import add_pace_arguments

    add_pace_arguments(parser)
    add_device_flag(parser)


def _pair(text: str) -> tuple[str, str] | None:
    if text.lower() == "none":
        return None
    src, sep, tgt = text.partition(":")
    if not sep or not src or not tgt:
        raise UserError(f"--warm-up must look like en:es (or none), got {text!r}")
    return src, tgt


def parse_extra(items: list[str]) -> dict:
    import json

    extra = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--extra must look like KEY=JSON, got {item!r}")
        try:
            extra[key] = json.loads(value)
        except json.JSONDecodeError:
            extra[key] = value  # a bare word is a string
    return extra


def resolve_args(args: argparse.Namespace) -> tuple[str, str] | None:
    """Fills `args` with the effective settings (defaults < --config FILE < flags); returns the
    warm-up pair. Shared by both engines (speech.server.ray_engine builds its replicas from it)."""
    from ..configuration import resolve

    if args.replica_id and not args.replica_id.isalnum():
        raise UserError(f"--replica-id must be letters and digits only, got {args.replica_id!r}")
    if args.targets_per_session < 1:
        raise UserError("--targets-per-session must be at least 1")
    effective = resolve("serve", args)  # defaults < --config FILE < flags; checks ports and counts
    server = effective.server
    args.host, args.port, args.token, args.max_sessions = server.host, server.port, server.token, server.max_sessions
    args.allow_origin, args.log_dir = list(server.allow_origins), Path(server.log_dir) if server.log_dir else None
    args.resume_grace, args.max_listeners, args.fast_english = server.resume_grace, server.max_listeners, server.fast_english
    args.replica_id, args.engine = server.replica_id, server.engine
    args.ray_max_replicas, args.ray_replica_cpus = server.ray_max_replicas, server.ray_replica_cpus
    args.base_config = effective.config
    args.warm_pair = _pair(server.warm_up)
    return args.warm_pair


def run(args: argparse.Namespace) -> int:
    warm = resolve_args(args)
    if args.engine == "ray":
        from .ray_engine import serve_ray

        return serve_ray(args, warm)
    return run_until_shutdown(_serve(args, warm))


CALL_THREADS = "speech-call"  # the names of the worker threads that run blocking model calls
HUNG_CALL_WAIT_S = 5.0


def run_until_shutdown(main) -> int:  # noqa: ANN001 - the server's coroutine
    """`asyncio.run(main)`, except that a model call that never returns cannot hold the process.

    A hung call (its session already ended with ModelCallTimeout) keeps its worker thread: Python
    cannot stop a thread, and both asyncio.run and the interpreter's exit wait for every worker of
    the default executor. After the shutdown, calls still running get HUNG_CALL_WAIT_S seconds; then
    the process says so and exits without them (every session has flushed and closed its log).
    """
    from concurrent.futures import ThreadPoolExecutor

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    executor = ThreadPoolExecutor(thread_name_prefix=CALL_THREADS)
    loop.set_default_executor(executor)
    try:
        code = loop.run_until_complete(main)
    finally:
        try:
            _cancel_remaining(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            executor.shutdown(wait=False, cancel_futures=True)
            asyncio.set_event_loop(None)
            loop.close()
    if _join_calls(HUNG_CALL_WAIT_S):
        return code
    print(f"speech serve: a model call has not returned {HUNG_CALL_WAIT_S:g} s after the shutdown "
          "(a hung engine); exiting without it", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(code)


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def _join_calls(timeout: float) -> bool:
    """Waits for the model-call threads, `timeout` seconds in all; whether every one ended."""
    import threading
    import time

    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.name.startswith(CALL_THREADS):
            thread.join(max(0.0, deadline - time.monotonic()))
    return not any(t.name.startswith(CALL_THREADS) and t.is_alive() for t in threading.enumerate())


async def _serve(args: argparse.Namespace, warm: tuple[str, str] | None) -> int:
    from ..backends import default_registry
    from ..budget import ThreadBudget
    from ..pipeline import PipelineConfig
    from .pipelines import RealPipeline, load_factory
    from .protocol import Hello
    from .server import ServerConfig, SpeechServer

    from .memory import limit_arenas

    limit_arenas()  # before any worker thread exists (see speech.server.memory)
    budget = ThreadBudget.for_machine(sessions=args.max_sessions, branches=args.targets_per_session)
    print(f"speech serve: thread budget {budget.describe()}", file=sys.stderr, flush=True)
    registry = default_registry(budget)
    base = getattr(args, "base_config", None) or PipelineConfig(asr_model=args.asr_model, mt_backend=args.mt_backend,
                                                                voice=args.voice)
    base = base.replace(extra=parse_extra(args.extra))  # known keys move onto the typed options
    if warm:
        from ..preflight import check_config

        try:
            check_config(base.replace(source=warm[0], target=warm[1]), registry)  # one line, before models load
        except (UserError, LookupError) as e:
            raise UserError(f"{e} (checked for the warm-up pair {warm[0]}:{warm[1]}; "
                            f"--warm-up SRC:TGT checks another)") from None
    english = "whisper-tiny.en" if args.fast_english else None
    factory = load_factory(args.pipeline, registry, base) if args.pipeline else RealPipeline(registry, base, english)
    if warm and hasattr(factory, "warm_up"):
        print(f"speech serve: loading models for {warm[0]}->{warm[1]} ...", file=sys.stderr, flush=True)
        try:
            await factory.warm_up(Hello(warm[0], warm[1], 16000))
        except Exception as e:  # noqa: BLE001 - say which pair failed and how to skip it
            raise UserError(f"warm-up {warm[0]}:{warm[1]} failed ({type(e).__name__}: {e}); try --warm-up none") from e
    if hasattr(factory, "languages"):
        served = factory.languages()
        auto = " (or auto: told from the first speech)" if served.get("detect") else ""
        print(f"speech serve: speech in {', '.join(x['code'] for x in served['sources'])}{auto}; translated into "
              f"{', '.join(x['code'] for x in served['targets'])} (GET /languages)", file=sys.stderr, flush=True)
    config = ServerConfig(host=args.host, port=args.port, token=args.token, max_sessions=args.max_sessions,
                          allowed_origins=tuple(args.allow_origin), log_dir=args.log_dir,
                          resume_grace=args.resume_grace, max_listeners=args.max_listeners,
                          replica_id=args.replica_id)
    server = SpeechServer(config, factory)
    try:
        await server.start()
    except OSError as e:
        raise UserError(f"cannot listen on {args.host}:{args.port} ({e.strerror or e}); choose another --port") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    page = f"http://{args.host}:{server.port}/" + (f"?token={args.token}" if args.token else "")
    # Scripts read this line to learn the port (with --port 0).
    print(f"speech serve: listening on {server.url} (page {page}, health /healthz, metrics /metrics)", flush=True)
    await stop.wait()
    print("speech serve: shutting down, flushing open sessions ...", file=sys.stderr, flush=True)
    await server.shutdown()
    return 0
