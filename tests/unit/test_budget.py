"""The thread and session budget: the plan, its use by the engine factories, and /healthz."""

import asyncio
import json
import urllib.error
import urllib.request

import numpy as np
import pytest
from websockets.asyncio.client import connect

from speech.budget import ThreadBudget, default_max_sessions
from speech.registry import BackendSpec, Registry
from speech.server import protocol as P
from speech.server.server import ServerConfig, SpeechServer

from .test_server_fakes import fake_pipeline


def total_compute_threads(b: ThreadBudget) -> int:
    """Threads that can compute at once with every session live (each session's branches decode
    llama tokens while Whisper workers run; onnx/vad/engines are short calls on top)."""
    return b.threads("whisper") * b.threads("whisper_workers") + b.threads("llama") * b.sessions * b.branches


@pytest.mark.parametrize("cores,sessions,branches", [(2, 1, 1), (2, 2, 1), (2, 3, 1), (8, 2, 3), (16, 4, 1), (1, 1, 1)])
def test_plan_never_gives_an_engine_more_than_its_share(cores, sessions, branches):
    b = ThreadBudget(cores, sessions, branches)
    workers = b.threads("whisper_workers")
    assert 1 <= workers <= sessions and workers <= max(1, cores // 4)
    # Whisper's parallel decodes together use at most the cores, and all of them.
    assert cores - workers < b.threads("whisper") * workers <= cores
    # llama contexts of every live branch together use at most the cores (at least one each).
    assert b.threads("llama") * sessions * branches <= max(cores, sessions * branches)
    assert b.threads("onnx") == b.threads("vad") == 1
    # Kokoro: two threads at most, and only where every live branch has the cores for them
    assert 1 <= b.threads("kokoro") <= 2 and (b.threads("kokoro") == 1 or cores >= 2 * sessions * branches)


def test_plan_on_two_cores():
    one, two = ThreadBudget(2, 1), ThreadBudget(2, 2)
    # One session keeps the engines' former 2-core defaults; two queue for one Whisper worker
    # and split llama.cpp's threads.
    assert (one.threads("whisper"), one.threads("whisper_workers"), one.threads("llama")) == (2, 1, 2)
    assert (two.threads("whisper"), two.threads("whisper_workers"), two.threads("llama")) == (2, 1, 1)
    assert (one.threads("kokoro"), two.threads("kokoro")) == (2, 1)
    assert total_compute_threads(two) == 4 and total_compute_threads(one) == 4
    big = ThreadBudget(16, 8)
    assert (big.threads("whisper_workers"), big.threads("whisper"), big.threads("llama")) == (4, 4, 2)


def test_explicit_option_wins_and_bad_input_is_named():
    b = ThreadBudget(4, 2)
    assert b.resolve("llama", None) == 2 and b.resolve("llama", 3) == 3
    with pytest.raises(ValueError, match="sessions"):
        ThreadBudget(2, 0)
    with pytest.raises(ValueError, match="engines"):
        b.threads("gpu")
    assert json.loads(json.dumps(b.to_json()))["threads"]["whisper"] == 4


def test_default_max_sessions_follows_the_cores():
    assert default_max_sessions(2) == 2 and default_max_sessions(1) == 1 and default_max_sessions(8) == 8


def test_factories_take_threads_from_the_registry_budget(monkeypatch):
    """The engines' factories ask the registry's budget when their config leaves threads unset."""
    from speech.asr import whisper
    from speech.models import whisper as whisper_models
    from speech.translate import llm
    from speech.tts import piper_voice

    seen = {}
    monkeypatch.setattr(whisper_models, "load", lambda ref, threads, *a, **kw: seen.setdefault("whisper", (threads, kw["num_workers"])))
    registry = Registry(budget=ThreadBudget(8, 2))
    whisper.load_model(registry, whisper.WhisperConfig(model="tiny.en"))
    whisper.load_model(registry, whisper.WhisperConfig(model="base", cpu_threads=3, workers=1))
    assert seen["whisper"] == (4, 2)
    assert registry.threads("whisper", 3) == 3

    monkeypatch.setattr(piper_voice, "load_voice", lambda model, threads, seed=0: seen.setdefault("piper", threads))
    monkeypatch.setattr(piper_voice, "PiperSynthesizer", lambda config, voice: voice)
    piper_voice.create(piper_voice.PiperConfig(), registry)
    assert seen["piper"] == 1

    class Options:
        pass

    monkeypatch.setattr(llm, "LlamaModel", lambda path, options: seen.setdefault("llama", options.threads))
    monkeypatch.setattr(llm, "LlmTranslator", lambda config, model: model)
    monkeypatch.setattr(llm, "model_file", lambda path, vocab: path)
    monkeypatch.setattr("speech.models.gguf.resolve_gguf", lambda name: "/nonexistent/model.gguf")
    llm.load_llm(llm.LlmConfig(), registry)
    assert seen["llama"] == 4


def _get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_healthz_is_503_full_while_no_slot_is_free():
    async def main():
        async with SpeechServer(ServerConfig(port=0, max_sessions=1), fake_pipeline) as srv:
            before = await asyncio.to_thread(_get, srv.port, "/healthz")
            async with connect(srv.url) as ws:
                await ws.send(json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000}))
                ready = json.loads(await ws.recv())
                during = await asyncio.to_thread(_get, srv.port, "/healthz")
                async with connect(srv.url) as other:  # the next speaker is refused as busy
                    await other.send(json.dumps({"type": "hello", "source": "en", "target": "es", "sample_rate": 16000}))
                    refused = json.loads(await other.recv())
                await ws.send(json.dumps({"type": "end"}))
                async for _ in ws:
                    pass
            for _ in range(100):  # the slot is released as the handler ends
                after = await asyncio.to_thread(_get, srv.port, "/healthz")
                if after[0] == 200:
                    break
                await asyncio.sleep(0.05)
            return before, ready, during, refused, after

    before, ready, during, refused, after = asyncio.run(asyncio.wait_for(main(), 30))
    assert before == (200, {"status": "ok", "protocol": P.VERSION})
    assert ready["type"] == "ready"
    assert during == (503, {"status": "full", "protocol": P.VERSION})
    assert refused["type"] == "error" and refused["code"] == "busy"
    assert after[0] == 200 and after[1]["status"] == "ok"


def test_session_ids_carry_the_replica_prefix():
    assert SpeechServer(ServerConfig(replica_id="r2"), fake_pipeline).session_id("abc") == "r2-abc"
    assert SpeechServer(ServerConfig(), fake_pipeline).session_id("abc") == "abc"
