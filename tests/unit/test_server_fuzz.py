"""Fuzz: >= 1000 malformed or hostile messages; the server never crashes and leaks no session.

The server runs on its own event loop in a background thread (the fake pipeline); hypothesis
drives a synchronous websocket client against it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from speech.server.client import stream_audio
from speech.server.server import ServerConfig, SpeechServer

from .test_server_fakes import fake_pipeline

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class ServerThread:
    def __init__(self, config: ServerConfig) -> None:
        self.server = SpeechServer(config, fake_pipeline)
        self.loop = asyncio.new_event_loop()
        self.loop_errors: list[dict] = []
        self.loop.set_exception_handler(lambda loop, ctx: self.loop_errors.append(ctx))
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        await self.server.start()
        self._ready.set()
        await self._stop.wait()
        await self.server.shutdown()

    def __enter__(self) -> "ServerThread":
        self.thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)

    def call(self, fn):
        """Run fn() on the server's loop and return its result (to read state safely)."""
        async def wrapper():
            return fn()
        return asyncio.run_coroutine_threadsafe(wrapper(), self.loop).result(10)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
hello_fields = st.fixed_dictionaries(
    {"type": st.just("hello")},
    optional={
        "version": st.one_of(st.just(1), json_values),
        "source": st.one_of(st.sampled_from(["en", "es", "x", "en-US"]), json_values),
        "target": st.one_of(st.sampled_from(["es", "pt", "es-boom"]), json_values),
        "sample_rate": st.one_of(st.sampled_from([16000, 48000, 7999, 96001, 0, -1]), json_values),
        "codec": st.one_of(st.sampled_from(["pcm16", "opus", "mp3"]), json_values),
        "output_codec": st.one_of(st.sampled_from(["pcm16", "opus", "wav"]), json_values),
        "token": json_values,
    },
)
VALID_HELLO = json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000})
messages = st.one_of(
    st.binary(max_size=3000),
    st.text(max_size=200),
    json_values.map(json.dumps),
    hello_fields.map(json.dumps),
    st.sampled_from(['{"type": "end"}', '{"type": "hello"}', VALID_HELLO, "", "null", "{}", '{"type": null}']),
    st.integers(0, 20000).map(lambda n: (np.arange(n) % 256).astype(np.uint8).tobytes()),
)
conversations = st.one_of(
    st.lists(messages, min_size=1, max_size=6),  # hostile from the first message
    st.lists(messages, min_size=1, max_size=6).map(lambda ms: [VALID_HELLO] + ms),  # hostile mid-session
)

OUR_CLOSE_CODES = {1000, 1003, 1008, 1009, 1011, 1013}


def converse(url: str, msgs: list[str | bytes]) -> tuple[list[dict], int | None]:
    events: list[dict] = []
    with connect(url, open_timeout=10, close_timeout=5) as ws:
        try:
            for m in msgs:
                ws.send(m)
            if msgs and msgs[-1] != '{"type": "end"}':
                ws.send('{"type": "end"}')
        except ConnectionClosed:
            pass  # the server closed while we still sent: what it said before is still queued
        try:
            while True:
                raw = ws.recv(timeout=10)
                if isinstance(raw, str):
                    events.append(json.loads(raw))
        except ConnectionClosed:
            pass
        except TimeoutError:
            raise AssertionError(f"the server neither answered nor closed after {msgs!r}") from None
        return events, ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None


def test_fuzz_hostile_messages_never_crash_or_leak(caplog):
    caplog.set_level(logging.ERROR, logger="websockets")
    sent = [0]
    config = ServerConfig(port=0, max_sessions=3, hello_timeout=2, idle_timeout=2)
    with ServerThread(config) as st_:
        url = st_.server.url

        @settings(max_examples=320, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(conversations)
        def one(msgs):
            events, code = converse(url, msgs)
            sent[0] += len(msgs)
            assert all(isinstance(e, dict) and "type" in e for e in events)
            errors = [e for e in events if e["type"] == "error"]
            for e in errors:
                assert e["code"] and e["message"]
            assert code in OUR_CLOSE_CODES, (msgs, events, code)
            if code != 1000:
                assert errors, (msgs, events, code)  # every refusal says why

        one()

        def settled():
            s = st_.server
            return s.metrics.sessions_active == 0 and not s.connections

        for _ in range(200):
            if st_.call(settled):
                break
            threading.Event().wait(0.05)
        assert st_.call(settled), "a session leaked"
        assert st_.call(lambda: st_.server.metrics.errors.get("internal", 0)) == 0
        # still serving normal clients
        tone = (0.3 * np.sin(np.arange(16000) / 5)).astype(np.float32)
        res = asyncio.run(stream_audio(url, tone, 16000, "en", "es", speed=0))
        assert res.committed("recognition") == ["w0", "w1"]
    assert sent[0] >= 1000, f"only {sent[0]} hostile messages were sent"
    assert not st_.loop_errors, st_.loop_errors[:3]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records[:3]
