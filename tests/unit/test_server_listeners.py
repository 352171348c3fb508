"""Several targets per session and listeners, against the fake pipeline."""

import asyncio
import json

import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from speech.events import EventLog
from speech.server import protocol as P
from speech.server.client import stream_audio
from speech.server.live import LiveSession
from speech.server.metrics import Metrics
from speech.server.outbox import Outbox
from speech.server.server import ServerConfig, SpeechServer

from .test_server_fakes import fake_pipeline
from .test_server_session import run, tone, wait_for


def server(**over):
    return SpeechServer(ServerConfig(port=0, **over), fake_pipeline)


async def listen(url, collect_until_close=True):
    """Connect a listener; returns (events, [(audio event, payload)], close code)."""
    events, audio = [], []
    async with connect(url) as ws:
        pending = None
        try:
            async for msg in ws:
                if isinstance(msg, bytes):
                    audio.append((pending, msg))
                    continue
                event = json.loads(msg)
                events.append(event)
                pending = event if event["type"] == "audio" else None
        except ConnectionClosed:
            pass  # closed with an error code: the error event says why
        return events, audio, ws.close_code


def test_one_session_several_targets_every_event_names_its_target():
    async def main():
        async with server() as srv:
            return await stream_audio(srv.url, tone(3.0), 16000, "en", "es", targets=["es", "pt", "fr"], speed=0)

    res = run(main())
    ready = res.events[0]
    assert ready["type"] == "ready" and ready["targets"] == ["es", "pt", "fr"]
    assert set(ready["listen"]) == {"es", "pt", "fr"} and ready["session"] in ready["listen"]["pt"]
    words = [f"W{i}" for i in range(6)]
    for target in ("es", "pt", "fr"):
        assert res.committed("translation", target) == words
        assert [m["samples"] for m, _ in res.audio if m["target"] == target] == [2205] * 6
        pcm, rate = res.pcm(target)
        assert rate == 22050 and len(pcm) == 6 * 2205
    assert all(e.get("target") in ("es", "pt", "fr") for e in res.events if e["type"] in ("translation", "synthesis", "audio"))
    assert res.committed("recognition") == [f"w{i}" for i in range(6)]  # one recogniser
    seqs = [e["seq"] for e in res.events if "seq" in e]
    assert seqs == list(range(1, len(seqs) + 1))
    summary = res.done["summary"]
    assert {t: s["translated_words"] for t, s in summary["targets"].items()} == {"es": 6, "pt": 6, "fr": 6}


def test_listener_hears_its_target_live_and_gets_done_when_the_speaker_ends():
    async def main():
        async with server() as srv:
            ready = asyncio.get_running_loop().create_future()

            def on_event(event):
                if event["type"] == "ready" and not ready.done():
                    ready.set_result(event)

            speaker = asyncio.create_task(stream_audio(srv.url, tone(3.0), 16000, "en", "es", targets=["es", "pt"],
                                                       speed=1.0, on_event=on_event))
            event = await ready
            listeners = [asyncio.create_task(listen(event["listen"]["pt"])) for _ in range(3)]
            await wait_for(lambda: srv.hub.find(event["session"]).listener_count == 3)
            return await speaker, await asyncio.gather(*listeners)

    res, heard = run(main())
    spoken_pt = res.committed("translation", "pt")
    for events, audio, code in heard:
        assert events[0]["type"] == "listening" and events[0]["target"] == "pt"
        assert {e["type"] for e in events[1:-1]} <= {"translation", "synthesis", "audio"}
        assert all(e["target"] == "pt" for e in events[1:-1])
        words = [w for e in events if e["type"] == "translation" for w in e["committed"]]
        assert words and words == spoken_pt[len(spoken_pt) - len(words):]  # live from the moment it joined
        assert len(audio) == sum(1 for e in events if e["type"] == "audio") and all(len(p) == 4410 for _, p in audio)
        assert events[-1] == {"type": "done", "reason": "speaker_ended", "seq": events[-1]["seq"]} and code == 1000


