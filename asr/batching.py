"""Batching across sessions (opt-in): the pending Whisper decodes of several streams in one
CTranslate2 call.

Every stream re-decodes its own buffer; on a shared model, two streams' decodes otherwise run one
after the other (or side by side on half the threads each). CTranslate2 takes a batch with one
prompt per item, and a batch of N costs less than N calls (the weights are read once per step).

`DecodeBatcher.transcribe` is called from each stream's worker thread. The first caller becomes
the leader: it waits up to `window_s` for the other live streams' decodes (never longer, never
when it is the only live stream), decodes them all in one call, and hands each caller its result.
Callers that arrive during a batch form the next one. Each stream's state stays in its own
recogniser; the batcher holds nothing of a stream between calls.

Off by default: the encoder window is padded to the longest buffer of the batch and the decode
takes one pass over it (a lone decode may take a second pass when words remain after its last
timestamp), so a stream's words can depend on which streams shared its batch.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speech.types import Word

# faster-whisper's defaults, as its transcribe() applies them (our calls pass temperature 0).
NO_SPEECH_THRESHOLD = 0.6
LOG_PROB_THRESHOLD = -1.0
MAX_INITIAL_TIMESTAMP = 1.0
PREPEND_PUNCTUATIONS = "\"'“¿([{-"
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"


@dataclass
class _Request:
    audio: np.ndarray
    config: Any  # WhisperConfig
    prompt: str
    offset: float
    done: bool = False
    result: tuple[list[Word], str] | None = None
    error: BaseException | None = None


@dataclass
class BatchStats:
    batches: int = 0
    items: int = 0
    sizes: dict[int, int] = field(default_factory=dict)  # batch size -> count

    def add(self, n: int) -> None:
        self.batches += 1
        self.items += n
        self.sizes[n] = self.sizes.get(n, 0) + 1


class DecodeBatcher:
    """Gathers concurrent decodes on one shared WhisperModel into batched calls."""

    def __init__(self, model: Any, max_batch: int = 4, window_s: float = 0.05) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.model = model
        self.max_batch = max_batch
        self.window_s = window_s
        self.stats = BatchStats()
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._busy = False
        self._streams: weakref.WeakSet = weakref.WeakSet()  # live recognisers using this batcher

    def register(self, stream: Any) -> None:
        """A recogniser that will call `transcribe`: the leader waits for at most this many."""
        with self._cond:
            self._streams.add(stream)

    def transcribe(self, audio: np.ndarray, config: Any, prompt: str = "", offset: float = 0.0) -> tuple[list[Word], str]:
        request = _Request(audio, config, prompt, offset)
        with self._cond:
            self._pending.append(request)
            self._cond.notify_all()
            while not request.done:
                if self._busy:
                    self._cond.wait()
                    continue
                # Lead the next batch: wait briefly for the other live streams' decodes.
                self._busy = True
                expected = min(self.max_batch, max(1, len(self._streams)))
                deadline = time.monotonic() + self.window_s
                while len(self._pending) < expected and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
                batch = self._pending[: self.max_batch]
                del self._pending[: self.max_batch]
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _run(self, batch: list[_Request]) -> None:
        groups: dict[tuple, list[_Request]] = {}
        for r in batch:
            c = r.config
            # Only decodes with the same options batch; an undetected language decodes alone.
            key = (c.language, c.beam_size, c.chunk_length, c.max_new_tokens) if c.language else ("alone", id(r))
            groups.setdefault(key, []).append(r)
        for group in groups.values():
            try:
                if len(group) == 1 or not group[0].config.language:
                    from .whisper import transcribe_words

                    for r in group:
                        r.result = transcribe_words(self.model, r.audio, r.config, r.prompt, r.offset)
                else:
                    for r, result in zip(group, decode_batch(self.model, group)):
                        r.result = result
            except Exception as e:  # noqa: BLE001 - each caller raises it in its own stream
                for r in group:
                    r.error = e
            for r in group:
                r.done = True
            self.stats.add(len(group))


def decode_batch(model: Any, requests: list[_Request]) -> list[tuple[list[Word], str]]:
    """One greedy CTranslate2 call for several buffers of one language: the encoder over the
    buffers padded to one window, one prompt per item, word timestamps aligned per item."""
    from faster_whisper.audio import pad_or_trim
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import get_suppressed_tokens

    from .whisper import SAMPLE_RATE, cut_repetition, token_limit

    config = requests[0].config
    fe = model.feature_extractor
    segments, sizes = [], []
    for r in requests:
        features = fe(r.audio, chunk_length=config.chunk_length)
        size = min(fe.nb_max_frames, features.shape[-1] - 1)
        segments.append(pad_or_trim(features[:, :size]))
        sizes.append(size)
    encoder_output = model.encode(np.stack(segments))
    tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=config.language)
    # CTranslate2 needs <|startoftranscript|> at one position in every item of a call: prompts are
    # cut to the shortest one's length (the oldest words go), and items without one decode together.
    previous = [tokenizer.encode(" " + r.prompt.strip()) if r.prompt else [] for r in requests]
    results: list[Any] = [None] * len(requests)
    for group in ([i for i, p in enumerate(previous) if p], [i for i, p in enumerate(previous) if not p]):
        if not group:
            continue
        keep = min(len(previous[i]) for i in group)
        prompts = [model.get_prompt(tokenizer, previous[i][len(previous[i]) - keep:]) for i in group]
        longest = max(len(requests[i].audio) for i in group) / SAMPLE_RATE
        max_length = min(model.max_length, len(prompts[0]) + (token_limit(config, longest) or model.max_length))
        outputs = model.model.generate(
            encoder_output_rows(encoder_output, group, len(requests)), prompts, beam_size=config.beam_size,
            max_length=max_length, return_scores=True, return_no_speech_prob=True, suppress_blank=True,
            suppress_tokens=get_suppressed_tokens(tokenizer, [-1]),
            max_initial_timestamp_index=int(round(MAX_INITIAL_TIMESTAMP / model.time_precision)),
        )
        for i, output in zip(group, outputs):
            results[i] = output
    per_item = []
    for result, size in zip(results, sizes):
        tokens = result.sequences_ids[0]
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        if result.no_speech_prob > NO_SPEECH_THRESHOLD and avg_logprob < LOG_PROB_THRESHOLD:
            per_item.append([])  # faster-whisper skips such a window as silence
            continue
        split, _, _ = model._split_segments_by_timestamps(
            tokenizer=tokenizer, tokens=tokens, time_offset=0.0, segment_size=size,
            segment_duration=size * fe.time_per_frame, seek=0)
        per_item.append(split)
    aligned = [i for i, s in enumerate(per_item) if s]
    if aligned:
        model.add_word_timestamps([per_item[i] for i in aligned], tokenizer, encoder_output_rows(encoder_output, aligned, len(requests)),
                                  [sizes[i] for i in aligned], PREPEND_PUNCTUATIONS, APPEND_PUNCTUATIONS, 0.0)
    out = []
    for r, split in zip(requests, per_item):
        words = []
        for seg in split:
            if seg["start"] == seg["end"] or not tokenizer.decode(seg["tokens"]).strip():
                continue
            for w in seg.get("words") or ():
                text = w["word"].strip()
                if text:
                    words.append(Word(text, r.offset + float(w["start"]), r.offset + float(w["end"]),
                                      float(w["probability"])))
        out.append((cut_repetition(words), config.language))
    return out


def encoder_output_rows(encoder_output: Any, rows: list[int], total: int) -> Any:
    """The encoder output of some batch items (all of them: the same object, no copy)."""
    if rows == list(range(total)):
        return encoder_output
    import ctranslate2

    array = np.asarray(encoder_output)[rows]
    return ctranslate2.StorageView.from_array(np.ascontiguousarray(array))
