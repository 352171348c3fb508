"""Nothing committed is lost when a connection drops, and a speaker who comes back resumes its
session: random disconnects against the fake pipeline, with and without resume."""

import asyncio
import json
import random

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from speech.events import read_events
from speech.server.client import stream_audio
from speech.server.server import ServerConfig, SpeechServer

from .test_server_fakes import fake_pipeline
from .test_server_session import run, tone, wait_for


def logs_by_session(log_dir):
    out = {}
    for path in sorted(log_dir.glob("session-*.jsonl")):
        records = read_events(path)
        sid = next(r["id"] for r in records if r["kind"] == "session")
        out[sid] = records
    return out


def committed(records, stage):
    return [w["text"] for r in records if r["kind"] == "update" and r["stage"] == stage for w in r["committed"]]


def assert_nothing_lost(records):
    """Every word the recogniser committed was translated and spoken, and the session ended."""
    heard = committed(records, "asr")
    assert heard == [f"w{i}" for i in range(len(heard))]
    assert committed(records, "mt") == [w.upper() for w in heard]
    assert [r["text"] for r in records if r["kind"] == "audio"] == [w.upper() for w in heard]
    assert records[-1]["kind"] == "end"
    return heard


def cutter(rng, cuts, window_s):
    """Cuts the first `cuts` connections (the network, not a close) at random moments."""
    state = {"n": 0}

    def on_connection(ws):
        if state["n"] < cuts:
            state["n"] += 1
            asyncio.get_running_loop().call_later(rng.uniform(0.02, window_s), ws.transport.abort)
    return on_connection


def test_resume_after_a_dropped_connection_misses_no_event(tmp_path):
    async def main():
        async with SpeechServer(ServerConfig(port=0, log_dir=tmp_path), fake_pipeline) as srv:
            res = await stream_audio(srv.url, tone(3.0), 16000, "en", "es", targets=["es", "pt"], speed=2.0,
                                     on_connection=cutter(random.Random(1), 1, 0.8))
            await wait_for(lambda: not srv.hub.sessions)
            return res

    res = run(main())
    assert res.resumes == 1 and res.done is not None
    seqs = [e["seq"] for e in res.events if "seq" in e]
    assert seqs == list(range(1, len(seqs) + 1))  # every event once, in order
    records = logs_by_session(tmp_path)[res.session]
    heard = assert_nothing_lost([r for r in records if r.get("target") in (None, "es")])
    assert heard == [f"w{i}" for i in range(6)]  # the audio resumed where the server had it
    assert res.committed("recognition") == heard
    assert res.committed("translation", "pt") == [w.upper() for w in heard]
    assert sum(1 for m, _ in res.audio if m["target"] == "es") == 6
    assert any(r["kind"] == "transport" and r["event"] == "resumed" for r in records)


def test_100_random_disconnects_with_resume(tmp_path):
    """50 sessions, each cut up to 3 times at random moments (at least 100 drops in all): every
    event arrives exactly once; nothing committed is lost."""
    rng = random.Random(7)

    async def one(url, cuts):
        return await stream_audio(url, tone(1.5), 16000, "en", "es", speed=2.0,
                                  on_connection=cutter(rng, cuts, 0.4))

    async def main():
        async with SpeechServer(ServerConfig(port=0, log_dir=tmp_path, max_sessions=50, resume_grace=10), fake_pipeline) as srv:
            results = []
            for batch in range(5):
                results += await asyncio.gather(*(one(srv.url, 3) for _ in range(10)))
            await wait_for(lambda: srv.metrics.sessions_active == 0, 10)
            return results

    results = run(main(), timeout=120)
    logs = logs_by_session(tmp_path)
    assert len(logs) >= 50  # more where a cut came before `ready` (the client then opens a new one)
    drops = 0
    for res in results:
        assert res.done is not None and res.error is None
        drops += res.drops
        seqs = [e["seq"] for e in res.events if "seq" in e]
        assert seqs == list(range(1, len(seqs) + 1))
        heard = assert_nothing_lost(logs[res.session])
        assert heard == [f"w{i}" for i in range(3)]
        assert res.committed("recognition") == heard and res.committed("translation") == [w.upper() for w in heard]
        assert len(res.audio) == 3
    assert drops >= 100  # a cut that came after done is not a drop


