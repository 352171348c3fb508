"""The server against the fake pipeline: protocol, events, hardening, shutdown."""

import asyncio
import json
import os
import urllib.error
import urllib.request

import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from speech.server import protocol as P
from speech.server.client import stream_audio
from speech.server.server import ServerConfig, SpeechServer
from speech.stats import percentile

from .test_server_fakes import fake_pipeline

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def run(coro, timeout=30):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def tone(seconds, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def server(**over):
    cfg = ServerConfig(port=0, **over)
    return SpeechServer(cfg, fake_pipeline)


async def wait_for(predicate, timeout=5.0):
    t = 0.0
    while not predicate():
        await asyncio.sleep(0.02)
        t += 0.02
        assert t < timeout, "condition not reached"


def test_stream_delivers_text_audio_and_done_last():
    async def main():
        async with server() as srv:
            return await stream_audio(srv.url, tone(3.0, 48000), 48000, "en", "es", speed=0), srv.metrics

    res, metrics = run(main())
    types = [e["type"] for e in res.events]
    assert types[0] == "ready" and types[-1] == "done"
    assert res.committed("recognition") == [f"w{i}" for i in range(6)]
    assert res.committed("translation") == [f"W{i}" for i in range(6)]
    assert [m["samples"] for m, _ in res.audio] == [2205] * 6
    pcm, rate = res.pcm()
    assert rate == 22050 and len(pcm) == 6 * 2205 and np.abs(pcm).max() > 0.2
    synthesis = [e for e in res.events if e["type"] == "synthesis"]
    assert len(synthesis) == 6
    # the listener hears one chunk after another, each word after its source arrived
    plays = [e["play_start"] for e in synthesis]
    assert all(b >= a + 0.1 - 0.01 for a, b in zip(plays, plays[1:])), plays
    word_lags = [x for e in synthesis for x in e["word_lags"]]
    assert len(word_lags) == 6 and all(e["lag"] == e["word_lags"][0] for e in synthesis)
    # each word is heard where its chunk starts (one word a chunk here), after it was said
    assert [t for e in synthesis for t in e["word_heard"]] == pytest.approx(plays, abs=2e-4)
    assert all(lag > 0 for lag in word_lags)
    summary = res.done["summary"]
    assert summary["synthesis_lag_p90"] == pytest.approx(percentile(word_lags, 90), abs=2e-4)
    assert summary["recognized_words"] == 6 and summary["translated_words"] == 6
    assert abs(summary["audio_in_s"] - 3.0) < 0.01
    # The summary's lag is the percentile of the lags the translation events carried.
    lags = [e["lag"] for e in res.events if e["type"] == "translation" and e.get("committed") and e.get("lag") is not None]
    assert len(lags) >= 5 and summary["lag_p90"] == pytest.approx(percentile(lags, 90), abs=2e-4), lags
    assert res.close_code == 1000
    assert metrics.sessions_active == 0 and metrics.sessions_completed == 1


def speak_tone_to(target: str):
    """3 s of tone through the fake server into `target` (fake words W0-W5); the result and the
    server's /metrics after it."""
    async def main():
        async with server() as srv:
            res = await stream_audio(srv.url, tone(3.0, 48000), 48000, "en", target, speed=0)
            return res, srv.metrics.to_json()

    return run(main())


def test_words_the_voice_leaves_unspoken_reach_the_client_and_the_summary():
    res, metrics = speak_tone_to("es-unspoken")
    unspoken = [e for e in res.events if e["type"] == "unspoken"]
    assert [e["text"] for e in unspoken] == ["W1", "W3", "W5"] and all(e["lag"] == 16.0 for e in unspoken)
    assert res.committed("translation") == [f"W{i}" for i in range(6)]  # the text keeps every word
    assert len([e for e in res.events if e["type"] == "synthesis"]) == 3
    assert res.done["summary"]["targets"]["es-unspoken"]["words_unspoken"] == 3
    assert metrics["words_voice_behind"] == {"relief": 0, "unspoken": 3}


def test_words_the_relief_voice_speaks_are_marked_for_the_client_and_counted_in_the_summary():
    res, metrics = speak_tone_to("es-relief")
    synthesis = [e for e in res.events if e["type"] == "synthesis"]
    assert [e["text"] for e in synthesis if e.get("voice") == "relief"] == ["W1", "W3", "W5"]
    assert len(synthesis) == 6 and not [e for e in res.events if e["type"] == "unspoken"]
    target = res.done["summary"]["targets"]["es-relief"]
    assert target["words_relief"] == 3 and target["words_unspoken"] == 0 and target["voice_rtf"] == 2.5
    assert target["relief_voice"] == "espeak"  # which voice spoke them, by its --voice value
    assert metrics["words_voice_behind"] == {"relief": 3, "unspoken": 0}


def test_end_mid_word_delivers_every_committed_word_before_done():
    async def main():
        async with server() as srv:
            # 1.3 s: w0, w1 complete, w2 cut mid-word; paced in real time like a live client
            return await stream_audio(srv.url, tone(5.0), 16000, "en", "es", speed=1.0, stop_after_s=1.3)

    res = run(main())
    assert res.committed("recognition") == ["w0", "w1", "w2"]
    assert res.committed("translation") == ["W0", "W1", "W2"]
    assert len(res.audio) == 3
    done_at = [e["type"] for e in res.events].index("done")
    assert done_at == len(res.events) - 1
    assert res.done["summary"]["ended_by_client"] is True


def test_a_stop_sends_end_at_once_and_the_server_finishes_what_it_heard():
    async def main():
        async with server() as srv:
            stop = asyncio.Event()  # what Ctrl-C sets in `speech stream`
            asyncio.get_running_loop().call_later(1.35, stop.set)
            return await stream_audio(srv.url, tone(5.0), 16000, "en", "es", speed=1.0, stop=stop)

    res = run(main())
    assert res.stopped and 1.2 <= res.sent_s <= 1.6, res.sent_s  # not the whole 5 s
    assert res.committed("recognition")[:2] == ["w0", "w1"] and len(res.committed("recognition")) <= 3
    assert res.committed("translation") == [w.upper() for w in res.committed("recognition")]
    assert [e["type"] for e in res.events][-1] == "done" and res.done["summary"]["ended_by_client"] is True


def test_opus_input_is_accepted():
    pytest.importorskip("opuslib")

    async def main():
        async with server() as srv:
            return await stream_audio(srv.url, tone(2.0), 16000, "en", "es", codec="opus", speed=0)

    res = run(main())
    assert res.committed("recognition")[:3] == ["w0", "w1", "w2"]
    assert res.done is not None


async def hostile(url, messages, headers=None):
    """Send raw messages; return (events, close code)."""
    events = []
    async with connect(url, additional_headers=headers) as ws:
        try:
            for m in messages:
                await ws.send(m)
            async for msg in ws:
                if isinstance(msg, str):
                    events.append(json.loads(msg))
        except Exception:  # noqa: BLE001 - the server may close while we still send
            pass
        await ws.wait_closed()
        return events, ws.close_code


HELLO = json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000})


