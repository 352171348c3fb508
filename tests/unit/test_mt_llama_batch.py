"""Batching across sessions for the LLM translator with a fake llama.cpp binding that keeps one
cache per sequence: each stream's rewind stays exact on its own sequence, concurrent streams'
decodes share a batch and give the unbatched hypotheses, failures clear only the batch's streams."""

from __future__ import annotations

import threading
import time
import zlib
from dataclasses import replace
from types import SimpleNamespace

import pytest

from speech.translate.llama import CacheError, ContextOverflow, LlamaModel, LlamaOptions
from speech.translate.llama_batch import BatchedCache
from speech.translate.llm import LlmConfig, LlmStream
from speech.translate.prompt import FewShotLayout
from tests.unit.test_mt_llama_cache import VOCAB, FakeModel, FakeSampler


def fake_logits(memory: dict[int, int]) -> list[float]:
    """The formula of test_mt_llama_cache's FakeContext: every cached position counts, so a stale
    entry left by a refused removal, or another sequence's token, changes the logits."""
    seq = [memory[p] for p in sorted(memory)]
    state = sum((k + 1) * (t + 3) for k, t in enumerate(seq))
    return [float((state * (j + 7)) % 101) for j in range(VOCAB)]


class FakeBatch:
    def __init__(self, n_tokens, embd, n_seq_max) -> None:
        self.capacity = n_tokens
        self.items: list[tuple[int, int, int, bool]] = []

    def clear(self) -> None:
        self.items = []

    def add(self, token, pos, seq_ids, logits) -> None:
        if len(self.items) >= self.capacity:
            raise IndexError("batch is full")
        self.items.append((token, pos, seq_ids[0], logits))


class FakeSeqContext:
    """Several sequences' caches (position -> token each), as a non-unified llama.cpp cache."""

    refuse_partial = False
    fail_decode = False
    delay_s = 0.0  # a decode's duration (the GIL is free meanwhile, as in llama.cpp)
    decoded: list[int] = []  # tokens per decode call

    def __init__(self, model, params) -> None:
        assert params.n_seq_max >= 1 and params.kv_unified is False
        self.n_ctx_seq = params.n_ctx // params.n_seq_max
        self.memory: dict[int, dict[int, int]] = {}
        self.outputs: dict[int, list[float]] = {}

    def memory_seq_rm(self, seq, p0, p1) -> bool:
        if p0 > 0 and self.refuse_partial:
            return False
        mem = self.memory.setdefault(seq, {})
        self.memory[seq] = {p: t for p, t in mem.items() if p < max(p0, 0)}
        return True

    def memory_seq_pos_max(self, seq) -> int:
        return max(self.memory.get(seq, {}), default=-1)

    def decode(self, batch: FakeBatch) -> int:
        FakeSeqContext.decoded.append(len(batch.items))
        time.sleep(self.delay_s)
        if self.fail_decode:
            token, pos, seq, _ = batch.items[0]
            self.memory.setdefault(seq, {})[pos] = token  # a partly processed batch
            raise ValueError("could not find a KV slot for the batch")
        self.outputs = {}
        for token, pos, seq, _ in batch.items:
            if pos >= self.n_ctx_seq:
                raise ValueError("could not find a KV slot for the batch")
            self.memory.setdefault(seq, {})[pos] = token
        for i, (_, _, seq, logits) in enumerate(batch.items):
            if logits:
                self.outputs[i] = fake_logits(self.memory[seq])
        return 0

    def get_logits_ith(self, i) -> list[float]:
        return self.outputs[i]

    def close(self) -> None:
        pass


class StableModel(FakeModel):
    """Token ids from the word alone (FakeModel numbers words in order of first use, which
    concurrent streams would change)."""

    def _id(self, word: str) -> int:
        return zlib.crc32(word.encode()) % (VOCAB - 3) + 3


class BatchModel(StableModel):
    def __init__(self, n_ctx: int = 2048, slots: int = 2, window_s: float = 0.02) -> None:
        super().__init__(n_ctx=n_ctx)
        self._L = SimpleNamespace(
            LlamaContextParams=lambda: SimpleNamespace(),
            LlamaContext=FakeSeqContext,
            LlamaSamplerChainParams=lambda: SimpleNamespace(),
            LlamaSampler=FakeSampler,
            LlamaBatch=FakeBatch,
        )
        self.options = replace(self.options, batch_sessions=slots, batch_window_s=window_s)
        self._pool = None
        self._lock = threading.Lock()

    new_cache = LlamaModel.new_cache  # the real choice between KVCache and BatchedCache


@pytest.fixture(autouse=True)
def _reset_fake():
    yield
    FakeSeqContext.refuse_partial = False
    FakeSeqContext.fail_decode = False
    FakeSeqContext.delay_s = 0.0
    FakeSeqContext.decoded = []


def test_options_default_to_unbatched():
    assert LlmConfig().batch_sessions == 0 and LlamaOptions().batch_sessions == 0
    assert type(FakeModel().new_cache()).__name__ == "KVCache"
    assert isinstance(BatchModel().new_cache(), BatchedCache)


