"""llama.cpp behind a small interface: a shared loaded model, and one KV cache per stream.

The binding (cyllama 0.2.18, prebuilt) is imported only here, so another binding could replace this
module without touching the translator. `KVCache.sync(tokens)` is the whole rewind mechanism: it
keeps the longest common prefix of what the cache holds and what the prompt needs, truncates the
rest (`memory_seq_rm`) and evaluates only the tokens after it.

Every cache operation's result is checked. `memory_seq_rm` returns false where the model cannot
remove part of its cache (recurrent and hybrid architectures): the cache is then cleared and its
kept tokens evaluated again, so what it holds is always what `tokens` says, at the cost of one full
evaluation. A failed decode clears the cache too (its state is unknown after a partial batch) and
raises `CacheError`. User text is tokenised with `special=False`, so a speaker who says
"<end_of_turn>" gives the model text, not a control token.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from speech.models.gguf import check_gguf


class CacheError(RuntimeError):
    """llama.cpp refused a cache operation that a full re-evaluation cannot replace."""


class ContextOverflow(ValueError):
    """A prompt longer than the context (the translator shrinks its prompt before this happens)."""


@dataclass(frozen=True)
class LlamaOptions:
    n_ctx: int = 2048
    n_batch: int = 512
    threads: int = 2
    n_gpu_layers: int = 0  # layers offloaded to a GPU (-1: all); 0 keeps the model on the CPU
    # > 0: streams share contexts of this many sequences, their decodes batched (llama_batch.py)
    batch_sessions: int = 0
    batch_window_s: float = 0.02  # the longest a decode waits for the other busy streams


class LlamaModel:
    """A loaded GGUF model, shared read-only between streams (each stream owns a KVCache)."""

    def __init__(self, path: str | Path, options: LlamaOptions = LlamaOptions()) -> None:
        self.path = check_gguf(path)
        self.options = options
        from cyllama.llama import llama_cpp as L

        self._L = L
        L.disable_logging()
        L.ggml_backend_load_all()

        class _Model(L.LlamaModel):
            # cyllama 0.2.18 quirk: get_logits* read model.n_vocab, which the class lacks.
            n_vocab = property(lambda s: s.get_vocab().n_vocab)

        try:
            params = L.LlamaModelParams()
            params.n_gpu_layers = options.n_gpu_layers
            self.model = _Model(str(self.path), params)
        except Exception as e:  # noqa: BLE001 - the binding raises plain exceptions
            raise ValueError(f"llama.cpp could not load {self.path}: {e}") from e
        self.vocab = self.model.get_vocab()
        self.chat_template: str = self.model.get_default_chat_template() or ""
        self._pieces: dict[int, str] = {}
        self._lock = threading.Lock()
        self._pool: Any = None

    def tokenize(self, text: str, bos: bool = False, special: bool = True) -> list[int]:
        """Tokens of `text`; `special=False` for user text: control-token names stay plain text."""
        return list(self.vocab.tokenize(text, add_special=bos, parse_special=special))

    def piece(self, token: int) -> str:
        p = self._pieces.get(token)
        if p is None:
            p = self.vocab.token_to_piece(token, special=False)
            with self._lock:
                self._pieces[token] = p
        return p

    def detokenize(self, tokens: list[int]) -> str:
        return self.vocab.detokenize(tokens) if tokens else ""

    def is_end(self, token: int) -> bool:
        return bool(self.vocab.is_eog(token))

    def render_chat(self, messages: list[tuple[str, str]], add_assistant: bool) -> str:
        chat = [self._L.LlamaChatMessage(role=r, content=c) for r, c in messages]
        return str(self.model.chat_apply_template(self.chat_template, chat, add_assistant))

    def new_cache(self) -> "KVCache":
        if self.options.batch_sessions > 0:
            from .llama_batch import BatchedCache, SequencePool

            with self._lock:
                if self._pool is None:
                    self._pool = SequencePool(self, self.options.batch_sessions, self.options.batch_window_s)
            return BatchedCache(self, pool=self._pool)
        return KVCache(self)


@dataclass
class Generation:
    tokens: list[int]
    stopped: bool  # stopped by the model (end token or a newline), not by the token budget
    looped: bool = False


@dataclass
class KVCache:
    """One stream's llama.cpp context; `tokens` mirrors exactly what the cache holds."""

    model: LlamaModel
    tokens: list[int] = field(default_factory=list)
    evaluated_total: int = 0
    full_reevaluations: int = 0  # partial removals the model refused (each cost a re-evaluation)
    _ctx: Any = None
    _sampler: Any = None

    def __post_init__(self) -> None:
        L = self.model._L
        o = self.model.options
        params = L.LlamaContextParams()
        params.n_ctx = o.n_ctx
        params.n_batch = o.n_batch
        params.n_threads = o.threads
        params.n_threads_batch = o.threads
        # Gemma-3 has a 512-token sliding window: without a full-size SWA cache, a rewind past it
        # still "succeeds" but gives wrong logits.
        params.swa_full = True
        params.no_perf = True
        self._ctx = L.LlamaContext(self.model.model, params)
        chain = L.LlamaSamplerChainParams()
        chain.no_perf = True
        self._sampler = L.LlamaSampler(chain)
        self._sampler.add_greedy()

    @property
    def n_ctx(self) -> int:
        return self.model.options.n_ctx

    def truncate(self, n: int) -> int:
        """Drop cached tokens from position n on; returns how many were dropped.

        Where the model refuses a partial removal (or leaves other positions than asked), the cache
        is cleared and tokens[:n] evaluated again: slower, never wrong."""
        n = max(0, min(n, len(self.tokens)))
        dropped = len(self.tokens) - n
        if dropped:
            removed = self._ctx.memory_seq_rm(0, n, -1)
            if removed is False or self._ctx.memory_seq_pos_max(0) != n - 1:
                keep = self.tokens[:n]
                self.clear()
                self.full_reevaluations += 1
                self.feed(keep)
            else:
                del self.tokens[n:]
        return dropped

    def clear(self) -> None:
        """Empty the cache (always supported: no partial removal involved)."""
        self._ctx.kv_cache_clear()
        self.tokens.clear()
        if self._ctx.memory_seq_pos_max(0) != -1:
            raise CacheError("llama.cpp did not clear the cache")

    def feed(self, tokens: list[int]) -> None:
        """Evaluate `tokens` after what the cache holds (they join it)."""
        if len(self.tokens) + len(tokens) > self.n_ctx:
            raise ContextOverflow(f"prompt of {len(self.tokens) + len(tokens)} tokens exceeds the context ({self.n_ctx})")
        step = self.model.options.n_batch
        for i in range(0, len(tokens), step):
            part = tokens[i : i + step]
            try:
                status = self._ctx.decode(self.model._L.llama_batch_get_one(part, len(self.tokens)))
            except (ValueError, RuntimeError, InterruptedError) as e:
                self.clear()  # a partly processed batch leaves the cache in an unknown state
                raise CacheError(f"llama.cpp could not evaluate {len(part)} tokens: {e}") from e
            if status not in (None, 0):
                self.clear()
                raise CacheError(f"llama.cpp could not evaluate {len(part)} tokens (status {status})")
            self.tokens.extend(part)
        self.evaluated_total += len(tokens)

    def sync(self, prompt: list[int]) -> tuple[int, int]:
        """Make the cache hold `prompt`, with fresh logits for its last token.

        Returns (rewound, evaluated): tokens dropped from the cache, tokens evaluated.
        """
        if not prompt:
            raise ValueError("empty prompt")
        keep = 0
        limit = min(len(prompt), len(self.tokens))
        while keep < limit and prompt[keep] == self.tokens[keep]:
            keep += 1
        # The last prompt token is always evaluated, so the logits belong to this prompt.
        keep = min(keep, len(prompt) - 1)
        before = self.evaluated_total
        rewound = self.truncate(keep)
        self.feed(prompt[keep:])
        return rewound, self.evaluated_total - before

    def logits(self) -> list[float]:
        return list(self._ctx.get_logits_ith(-1))

    def _next(self) -> int:
        """The greedy token after the cache's last one."""
        return self._sampler.sample(self._ctx, -1)

    def generate(self, max_tokens: int, stop: Callable[[int], bool]) -> Generation:
        """Greedy decoding from the current cache; generated tokens stay in the cache.

        Ends on the model's end token, on `stop(token)`, on `max_tokens`, on a context that is
        full, or when the output starts looping (a repeated n-gram), which it then cuts.
        """
        out: list[int] = []
        while len(out) < max_tokens and len(self.tokens) < self.n_ctx:
            token = self._next()
            if self.model.is_end(token) or stop(token):
                return Generation(out, stopped=True)
            out.append(token)
            self.feed([token])
            cut = _loop_start(out)
            if cut is not None:
                self.truncate(len(self.tokens) - (len(out) - cut))
                return Generation(out[:cut], stopped=True, looped=True)
        return Generation(out, stopped=False)

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.close()
            self._ctx = None


def _loop_start(tokens: list[int], min_repeats: int = 4, max_period: int = 8) -> int | None:
    """Where a loop starts when `tokens` ends with one n-gram repeated `min_repeats` times."""
    n = len(tokens)
    for period in range(1, max_period + 1):
        span = period * min_repeats
        if span > n:
            break
        unit = tokens[n - period :]
        if all(tokens[n - k * period : n - (k - 1) * period] == unit for k in range(2, min_repeats + 1)):
            return n - span + period  # keep one occurrence
    return None
