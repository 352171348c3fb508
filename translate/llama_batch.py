"""Batching across sessions (opt-in): several streams' KV caches as sequences of one llama context,
their pending evaluations gathered into one `llama_decode`.

Each stream's prompt evaluation and each of its generation steps is a small decode; a batch of N
streams' tokens costs less than N decodes (the weights are read once per batch). One context holds
`slots` sequences, each with its own `n_ctx` of cache (a non-unified cache: a sequence attends only
to itself), and each stream keeps exact rewind on its own sequence id (`memory_seq_rm(seq, p, -1)`).

`SequenceScheduler.decode` is called from each stream's worker thread. The first caller leads: it
waits at most `window_s` for the other streams that are inside an update (a stream counts as busy
from its first evaluation of an update to the end of its generation; an idle stream is never waited
for), decodes every pending request in one batch (split at `n_batch` tokens), and hands each caller
the greedy next token of its last position (and the logits where asked). Callers that arrive
during a decode form the next batch. A cache removal is a request too, run before the batch's
decode (so a stream that rewinds is never starved by the others' back-to-back decodes).

`BatchedCache` is a `KVCache` whose operations go through the scheduler, so the translator and its
committed-prefix guarantees are unchanged. Off by default: the matrix products run over a batch of
another size, so a stream's greedy choice can differ where two tokens' logits nearly tie.
Where every slot is taken, the next stream opens another shared context.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .llama import CacheError, ContextOverflow, Generation, KVCache


@dataclass
class _Request:
    seq: int
    tokens: list[int]
    pos: int
    want_logits: bool
    remove: bool = False  # a removal from `pos` on instead of an evaluation
    removed: bool = False
    done: bool = False
    next_token: int | None = None
    logits: list[float] | None = None
    error: BaseException | None = None


@dataclass
class BatchStats:
    decodes: int = 0
    requests: int = 0
    sizes: dict[int, int] = field(default_factory=dict)  # requests per decode -> count

    def add(self, n: int) -> None:
        self.decodes += 1
        self.requests += n
        self.sizes[n] = self.sizes.get(n, 0) + 1


class SequenceScheduler:
    """One llama context with `slots` sequences, shared by up to `slots` streams."""

    def __init__(self, model: Any, slots: int, window_s: float = 0.02) -> None:
        if slots < 1:
            raise ValueError("batch_sessions must be >= 1")
        L = model._L
        o = model.options
        params = L.LlamaContextParams()
        params.n_ctx = o.n_ctx * slots  # split evenly: each sequence gets n_ctx
        params.n_batch = o.n_batch
        params.n_seq_max = slots
        params.kv_unified = False
        params.n_threads = o.threads
        params.n_threads_batch = o.threads
        params.swa_full = True  # see KVCache: Gemma-3's sliding window and rewinds
        params.no_perf = True
        self.model = model
        self.slots = slots
        self.window_s = window_s
        self.n_batch = o.n_batch
        self.stats = BatchStats()
        self._L = L
        self._ctx = L.LlamaContext(model.model, params)
        chain = L.LlamaSamplerChainParams()
        chain.no_perf = True
        self._sampler = L.LlamaSampler(chain)
        self._sampler.add_greedy()  # stateless: shared by every sequence
        self._batch = L.LlamaBatch(n_tokens=o.n_batch, embd=0, n_seq_max=1)
        self._cond = threading.Condition()
        self._free = list(range(slots))
        self._busy_streams: set[int] = set()  # sequences inside an update
        self._pending: list[_Request] = []
        self._leading = False  # a caller gathers and runs the next batch (the context is its own)

    def acquire(self) -> int | None:
        with self._cond:
            return self._free.pop(0) if self._free else None

    def release(self, seq: int) -> None:
        self.remove(seq, 0)
        with self._cond:
            self._busy_streams.discard(seq)
            self._free.append(seq)
            self._cond.notify_all()

    def idle(self, seq: int) -> None:
        """The stream's update is over: batches no longer wait for it."""
        with self._cond:
            self._busy_streams.discard(seq)
            self._cond.notify_all()

    def busy(self, seq: int) -> None:
        """The stream starts an update: batches wait (briefly) for its requests."""
        with self._cond:
            self._busy_streams.add(seq)

    def remove(self, seq: int, p0: int) -> bool:
        """`memory_seq_rm(seq, p0, -1)` within the next batch (before its decode); true when the
        sequence then ends at p0."""
        return bool(self._submit(_Request(seq, [], p0, False, remove=True)).removed)

    def decode(self, seq: int, tokens: list[int], pos: int, want_logits: bool = False) -> _Request:
        """Evaluate `tokens` at `pos` on sequence `seq` within the next batch; returns the request
        with the greedy next token (and the logits of the last position where asked)."""
        return self._submit(_Request(seq, list(tokens), pos, want_logits))

    def _submit(self, request: _Request) -> _Request:
        with self._cond:
            self._busy_streams.add(request.seq)
            self._pending.append(request)
            self._cond.notify_all()
            while not request.done:
                if self._leading:
                    self._cond.wait()
                    continue
                # Lead the next batch: wait briefly for the other busy streams' requests.
                self._leading = True
                deadline = time.monotonic() + self.window_s
                while not self._busy_streams <= {r.seq for r in self._pending}:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch, self._pending = self._pending, []
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._leading = False
                    self._cond.notify_all()
        if request.error is not None:
            raise request.error
        return request

    def _run(self, requests: list[_Request]) -> None:
        for r in requests:
            if r.remove:  # removals first: a stream's removal always precedes its next evaluation
                removed = self._ctx.memory_seq_rm(r.seq, r.pos if r.pos > 0 else -1, -1)
                r.removed = removed is not False and self._ctx.memory_seq_pos_max(r.seq) == r.pos - 1
                r.done = True
        requests = [r for r in requests if not r.remove]
        if not requests:
            return
        flat = [(r, i) for r in requests for i in range(len(r.tokens))]
        try:
            for start in range(0, len(flat), self.n_batch):
                chunk = flat[start : start + self.n_batch]
                self._batch.clear()
                outputs = []
                for idx, (r, i) in enumerate(chunk):
                    last = i == len(r.tokens) - 1
                    self._batch.add(r.tokens[i], r.pos + i, [r.seq], last)
                    if last:
                        outputs.append((idx, r))
                status = self._ctx.decode(self._batch)
                if status not in (None, 0):
                    raise CacheError(f"llama.cpp could not evaluate a batch of {len(chunk)} tokens (status {status})")
                # The logits are overwritten by the next decode: read each request's now.
                for idx, r in outputs:
                    r.next_token = int(self._sampler.sample(self._ctx, idx))
                    if r.want_logits:
                        r.logits = list(self._ctx.get_logits_ith(idx))
        except (ValueError, RuntimeError, InterruptedError, CacheError) as e:
            # A partly processed batch leaves the sequences in an unknown state: clear them all.
            for r in requests:
                self._ctx.memory_seq_rm(r.seq, -1, -1)
                r.error = e if isinstance(e, CacheError) else CacheError(f"llama.cpp could not evaluate a batch: {e}")
        for r in requests:
            r.done = True
        self.stats.add(len(requests))

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.close()
            self._ctx = None