@pytest.mark.parametrize("refuse", [False, True])
def test_rewind_on_a_shared_context_gives_the_fresh_cache(refuse):
    FakeSeqContext.refuse_partial = refuse
    model = BatchModel()
    plain = FakeModel()
    fresh = plain.new_cache()
    fresh.sync([5, 6, 7, 8])
    cache, other = model.new_cache(), model.new_cache()
    other.sync([9, 9, 9, 9, 9, 9])  # the neighbouring sequence must not leak into this one
    cache.sync([5, 6, 9, 10, 11])
    rewound, evaluated = cache.sync([5, 6, 7, 8])
    assert rewound == 3
    # Refused: the two kept tokens are evaluated again with the two new ones, and counted.
    assert (evaluated, cache.full_reevaluations) == ((4, 1) if refuse else (2, 0))
    assert cache.logits() == fresh.logits()
    assert cache._next() == fresh._next()
    ctx = cache.scheduler._ctx
    assert ctx.memory[cache.seq] == {0: 5, 1: 6, 2: 7, 3: 8}
    assert ctx.memory[other.seq] == dict(enumerate([9] * 6))
    if not refuse:
        assert cache.evaluated_total == 5 + evaluated  # logits() re-evaluates without counting


def test_generation_loop_cut_survives_a_refused_removal_on_its_sequence():
    FakeSeqContext.refuse_partial = True
    model = BatchModel()
    cache, other = model.new_cache(), model.new_cache()
    other.sync([4, 4])
    cache.sync([5, 6, 7])
    cache.truncate(1)
    assert cache.tokens == [5] and cache.scheduler._ctx.memory[cache.seq] == {0: 5}
    assert cache.scheduler._ctx.memory[other.seq] == {0: 4, 1: 4}


def test_a_failed_batch_empties_its_streams_and_names_the_error():
    cache = BatchModel().new_cache()
    cache.sync([5, 6, 7])
    FakeSeqContext.fail_decode = True
    with pytest.raises(CacheError, match="could not evaluate"):
        cache.sync([5, 6, 7, 8, 9])
    assert cache.tokens == [] and cache.scheduler._ctx.memory[cache.seq] == {}
    FakeSeqContext.fail_decode = False
    cache.sync([5, 6])  # usable again: evaluates from scratch
    assert cache.scheduler._ctx.memory[cache.seq] == {0: 5, 1: 6}


def test_a_prompt_longer_than_a_sequences_context_is_refused_before_decoding():
    cache = BatchModel(n_ctx=8).new_cache()
    with pytest.raises(ContextOverflow):
        cache.sync(list(range(3, 12)))
    assert FakeSeqContext.decoded == [] and cache.tokens == []


def stream(model, **config) -> LlmStream:
    layout = FewShotLayout("en", "es", (("The house is red.", "La casa es roja."),))
    return LlmStream(model, layout, LlmConfig(max_tentative_tokens=6, **config))


def feed_words(s: LlmStream, words: list[str], out: list) -> None:
    committed: list[str] = []
    for i in range(1, len(words) + 1):
        hyp = s.hypothesis(words[:i], committed, complete=i == len(words))
        committed = hyp.words[: hyp.stable]
        out.append((hyp.words, hyp.stable))
    s.end_sentence(words, committed)


TEXTS = ["the old man walked to the market and bought bread".split(),
         "rain fell all night on the quiet town near the river".split()]


def test_concurrent_streams_share_batches_and_give_the_unbatched_hypotheses():
    plain = StableModel()
    want = []
    for words in TEXTS:
        out: list = []
        feed_words(stream(plain), words, out)
        want.append(out)
    model = BatchModel(slots=2, window_s=1.0)
    FakeSeqContext.delay_s = 0.002
    streams = [stream(model) for _ in TEXTS]
    got: list[list] = [[], []]
    threads = [threading.Thread(target=feed_words, args=(s, w, g)) for s, w, g in zip(streams, TEXTS, got)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want
    scheduler = streams[0].cache.scheduler
    assert streams[1].cache.scheduler is scheduler and {s.cache.seq for s in streams} == {0, 1}
    assert scheduler.stats.sizes.get(2, 0) > 0  # decodes of both streams in one call
    assert max(FakeSeqContext.decoded) <= model.options.n_batch  # long batches are split


def test_a_lone_stream_never_waits_for_an_idle_one():
    model = BatchModel(slots=2, window_s=5.0)
    idle = stream(model)  # open, but not in an update
    busy = stream(model)
    start = time.monotonic()
    feed_words(busy, TEXTS[0][:4], [])
    assert time.monotonic() - start < 2.0
    assert idle.cache.tokens == []


def test_streams_beyond_the_slots_open_another_context_and_closed_slots_are_reused():
    model = BatchModel(slots=2)
    a, b, c = (model.new_cache() for _ in range(3))
    assert a.scheduler is b.scheduler and c.scheduler is not a.scheduler
    a.sync([5, 6])
    seq = a.seq
    a.close()
    assert a.scheduler._ctx.memory[seq] == {}
    d = model.new_cache()
    assert d.scheduler is b.scheduler and d.seq == seq


def test_a_decode_waits_at_most_the_window_for_a_busy_stream():
    model = BatchModel(slots=2, window_s=0.2)
    a, b = model.new_cache(), model.new_cache()
    b.scheduler.busy(b.seq)  # b is inside an update but sends nothing
    start = time.monotonic()
    a.sync([5, 6, 7])
    assert 0.2 <= time.monotonic() - start < 2.0
    b.scheduler.idle(b.seq)
    start = time.monotonic()
    a.sync([5, 6, 7, 8])
    assert time.monotonic() - start < 0.2


def test_the_option_reaches_the_translator_through_mt_options():
    """`--extra 'mt_options={"batch_sessions": 4}'` gives the LLM translators the option."""
    from speech.backends import default_registry
    from speech.pipeline import PipelineConfig

    registry = default_registry()
    config = PipelineConfig(mt_backend="gemma-270m", extra={"mt_options": {"batch_sessions": 4}})
    assert config.mt_options.engine == {"batch_sessions": 4}
    for engine in ("gemma-270m", "gguf"):
        assert {"batch_sessions", "batch_window_s"} <= set(registry.option_names("translator", engine))