@pytest.mark.parametrize("messages,code,close", [
    ([b"\x00" * 640], "hello_expected", 1008),
    (["{oops"], "bad_json", 1003),
    (['{"type": "hello", "source": "en", "target": "es", "sample_rate": 1}'], "bad_sample_rate", 1008),
    (['{"type": "hello", "source": "en", "target": "es", "sample_rate": 16000, "codec": "wma"}'], "unknown_codec", 1003),
    ([HELLO, '{"type": "pause"}'], "bad_message", 1008),
    ([HELLO, HELLO], "duplicate_hello", 1008),
    ([HELLO, b"\0" * (P.MAX_AUDIO_FRAME_BYTES + 2)], "frame_too_big", 1008),
    ([HELLO, '"just a string"'], "bad_message", 1008),
])
def test_hostile_input_gets_an_error_and_a_closed_connection(messages, code, close):
    async def main():
        async with server() as srv:
            events, close_code = await hostile(srv.url, messages)
            await wait_for(lambda: srv.metrics.sessions_active == 0 and not srv.connections)
            return events, close_code

    events, close_code = run(main())
    errors = [e for e in events if e["type"] == "error"]
    assert errors and errors[0]["code"] == code and errors[0]["message"]
    assert close_code == close


def test_token_is_required():
    async def main():
        async with server(token="s3cret") as srv:
            bad = await stream_audio(srv.url, tone(1), 16000, "en", "es", speed=0, token="wrong")
            good = await stream_audio(srv.url, tone(1), 16000, "en", "es", speed=0, token="s3cret")
            return bad, good, srv.metrics.sessions_total

    bad, good, total = run(main())
    assert bad.error["code"] == "unauthorized" and bad.close_code == 1008
    assert not bad.committed("recognition")
    assert good.done is not None
    assert total == 1  # the refused client never got a session


