"""KV-cache safety with a fake llama.cpp binding: refused partial removal, failed decodes, a prompt
that would overflow the context, and user text that names a control token."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from speech.translate.llama import CacheError, KVCache, LlamaOptions
from speech.translate.llm import LlmConfig, LlmStream
from speech.translate.prompt import FewShotLayout

VOCAB = 50


class FakeContext:
    """A cache as llama.cpp keeps it: token per position. Logits depend on every cached position,
    so a stale entry left behind by a refused removal changes them (as attention would)."""

    refuse_partial = False
    fail_decode = False

    def __init__(self, model, params) -> None:
        self.memory: dict[int, int] = {}
        self.n_ctx = params.n_ctx

    def memory_seq_rm(self, seq, p0, p1) -> bool:
        if p0 > 0 and self.refuse_partial:
            return False  # recurrent / hybrid models: partial removal unsupported
        self.memory = {p: t for p, t in self.memory.items() if p < max(p0, 0)}
        return True

    def memory_seq_pos_max(self, seq) -> int:
        return max(self.memory, default=-1)

    def kv_cache_clear(self) -> None:
        self.memory.clear()

    def decode(self, batch) -> int:
        tokens, pos = batch
        if self.fail_decode:
            self.memory[pos] = tokens[0]  # a partly processed batch
            raise ValueError("could not find a KV slot for the batch")
        if pos + len(tokens) > self.n_ctx:
            raise ValueError("could not find a KV slot for the batch")
        for i, t in enumerate(tokens):
            self.memory[pos + i] = t
        return 0

    def get_logits_ith(self, i) -> list[float]:
        seq = [self.memory[p] for p in sorted(self.memory)]
        state = sum((k + 1) * (t + 3) for k, t in enumerate(seq))
        return [float((state * (j + 7)) % 101) for j in range(VOCAB)]

    def close(self) -> None:
        pass


class FakeSampler:
    def __init__(self, params) -> None:
        pass

    def add_greedy(self) -> None:
        pass

    def sample(self, ctx, i) -> int:
        logits = ctx.get_logits_ith(i)
        return max(range(len(logits)), key=logits.__getitem__)


def fake_binding(context=FakeContext):
    return SimpleNamespace(
        LlamaContextParams=lambda: SimpleNamespace(),
        LlamaContext=context,
        LlamaSamplerChainParams=lambda: SimpleNamespace(),
        LlamaSampler=FakeSampler,
        llama_batch_get_one=lambda tokens, pos: (list(tokens), pos),
    )


class FakeModel:
    """Words are tokens; "<end_of_turn>" is one control token when special tokens are parsed, and
    plain characters otherwise (as llama.cpp's parse_special does)."""

    CONTROL = 1

    def __init__(self, n_ctx: int = 2048, context=FakeContext) -> None:
        self._L = fake_binding(context)
        self.options = LlamaOptions(n_ctx=n_ctx, n_batch=16)
        self.model = None
        self.words = {"<bos>": 0, "<end_of_turn>": self.CONTROL, "\n": 2}
        self.names = {v: k for k, v in self.words.items()}

    def _id(self, word: str) -> int:
        if word not in self.words:
            self.words[word] = len(self.words) + 3
            self.names[self.words[word]] = word
        return self.words[word] % VOCAB + (3 if self.words[word] % VOCAB < 3 else 0)

    def tokenize(self, text: str, bos: bool = False, special: bool = True) -> list[int]:
        out = [0] if bos else []
        for word in text.replace("\n", " \n ").split(" "):
            if not word:
                continue
            if word == "\n":
                out.append(2)
            elif "<end_of_turn>" in word and special:
                before, _, after = word.partition("<end_of_turn>")
                out += [self._id(before)] * bool(before) + [self.CONTROL] + [self._id(after)] * bool(after)
            else:
                out.append(self._id(word))
        return out

    def piece(self, token: int) -> str:
        return "\n" if token == 2 else f" t{token}"

    def detokenize(self, tokens: list[int]) -> str:
        return "".join(self.piece(t) for t in tokens).strip()

    def is_end(self, token: int) -> bool:
        return token == self.CONTROL

    def new_cache(self) -> KVCache:
        return KVCache(self)


@pytest.fixture(autouse=True)
def _reset_fake():
    yield
    FakeContext.refuse_partial = False
    FakeContext.fail_decode = False


@pytest.mark.parametrize("refuse", [False, True])
def test_rewind_gives_the_fresh_cache_whether_or_not_partial_removal_works(refuse):
    FakeContext.refuse_partial = refuse
    model = FakeModel()
    fresh = model.new_cache()
    fresh.sync([5, 6, 7, 8])
    cache = model.new_cache()
    cache.sync([5, 6, 9, 10, 11])
    rewound, evaluated = cache.sync([5, 6, 7, 8])
    assert rewound == 3
    assert cache.logits() == fresh.logits()
    assert cache._ctx.memory == {0: 5, 1: 6, 2: 7, 3: 8}
    assert cache.tokens == [5, 6, 7, 8]
    # Refused: the two kept tokens are evaluated again with the two new ones, and counted.
    assert (evaluated, cache.full_reevaluations) == ((4, 1) if refuse else (2, 0))


def test_generation_loop_cut_survives_a_refused_removal():
    FakeContext.refuse_partial = True
    cache = FakeModel().new_cache()
    cache.sync([5, 6, 7])
    cache.truncate(1)
    assert cache.tokens == [5] and cache._ctx.memory == {0: 5}


def test_a_failed_decode_empties_the_cache_and_names_the_error():
    cache = FakeModel().new_cache()
    cache.sync([5, 6, 7])
    FakeContext.fail_decode = True
    with pytest.raises(CacheError, match="could not evaluate"):
        cache.sync([5, 6, 7, 8, 9])
    assert cache.tokens == [] and cache._ctx.memory == {}
    FakeContext.fail_decode = False
    cache.sync([5, 6])  # usable again: evaluates from scratch
    assert cache._ctx.memory == {0: 5, 1: 6}


def stream(n_ctx: int, **config) -> LlmStream:
    layout = FewShotLayout("en", "es", (("The house is red.", "La casa es roja."),))
    return LlmStream(FakeModel(n_ctx=n_ctx), layout, LlmConfig(**config))


def test_a_prompt_too_long_for_the_context_is_shrunk_not_fatal():
    s = stream(n_ctx=48, max_tentative_tokens=6, max_sentence_tokens=20, context_sentences=3)
    prefix = list(s._prefix)
    for i in range(3):
        s.end_sentence(f"sentence {i} was said here".split(), f"la frase {i} fue dicha".split())
    source = [f"w{i}" for i in range(60)]  # the current sentence alone is longer than the context
    for complete in (False, True):
        hyp = s.hypothesis(source, ["x"], complete=complete)
        assert hyp.words[0] == "x"
        assert len(s.cache.tokens) <= 48
        assert s.cache.tokens[: len(prefix)] == prefix  # the instruction prefix stays
    assert not s.context and s.shrunk >= 2
    # The newest source words are kept (the cut is after the prefix, at the sentence's start).
    assert s.model.tokenize("w59")[0] in s.cache.tokens


def test_old_context_sentences_go_first():
    def filled(n_ctx: int) -> LlmStream:
        s = stream(n_ctx=n_ctx, max_tentative_tokens=4, context_sentences=3)
        for i in range(3):
            s.end_sentence(f"sentence {i} was said".split(), f"frase {i} dicha".split())
        return s

    need = len(filled(2048).prompt(["a", "b"], [])) + 4
    s = filled(need - 1)  # one token short: dropping the oldest sentence is enough
    prompt, budget = s.fitted_prompt(["a", "b"], [], 4)
    assert [src for src, _ in s.context] == ["sentence 1 was said", "sentence 2 was said"]
    assert budget == 4 and prompt == s.prompt(["a", "b"], []) and len(prompt) + budget <= need - 1


def test_user_text_never_becomes_a_control_token():
    s = stream(n_ctx=2048)
    words = "he wrote <end_of_turn> on the board".split()
    prompt = s.prompt(words, ["él", "escribió", "<end_of_turn>"])
    assert FakeModel.CONTROL not in prompt
    s.end_sentence(words, "él escribió <end_of_turn> en la pizarra".split())
    assert FakeModel.CONTROL not in s.prompt(["next"], [])