def test_speaker_disconnect_ends_listeners_with_a_done_that_says_so():
    async def main():
        async with server(resume_grace=0.3) as srv:
            async with connect(srv.url) as ws:
                await ws.send(json.dumps({"type": "hello", "source": "en", "targets": ["es", "pt"],
                                          "sample_rate": 16000}))
                ready = json.loads(await ws.recv())
                listener = asyncio.create_task(listen(ready["listen"]["es"]))
                await wait_for(lambda: srv.hub.find(ready["session"]).listener_count == 1)
                for _ in range(12):
                    await ws.send(b"\x01\x00" * 1600)
                await asyncio.sleep(0.2)
            return await listener

    events, _, code = run(main())
    words = [w for e in events if e["type"] == "translation" for w in e["committed"]]
    assert words == [f"W{i}" for i in range(3)]  # 1.2 s heard: w0, w1, and the flushed w2
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "speaker_disconnected" and code == 1000


@pytest.mark.parametrize("query,code", [
    ("session={sid}&target=es&token=wrong", "unauthorized"),
    ("session=nope&target=es&token=tok", "unknown_session"),
    ("session={sid}&target=de&token=tok", "unknown_target"),
    ("target=es&token=tok", "bad_listen"),
    ("session={sid}&target=es&token=tok", "too_many_listeners"),
])
def test_bad_listeners_get_an_error_and_a_close(query, code):
    async def main():
        async with server(token="tok", max_listeners=1) as srv:
            async with connect(srv.url) as ws:
                await ws.send(json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000,
                                          "token": "tok"}))
                ready = json.loads(await ws.recv())
                first = await connect(ready["listen"]["es"] + "&token=tok")  # takes the only place
                base = ready["listen"]["es"].split("?")[0]
                events, _, close = await listen(f"{base}?{query.format(sid=ready['session'])}")
                await first.close()
                await ws.send(json.dumps({"type": "end"}))
                return events, close

    events, close = run(main())
    assert events[-1]["type"] == "error" and events[-1]["code"] == code and events[-1]["message"]
    assert close in (1008, 1013)


class StuckSocket:
    """A peer that never reads: every send waits forever."""

    async def send(self, item):
        await asyncio.Event().wait()

    async def close(self, *args):
        pass


class RecordingSocket:
    def __init__(self):
        self.items = []

    async def send(self, item):
        self.items.append(item)

    async def close(self, *args):
        self.items.append("<close>")


class Hub:
    config = ServerConfig(max_listeners=10)
    metrics = Metrics()


def test_a_listener_that_stops_reading_is_dropped_and_holds_back_no_one():
    async def main():
        live = LiveSession(Hub(), P.Hello("en", "es", 16000), 1, "sid", "tok", EventLog())
        stuck, good = Outbox(StuckSocket(), max_pending=50_000), Outbox(RecordingSocket(), max_pending=50_000)
        speaker = Outbox(RecordingSocket())
        live.speaker = speaker
        live.add_listener("es", stuck)
        live.add_listener("es", good)
        tasks = [asyncio.create_task(box.run()) for box in (stuck, good, speaker)]
        payload = np.zeros(2205, "<i2").tobytes()
        for i in range(40):  # 40 x 4.4 KB: beyond the stuck listener's 50 KB
            live._publish({"type": "audio", "target": "es", "samples": 2205, "bytes": len(payload)}, payload, "es")
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        return live, stuck, good, speaker

    live, stuck, good, speaker = run(main())
    assert stuck.error == "slow_client" and stuck not in live.listeners["es"]
    assert good in live.listeners["es"] and good.error is None
    assert sum(isinstance(x, bytes) for x in good.ws.items) == 40
    assert sum(isinstance(x, bytes) for x in speaker.ws.items) == 40
    assert Hub.metrics.errors["slow_client"] == 1


class ManyListenersHub:
    config = ServerConfig(max_listeners=60)
    metrics = Metrics()


def test_fifty_listeners_share_one_serialised_event_and_never_wait_for_each_other():
    async def main():
        live = LiveSession(ManyListenersHub(), P.Hello("en", "es", 16000), 1, "sid", "tok", EventLog())
        boxes = [Outbox(RecordingSocket()) for _ in range(50)]
        for box in boxes:
            live.add_listener("es", box)
        payload = b"\x00\x01" * 2205
        live._publish({"type": "translation", "target": "es", "committed": ["W0"]}, target="es")
        live._publish({"type": "audio", "target": "es", "samples": 2205, "bytes": len(payload)}, payload, "es")
        # publishing queued everything without a send: each listener's own task sends
        queued = [[box._queue.get_nowait() for _ in range(box._queue.qsize())] for box in boxes]
        return queued

    queued = run(main())
    first = queued[0]
    assert [type(x) for x in first] == [str, str, str, bytes]  # listening, translation, audio + its frame
    for items in queued:
        assert all(a is b for a, b in zip(items[1:], first[1:]))  # the very same objects: encoded once