def test_100_random_disconnects_without_resume_lose_no_committed_word(tmp_path):
    """A speaker that never comes back: its session flushes every committed word into the log."""
    rng = random.Random(11)

    async def one(url):
        # the cut falls within the first 0.4 s of a stream that takes at least 0.5 s, so nearly every
        # cut lands before `done` (a cut after it is no drop)
        return await stream_audio(url, tone(2.0), 16000, "en", "es", speed=4.0, resume=False,
                                  on_connection=cutter(rng, 1, 0.4))

    async def main():
        async with SpeechServer(ServerConfig(port=0, log_dir=tmp_path, max_sessions=20, resume_grace=0),
                                fake_pipeline) as srv:
            results = []
            for batch in range(5):
                results += await asyncio.gather(*(one(srv.url) for _ in range(20)))
                await wait_for(lambda: srv.metrics.sessions_active == 0, 10)  # cut sessions still flush
            await wait_for(lambda: not srv.hub.sessions and srv.metrics.sessions_active == 0, 10)
            return results

    results = run(main(), timeout=120)
    logs = logs_by_session(tmp_path)
    cut = 0
    reasons = []
    for res in results:
        if res.session is None:  # cut before `ready`: no session to speak of
            assert res.drops == 1
            cut += 1
            continue
        records = logs[res.session]
        heard = assert_nothing_lost(records)
        # what the client got before the cut is a prefix of what was committed
        got = res.committed("recognition")
        assert got == heard[: len(got)]
        cut += res.drops
        assert (res.done is None) == (res.drops == 1)
        if res.done is None:  # cut before `end` was sent, or after it (then its own end flushed it)
            reasons.append(records[-1]["reason"])
    # a cut may also fall after `end` was sent (then the session ends as "end"): timing decides how often
    assert cut >= 80 and set(reasons) <= {"disconnected", "end"} and reasons.count("disconnected") >= 30


def test_resume_with_a_wrong_token_or_an_unknown_session_is_refused():
    async def main():
        async with SpeechServer(ServerConfig(port=0), fake_pipeline) as srv:
            hello = {"type": "hello", "source": "en", "target": "es", "sample_rate": 16000}
            async with connect(srv.url) as ws:
                await ws.send(json.dumps(hello))
                ready = json.loads(await ws.recv())
                answers = []
                for resume in ({"session": ready["session"], "token": "forged", "last_seq": 0},
                               {"session": "nope", "token": ready["resume_token"], "last_seq": 0},
                               {"session": ready["session"], "token": ready["resume_token"], "last_seq": 999}):
                    async with connect(srv.url) as other:
                        await other.send(json.dumps({**hello, "resume": resume}))
                        answers.append(json.loads(await other.recv())["code"])
                await ws.send(json.dumps({"type": "end"}))
                return answers

    assert run(main()) == ["unauthorized", "unknown_session", "bad_resume"]


def test_a_refused_speaker_still_has_every_committed_word_flushed_into_the_log(tmp_path):
    """idle_timeout refuses the speaker; the words in the links still reach the log (and `end`)."""
    async def main():
        async with SpeechServer(ServerConfig(port=0, log_dir=tmp_path, idle_timeout=0.5), fake_pipeline) as srv:
            async with connect(srv.url) as ws:
                await ws.send(json.dumps({"type": "hello", "source": "en", "targets": ["es", "pt"],
                                          "sample_rate": 16000}))
                for _ in range(12):  # 1.2 s, then silence on the wire
                    await ws.send(b"\x01\x00" * 1600)
                events = []
                try:
                    async for m in ws:
                        if isinstance(m, str):
                            events.append(json.loads(m))
                except ConnectionClosed:
                    pass
            await wait_for(lambda: srv.metrics.sessions_active == 0)
            return events

    events = run(main())
    assert events[-1]["type"] == "error" and events[-1]["code"] == "idle_timeout"
    (records,) = logs_by_session(tmp_path).values()
    for target in ("es", "pt"):
        branch = [r for r in records if r.get("target") in (None, target)]
        assert assert_nothing_lost(branch) == ["w0", "w1", "w2"]
    assert records[-1]["kind"] == "end" and records[-1]["reason"] == "idle_timeout"