def test_busy_server_refuses_clearly_and_recovers():
    async def main():
        async with server(max_sessions=1) as srv:
            first = asyncio.create_task(stream_audio(srv.url, tone(1.5), 16000, "en", "es", speed=1.0))
            await wait_for(lambda: srv.metrics.sessions_active == 1)
            second = await stream_audio(srv.url, tone(1), 16000, "en", "es", speed=0)
            first = await first
            third = await stream_audio(srv.url, tone(1), 16000, "en", "es", speed=0)
            return first, second, third

    first, second, third = run(main())
    assert second.error["code"] == "busy" and second.close_code == 1013
    assert first.done is not None and third.done is not None


def test_foreign_origin_is_refused_same_origin_allowed():
    async def main():
        async with server() as srv:
            with pytest.raises(InvalidStatus) as info:
                await stream_audio(srv.url, tone(0.5), 16000, "en", "es", origin="http://evil.example")
            same = await stream_audio(srv.url, tone(0.5), 16000, "en", "es", speed=0,
                                      origin=f"http://127.0.0.1:{srv.port}")
            return info.value.response.status_code, same, srv.metrics.rejected["origin"]

    status, same, rejected = run(main())
    assert status == 403 and rejected == 1
    assert same.done is not None


def test_failing_backend_ends_only_its_session():
    async def main():
        async with server(max_sessions=2) as srv:
            ok, boom = await asyncio.gather(
                stream_audio(srv.url, tone(2.0), 16000, "en", "es", speed=1.0),
                stream_audio(srv.url, tone(2.0), 16000, "en", "es-boom", speed=1.0),
            )
            await wait_for(lambda: srv.metrics.sessions_active == 0)
            after = await stream_audio(srv.url, tone(0.5), 16000, "en", "es", speed=0)
            return ok, boom, after, srv.metrics.errors["pipeline_error"]

    ok, boom, after, errors = run(main())
    assert boom.error["code"] == "pipeline_error" and boom.error["stage"] == "asr"
    assert "exploded" in boom.error["message"] and boom.close_code == 1011
    assert ok.done is not None and len(ok.committed("recognition")) == 4
    assert after.done is not None and errors == 1


def test_disconnect_mid_stream_frees_the_session():
    async def main():
        async with server(resume_grace=0.2) as srv:
            async with connect(srv.url) as ws:
                await ws.send(HELLO)
                for _ in range(5):
                    await ws.send(b"\x01\x00" * 1600)
                await wait_for(lambda: srv.metrics.sessions_active == 1)
            # closed without `end`: the grace period runs out, then the pipeline flushes (slow under load)
            await wait_for(lambda: srv.metrics.sessions_active == 0 and not srv.connections, timeout=20.0)
            return srv.metrics.errors["disconnected"]

    assert run(main()) == 1