class SequencePool:
    """The shared contexts of one loaded model: a stream takes a free sequence of one of them."""

    def __init__(self, model: Any, slots: int, window_s: float) -> None:
        self.model = model
        self.slots = slots
        self.window_s = window_s
        self.schedulers: list[SequenceScheduler] = []
        self._lock = threading.Lock()

    def acquire(self) -> tuple[SequenceScheduler, int]:
        with self._lock:
            for scheduler in self.schedulers:
                seq = scheduler.acquire()
                if seq is not None:
                    return scheduler, seq
            scheduler = SequenceScheduler(self.model, self.slots, self.window_s)
            self.schedulers.append(scheduler)
            seq = scheduler.acquire()
            assert seq is not None
            return scheduler, seq


@dataclass
class BatchedCache(KVCache):
    """A stream's cache as one sequence of a shared context (see the module's doc)."""

    pool: Any = None
    scheduler: Any = None
    seq: int = -1
    _next_token: int | None = None

    def __post_init__(self) -> None:
        self.scheduler, self.seq = self.pool.acquire()

    def sync(self, prompt: list[int]) -> tuple[int, int]:
        self.scheduler.busy(self.seq)  # until the end of this update's generation
        try:
            return super().sync(prompt)
        except BaseException:
            self.scheduler.idle(self.seq)
            raise

    def truncate(self, n: int) -> int:
        n = max(0, min(n, len(self.tokens)))
        dropped = len(self.tokens) - n
        if dropped:
            self._next_token = None
            if self.scheduler.remove(self.seq, n):
                del self.tokens[n:]
            else:  # partial removal refused: clear and evaluate the kept tokens again
                keep = self.tokens[:n]
                self.clear()
                self.full_reevaluations += 1
                self.feed(keep)
        return dropped

    def clear(self) -> None:
        self.tokens.clear()
        self._next_token = None
        if not self.scheduler.remove(self.seq, 0):
            raise CacheError("llama.cpp did not clear the cache")

    def feed(self, tokens: list[int], want_logits: bool = False) -> list[float] | None:
        if len(self.tokens) + len(tokens) > self.n_ctx:
            raise ContextOverflow(f"prompt of {len(self.tokens) + len(tokens)} tokens exceeds the context ({self.n_ctx})")
        if not tokens:
            return None
        try:
            request = self.scheduler.decode(self.seq, tokens, len(self.tokens), want_logits)
        except CacheError:
            self.tokens.clear()  # the scheduler cleared the sequence
            self._next_token = None
            raise
        self.tokens.extend(tokens)
        self.evaluated_total += len(tokens)
        self._next_token = request.next_token
        return request.logits

    def _next(self) -> int:
        if self._next_token is None:
            raise CacheError("no logits for the cache's last token (evaluate before sampling)")
        return self._next_token

    def logits(self) -> list[float]:
        # Logits do not survive the next batch: evaluate the last token again and keep them.
        last = self.tokens[-1]
        self.truncate(len(self.tokens) - 1)
        self.evaluated_total -= 1  # the same token, not new work for the stream's counters
        logits = self.feed([last], want_logits=True)
        assert logits is not None
        return logits

    def generate(self, max_tokens: int, stop: Any) -> Generation:
        try:
            return super().generate(max_tokens, stop)
        finally:
            self.scheduler.idle(self.seq)

    def close(self) -> None:
        if self.seq >= 0:
            self.scheduler.release(self.seq)
            self.seq = -1
