"""An Apertium pipeline killed mid-sentence, through the server: two speaker sessions translate with
Debian's real Apertium (the recogniser is a fake that "hears" a fixed sentence, one word per 0.5 s
of audio; synthesis is a fake tone), and the test kills the pipeline's processes.

Sessions on the same pair share one pipeline (the registry keeps one per mode; requests are
serialised by its lock), so a kill lands on whichever request is in flight and the next request
restarts the pipeline: every session on that pair goes on. A pipeline that dies again on the
restarted request ends the session that asked, with a named error; a session on another pair has a
pipeline of its own and never notices.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import urllib.request
from pathlib import Path

import numpy as np
import psutil
import pytest

from speech.backends import default_registry
from speech.server.client import stream_audio
from speech.server.server import ServerConfig, SpeechServer
from speech.session import Session
from speech.translate.apertium import ApertiumProcess, discover_modes
from speech.translate.stage import TranslateStage, open_translation

from ..unit.test_server_fakes import FakeAsr, FakeTts
from .test_mt_apertium import need

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

SENTENCES = {
    "en": tuple("The black cat is sleeping in the old house and the dog runs in the park".split()),
    "es": tuple("El perro negro duerme en la casa vieja y el gato corre en el parque".split()),
}
SECONDS = 8.0  # 16 words, one per 0.5 s


def apertium_pipeline(registry):  # noqa: ANN001, ANN201
    """Fake recogniser (the hello's source sentence) -> the real Apertium translate stage -> fake TTS."""

    def factory(hello, source, sink, clock, log) -> Session:  # noqa: ANN001
        asr = FakeAsr(log, clock, words=SENTENCES[hello.source])
        translation = open_translation(registry, hello.source, hello.target, "apertium")
        mt = TranslateStage(translation, clock.stage("mt"), log)
        return Session([asr, mt, FakeTts(log, clock)], source, sink[hello.target], clock=clock, log=log)

    return factory


def tone(seconds: float = SECONDS, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def log_of(log_dir: Path, result) -> list[dict]:  # noqa: ANN001
    """The session log of a client's session (found by its session id)."""
    for path in sorted(log_dir.glob("session-*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if any(r.get("kind") == "session" and r.get("id") == result.session for r in records):
            return records
    raise AssertionError(f"no log for session {result.session} in {log_dir}")


def logged_words(records: list[dict], stage: str) -> list[str]:
    return [w["text"] for r in records if r.get("kind") == "update" and r.get("stage") == stage for w in r["committed"]]


def healthz(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
        return r.status


def programs(proc: ApertiumProcess) -> list[psutil.Process]:
    """The pipeline's processes: bash and every program of the mode."""
    pid = proc.pid
    if pid is None:
        return []
    try:
        bash = psutil.Process(pid)
        return [bash, *bash.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def run(log_dir: Path, faulty: tuple[str, str], healthy: tuple[str, str], fault):  # noqa: ANN001, ANN201
    """References first (one session each, no fault), then the faulty and healthy sessions side by
    side while `fault(proc, first_words)` runs; then one more faulty-pair session."""
    registry = default_registry()
    config = ServerConfig(port=0, max_sessions=4, log_dir=log_dir, resume_grace=0)
    async with SpeechServer(config, apertium_pipeline(registry)) as srv:
        refs = {pair: await stream_audio(srv.url, tone(), 16000, *pair, speed=0, timeout=60) for pair in {faulty, healthy}}
        proc = registry.create("translator", "apertium").process(*faulty)  # the sessions' (shared) pipeline
        words = asyncio.Event()

        def on_event(e: dict) -> None:
            if e["type"] == "translation" and e["committed"]:
                words.set()  # the sentence is under way: some words are committed

        attack = asyncio.create_task(fault(proc, words))
        try:
            results = await asyncio.gather(
                stream_audio(srv.url, tone(), 16000, *faulty, speed=2.0, on_event=on_event, timeout=60, resume=False),
                stream_audio(srv.url, tone(), 16000, *healthy, speed=2.0, timeout=60, resume=False))
        finally:
            attack.cancel()
        killed = await asyncio.gather(attack, return_exceptions=True)
        status = await asyncio.to_thread(healthz, srv.port)
        again = await stream_audio(srv.url, tone(), 16000, *faulty, speed=0, timeout=60)
        await asyncio.sleep(0.05)
        return refs, results, again, status, srv.metrics, proc, killed


def check_complete(result, ref, log_dir: Path) -> None:  # noqa: ANN001
    """Done, nothing lost: the committed words equal the reference's, and the log holds them."""
    assert result.error is None and result.done is not None, result.events[-3:]
    assert result.committed("translation") == ref.committed("translation")
    records = log_of(log_dir, result)
    assert logged_words(records, "mt") == result.committed("translation")
    assert logged_words(records, "asr") == result.committed("recognition") == ref.committed("recognition")
    assert records[-1]["kind"] == "end" and records[-1]["reason"] == "end"


def test_a_pipeline_killed_once_is_restarted_and_every_session_completes(tmp_path):
    """Both sessions on en->es (one shared pipeline); one program of it is killed mid-sentence."""
    need("en", "es")

    async def kill_one_program(proc: ApertiumProcess, words: asyncio.Event) -> list[int]:
        await words.wait()
        group = programs(proc)
        assert len(group) > 2, group
        victim = group[len(group) // 2]  # a program in the middle, as an out-of-memory killer would
        kill([victim.pid])
        return [p.pid for p in group]

    refs, (faulty, healthy), again, status, metrics, proc, (killed,) = asyncio.run(asyncio.wait_for(
        run(tmp_path, ("en", "es"), ("en", "es"), kill_one_program), 120))
    assert isinstance(killed, list), killed  # the kill happened
    ref = refs[("en", "es")]
    assert {"gato", "casa", "parque"} <= set(" ".join(ref.committed("translation")).lower().split()), ref.text("translation")
    # the kill came before the end of the sentence: words were committed after it
    check_complete(faulty, ref, tmp_path)
    check_complete(healthy, ref, tmp_path)
    assert proc.restarts == 1
    assert not [p for p in killed if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    check_complete(again, ref, tmp_path)
    assert status == 200 and metrics.sessions_active == 0 and metrics.errors.get("internal", 0) == 0


def test_a_pipeline_killed_again_after_its_restart_ends_only_its_session(tmp_path):
    """Faulty es->pt (its own pipeline) beside healthy en->es; every es->pt pipeline is killed as it starts."""
    need("en", "es")
    need("es", "pt")
    mode = discover_modes()[("es", "pt")]

    async def kill_every_pipeline(proc: ApertiumProcess, words: asyncio.Event) -> list[int]:
        await words.wait()
        killed: list[int] = []
        while True:  # until the session is over (cancelled): each fresh pipeline dies at once
            group = [p.pid for p in programs(proc) if p.pid not in killed]
            kill(group)
            killed += group
            await asyncio.sleep(0.002)

    refs, (faulty, healthy), again, status, metrics, proc, _ = asyncio.run(asyncio.wait_for(
        run(tmp_path, ("es", "pt"), ("en", "es"), kill_every_pipeline), 120))
    err = faulty.error
    assert err is not None and err["code"] == "pipeline_error" and err.get("stage") == "mt", faulty.events[-3:]
    assert "apertium pipeline" in err["message"] and "failed" in err["message"], err
    assert mode in err["message"] or "es-pt" in err["message"], err
    assert faulty.done is None and faulty.close_code == 1011
    # what it committed before the fault reached its log, and its log says how it ended
    records = log_of(tmp_path, faulty)
    assert logged_words(records, "mt") == faulty.committed("translation")
    assert faulty.committed("translation") == refs[("es", "pt")].committed("translation")[: len(faulty.committed("translation"))]
    assert records[-1]["kind"] == "end" and records[-1]["reason"] == "error"
    # the other session never noticed; the server is healthy; the pair works again
    check_complete(healthy, refs[("en", "es")], tmp_path)
    assert status == 200 and metrics.sessions_active == 0 and metrics.errors.get("internal", 0) == 0
    check_complete(again, refs[("es", "pt")], tmp_path)
    assert {"cão", "casa", "parque"} <= set(again.text("translation").lower().split()), again.text("translation")