def test_idle_client_is_timed_out():
    async def main():
        async with server(idle_timeout=0.3, hello_timeout=0.3) as srv:
            idle = await hostile(srv.url, [HELLO])
            silent = await hostile(srv.url, [])
            return idle, silent

    (idle, code1), (silent, code2) = run(main())
    assert idle[-1]["code"] == "idle_timeout" and silent[-1]["code"] == "hello_timeout"


def test_shutdown_flushes_open_sessions():
    async def main():
        srv = server()
        await srv.start()
        client = asyncio.create_task(stream_audio(srv.url, tone(10.0), 16000, "en", "es", speed=1.0))
        await asyncio.sleep(1.4)
        await srv.shutdown()
        return await client

    res = run(main())
    # about 1.4 s was streamed before the shutdown: w0, w1 committed, w2 flushed
    assert res.committed("recognition")[:2] == ["w0", "w1"] and len(res.committed("recognition")) >= 3
    assert res.done is not None and res.events[-1]["type"] == "done"


def test_http_routes():
    async def main():
        async with server(token="tok") as srv:
            base = f"http://127.0.0.1:{srv.port}"

            def get(path):
                try:
                    with urllib.request.urlopen(base + path, timeout=5) as r:
                        return r.status, r.headers.get("Content-Type"), r.read()
                except urllib.error.HTTPError as e:
                    return e.code, e.headers.get("Content-Type"), e.read()

            await stream_audio(srv.url, tone(1.0), 16000, "en", "es", speed=0, token="tok")
            return [await asyncio.to_thread(get, p) for p in
                    ("/healthz", "/metrics", "/metrics?token=tok", "/", "/../../etc/passwd", "/nope.js",
                     "/languages")]

    health, metrics_noauth, metrics, page, traversal, missing, languages = run(main())
    assert health[0] == 200 and json.loads(health[2])["status"] == "ok"
    assert metrics_noauth[0] == 401
    m = json.loads(metrics[2])
    assert m["sessions"]["completed"] == 1 and m["sessions"]["active"] == 0
    assert m["lag_s"]["count"] > 0 and m["rss_bytes"] > 0
    assert page[0] == 200 and page[1].startswith("text/html") and b"<html" in page[2].lower()
    assert traversal[0] == 404 and missing[0] == 404
    # a pipeline that does not say which languages it serves: the whole language table
    served = json.loads(languages[2])
    assert languages[0] == 200 and [x["code"] for x in served["sources"]][:3] == ["en", "es", "pt"]
    assert "en" not in served["pairs"]["en"] and "es" in served["pairs"]["en"]


def test_unavailable_pair_is_a_clear_error():
    def refusing(hello, source, sink, clock, log):
        raise ValueError(f"recognizer 'whisper-tiny.en' is English-only; it cannot take --language {hello.source}")

    async def main():
        async with SpeechServer(ServerConfig(port=0), refusing) as srv:
            res = await stream_audio(srv.url, tone(0.5), 16000, "de", "es", speed=0)
            return res, srv.metrics.sessions_active

    res, active = run(main())
    assert res.error["code"] == "unavailable" and "English-only" in res.error["message"]
    assert res.close_code == 1011 and active == 0


def test_cli_extra_options_parse():
    from speech.errors import UserError
    from speech.server.cli import parse_extra

    assert parse_extra(["asr_update_s=1.0", 'mt_options={"threads": 1}', "mode=fast"]) == {
        "asr_update_s": 1.0, "mt_options": {"threads": 1}, "mode": "fast"}
    with pytest.raises(UserError):
        parse_extra(["novalue"])


def test_lag_counts_the_time_a_busy_model_takes():
    # Every recognition update costs 50 ms in a worker thread: no committed word can reach the
    # client sooner than that after the audio that completed it arrived.
    async def main():
        async with server() as srv:
            return await stream_audio(srv.url, tone(2.0), 16000, "en", "es-slow", speed=0)

    res = run(main())
    summary = res.done["summary"]
    lags = [e["lag"] for e in res.events if e["type"] == "recognition" and e.get("committed")]
    assert lags and min(lags) >= 0.045, lags
    assert summary["recognition_lag_p50"] >= 0.045
