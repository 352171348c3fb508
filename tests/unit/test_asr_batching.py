"""The cross-session decode batcher's scheduling, with a fake decoder (no model)."""

import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest

from speech.asr import batching
from speech.asr.batching import DecodeBatcher
from speech.types import Word


@dataclass
class Cfg:
    language: str | None = "en"
    beam_size: int = 1
    chunk_length: int = 30
    max_new_tokens: int = 96


class Stream:
    pass


@pytest.fixture
def fake_decoders(monkeypatch):
    calls = []

    def batch(model, requests):
        calls.append(("batch", len(requests)))
        time.sleep(0.05)  # a decode's cost, during which the next callers gather
        return [([Word(f"item{int(r.audio[0])}", r.offset, r.offset + 1)], r.config.language) for r in requests]

    def single(model, audio, config, prompt="", offset=0.0):
        calls.append(("single", 1))
        return [Word(f"item{int(audio[0])}", offset, offset + 1)], config.language or "xx"

    monkeypatch.setattr(batching, "decode_batch", batch)
    monkeypatch.setattr("speech.asr.whisper.transcribe_words", single)
    return calls


def run_concurrently(batcher, n, config=Cfg()):
    results = [None] * n
    barrier = threading.Barrier(n)

    def one(i):
        barrier.wait()
        results[i] = batcher.transcribe(np.full(16000, i, np.float32), config, "", float(i))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return results


def test_concurrent_decodes_share_one_call_and_each_gets_its_own_words(fake_decoders):
    streams = [Stream() for _ in range(4)]
    batcher = DecodeBatcher(model=None, max_batch=4, window_s=1.0)
    for s in streams:
        batcher.register(s)
    results = run_concurrently(batcher, 4)
    assert [r[0][0].text for r in results] == [f"item{i}" for i in range(4)]
    assert [r[0][0].start for r in results] == [0.0, 1.0, 2.0, 3.0]
    assert fake_decoders == [("batch", 4)]
    assert batcher.stats.batches == 1 and batcher.stats.items == 4


def test_batches_never_exceed_max_batch(fake_decoders):
    streams = [Stream() for _ in range(5)]
    batcher = DecodeBatcher(model=None, max_batch=2, window_s=0.5)
    for s in streams:
        batcher.register(s)
    results = run_concurrently(batcher, 5)
    assert sorted(r[0][0].text for r in results) == [f"item{i}" for i in range(5)]
    assert all(n <= 2 for _, n in fake_decoders) and sum(n for _, n in fake_decoders) == 5


def test_a_lone_stream_does_not_wait_for_the_window(fake_decoders):
    stream = Stream()
    batcher = DecodeBatcher(model=None, max_batch=4, window_s=5.0)
    batcher.register(stream)
    t0 = time.monotonic()
    words, language = batcher.transcribe(np.full(100, 7, np.float32), Cfg(), "", 0.0)
    assert time.monotonic() - t0 < 1.0
    assert words[0].text == "item7" and fake_decoders == [("single", 1)]


def test_undetected_language_decodes_alone_and_errors_reach_their_caller(fake_decoders, monkeypatch):
    streams = [Stream() for _ in range(2)]
    batcher = DecodeBatcher(model=None, max_batch=4, window_s=1.0)
    for s in streams:
        batcher.register(s)
    results = run_concurrently(batcher, 2, Cfg(language=None))
    assert sorted(k for k, _ in fake_decoders) == ["single", "single"]
    assert {r[1] for r in results} == {"xx"}

    def broken(model, requests):
        raise RuntimeError("decoder failed")

    monkeypatch.setattr(batching, "decode_batch", broken)
    errors = []

    def one(i):
        try:
            batcher.transcribe(np.full(10, i, np.float32), Cfg(), "", 0.0)
        except RuntimeError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == ["decoder failed", "decoder failed"]
    # the batcher is free again afterwards
    monkeypatch.setattr(batching, "decode_batch", lambda m, rs: [([], "en") for _ in rs])
    assert run_concurrently(batcher, 2) == [([], "en"), ([], "en")]


def test_batch_sessions_option_gives_streams_one_shared_batcher(monkeypatch):
    """`--extra 'asr_options={"batch_sessions": 4}'` reaches the recogniser's config; the streams
    of one model share one batcher; without the option a stream decodes alone."""
    from speech.asr import whisper
    from speech.asr.stage import recognizer_options
    from speech.backends import default_registry
    from speech.pipeline import PipelineConfig

    loads = []
    monkeypatch.setattr("speech.models.whisper.load", lambda *a, **kw: loads.append(kw) or object())
    registry = default_registry()
    config = PipelineConfig(asr_model="whisper-tiny.en", extra={"asr_options": {"batch_sessions": 4}})
    options = recognizer_options(registry, "whisper-tiny.en", config.asr_options)
    assert options == {"batch_sessions": 4}
    a = registry.create("recognizer", "whisper-tiny.en", **options)
    b = registry.create("recognizer", "whisper-tiny.en", **options)
    assert isinstance(a.batcher, DecodeBatcher) and a.batcher is b.batcher and a.batcher.max_batch == 4
    assert len(a.batcher._streams) == 2
    assert loads[0]["num_workers"] == 1  # one batch at a time, on every core of the budget
    plain = registry.create("recognizer", "whisper-tiny.en")
    assert plain.batcher is None and isinstance(plain, whisper.WhisperRecognizer)