def test_a_listener_too_far_behind_is_dropped_though_its_backlog_is_small():
    async def main():
        live = LiveSession(Hub(), P.Hello("en", "es", 16000), 1, "sid", "tok", EventLog())
        stuck = Outbox(StuckSocket(), max_pending=10**9, max_delay_s=0.2)
        good = Outbox(RecordingSocket(), max_pending=10**9, max_delay_s=0.2)
        live.add_listener("es", stuck)
        live.add_listener("es", good)
        tasks = [asyncio.create_task(box.run()) for box in (stuck, good)]
        for i in range(3):  # a few hundred bytes: far below any byte bound
            live._publish({"type": "translation", "target": "es", "committed": [f"W{i}"]}, target="es")
            await asyncio.sleep(0.15)  # the stuck listener's second event waits 0.3 s by the third
        for task in tasks:
            task.cancel()
        return live, stuck, good

    live, stuck, good = run(main())
    assert stuck.error == "slow_client" and stuck not in live.listeners["es"]
    assert good.error is None and len([x for x in good.ws.items if '"translation"' in x]) == 3


def raw_listener(url):
    """A listener that completes the websocket handshake and then never reads."""
    import base64
    import os
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((parts.hostname, parts.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    reply = b""
    while not reply.endswith(b"\r\n\r\n"):
        reply += sock.recv(1)
    assert b" 101 " in reply.split(b"\r\n")[0], reply
    return sock


def test_a_stalled_listener_socket_is_dropped_while_the_session_goes_on():
    """A real socket that stops reading: the server's small send buffer for listeners makes its
    backlog show in the outbox within seconds (the kernel would otherwise take megabytes of it)."""
    async def main():
        async with server(listener_max_delay_s=0.5, listener_max_pending=10**9) as srv:
            ready = asyncio.get_running_loop().create_future()

            def on_event(event):
                if event["type"] == "ready" and not ready.done():
                    ready.set_result(event)

            speaker = asyncio.create_task(stream_audio(srv.url, tone(30.0), 16000, "en", "es", speed=6.0,
                                                       on_event=on_event))
            url = (await ready)["listen"]["es"]
            stuck = await asyncio.to_thread(raw_listener, url)
            good = asyncio.create_task(listen(url))
            await wait_for(lambda: srv.hub.find((ready.result())["session"]).listener_count == 2)
            res, heard = await speaker, await good
            stuck.close()
            return res, heard, srv.metrics.errors["slow_client"]

    res, (events, audio, code), drops = run(main())
    assert drops == 1
    assert res.done is not None and res.error is None
    spoken = res.committed("translation", "es")
    words = [w for e in events if e["type"] == "translation" for w in e["committed"]]
    assert len(spoken) == 60 and words == spoken[len(spoken) - len(words):] and len(words) >= 30
    assert events[-1]["type"] == "done" and code == 1000


def test_default_recogniser_is_multilingual_and_english_may_choose_speed():
    from speech.pipeline import PipelineConfig
    from speech.server.pipelines import RealPipeline

    base = PipelineConfig(asr_model="whisper-base")
    plain, fast = RealPipeline(None, base), RealPipeline(None, base, english_asr_model="whisper-tiny.en")
    assert plain.config_for(P.Hello("es", "en", 16000)).asr_model == "whisper-base"
    assert plain.config_for(P.Hello("en", "es", 16000)).asr_model == "whisper-base"
    assert fast.config_for(P.Hello("en", "es", 16000)).asr_model == "whisper-tiny.en"
    assert fast.config_for(P.Hello("de", "es", 16000)).asr_model == "whisper-base"
    config = fast.config_for(P.Hello("en", "es", 16000, targets=("es", "pt"), output_codec="opus"))
    assert config.all_targets == ("es", "pt") and config.stages[-1] == "codec"
    from speech.server.cli import configure
    import argparse

    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args([])
    assert args.asr_model == "whisper-base" and not args.fast_english and args.resume_grace == 30.0
