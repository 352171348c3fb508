"""Streaming Whisper: re-decode a trimmed audio buffer on each update (whisper_streaming design).

- The buffer holds the audio of the current speech segment since the last trim point.
- Words already committed and still inside the buffer are removed from each new hypothesis (by
  time, then by matching the committed tail), so the commit policy only sees new words.
- Committed words that left the buffer become the prompt (never words still in the buffer:
  Whisper would skip them).
- Trimming: once the buffer exceeds `trim_s`, it is cut after the last committed word (at a
  sentence end when one is committed), so each update costs the same however long the stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from speech.types import AudioChunk, Word

from .normalize import word_key

SAMPLE_RATE = 16000


@dataclass
class WhisperConfig:
    model: str = "base"  # embedded name, local CTranslate2 folder, or hub id (allow_download)
    language: str | None = None  # None: detect (multilingual models)
    cpu_threads: int | None = None  # None: the registry's thread budget (speech.budget)
    workers: int | None = None  # decodes that run in parallel on the shared model; None: the budget
    compute_type: str = "int8"
    beam_size: int = 1
    chunk_length: int = 30  # longest buffer one decode takes, in seconds
    # Encoder window: None = always 30 s (as Whisper was trained); a number = the buffer plus this
    # much padding (asr/window.py), several times cheaper per decode.
    encoder_pad_s: float | None = None
    # The last decode of a segment (at a pause, or the end of the stream) with the whole 30-s window
    # whatever encoder_pad_s: it commits the segment's tail, the words the padded window guesses
    # worst ("old -a -sposed" for "ill -disposed"), for one full encoder pass per pause.
    full_window_at_close: bool = False
    trim_s: float = 12.0  # trim the buffer once it holds more than this much audio
    prompt_words: int = 40
    max_new_tokens: int = 96
    # A tighter limit for short buffers: `new_tokens_floor` + `new_tokens_per_s` x the buffer's
    # seconds (None: only max_new_tokens). Whisper's loops on a short buffer ("o que é o que é ...")
    # run to the limit, and each generated token costs a decoder pass.
    new_tokens_per_s: float | None = None
    new_tokens_floor: int = 16
    allow_download: bool = False
    # Batching across sessions (asr/batching.py), off by default: the most decodes of concurrent
    # streams in one call (0: off), and how long a decode waits for the others (seconds).
    batch_sessions: int = 0
    batch_window_s: float = 0.05
    device: str = "cpu"  # "cpu", "cuda" or "auto" (speech.devices)


def load_model(registry: Any, config: WhisperConfig) -> Any:
    from speech.models import whisper as whisper_models

    from speech.devices import recognizer_device

    device = recognizer_device(config.device)
    threads = registry.threads("whisper", config.cpu_threads)
    workers = registry.threads("whisper_workers", config.workers)
    if config.batch_sessions:  # one batch runs at a time: one worker with every core of the budget
        threads = config.cpu_threads or registry.budget.cores
        workers = config.workers or 1
    key = ("whisper", config.model, threads, workers, config.compute_type, config.encoder_pad_s, device)
    windowed: dict[str, Any] = {"num_workers": workers}
    if config.encoder_pad_s is not None:
        from .window import WindowedWhisperModel

        windowed |= {"model_class": WindowedWhisperModel, "pad_s": config.encoder_pad_s}
    return registry.shared(key, lambda: whisper_models.load(
        config.model, threads, config.compute_type, config.allow_download, device=device, **windowed))


def transcribe_words(model: Any, audio: np.ndarray, config: WhisperConfig, prompt: str = "", offset: float = 0.0) -> tuple[list[Word], str]:
    """One greedy decode of `audio` with word timestamps; returns (words, language)."""
    segments, info = model.transcribe(
        audio,
        language=config.language,
        initial_prompt=prompt or None,
        beam_size=config.beam_size,
        temperature=0.0,
        condition_on_previous_text=False,
        word_timestamps=True,
        vad_filter=False,
        chunk_length=config.chunk_length,
        max_new_tokens=token_limit(config, len(audio) / SAMPLE_RATE),
        without_timestamps=False,
    )
    words: list[Word] = []
    for seg in segments:
        for w in seg.words or ():
            text = w.word.strip()
            if text:
                words.append(Word(text, offset + float(w.start), offset + float(w.end), float(w.probability)))
    return cut_repetition(words), info.language


def token_limit(config: WhisperConfig, seconds: float) -> int:
    """How many tokens one decode of `seconds` of audio may generate."""
    if getattr(config, "new_tokens_per_s", None) is None:
        return config.max_new_tokens
    return min(config.max_new_tokens, config.new_tokens_floor + int(config.new_tokens_per_s * seconds))


def cut_repetition(words: list[Word], longest: int = 16) -> list[Word]:
    """Greedy decoding can loop ("however, however, however", or a whole sentence again, which a
    short encoder window makes likelier). Keep the first occurrence and drop the rest of the
    hypothesis, so the commit policy never sees the loop: a word or word pair said three times
    in a row, or a run of 3 to `longest` words said twice in a row (read speech does not)."""
    keys = [word_key(w.text) for w in words]
    for i in range(len(keys)):
        for n in range(1, min(longest, (len(keys) - i) // 2) + 1):
            repeats = 3 if n <= 2 else 2
            gram = keys[i : i + n]
            if all(keys[i + k * n : i + (k + 1) * n] == gram for k in range(1, repeats)):
                return words[: i + n]
    return words


class WhisperRecognizer:
    """One stream's state over a shared, read-only WhisperModel."""

    sample_rate = SAMPLE_RATE

    def __init__(self, model: Any, config: WhisperConfig, batcher: Any = None) -> None:
        self.model = model
        self.config = config
        self.batcher = batcher  # a DecodeBatcher shared with other streams (asr/batching.py), or None
        if batcher is not None:
            batcher.register(self)
        self.language = config.language or ""
        self.reset()

    def reset(self) -> None:
        self._audio = np.zeros(0, dtype=np.float32)
        self._start = 0.0  # source time of the buffer's first sample
        self._committed: list[Word] = []  # every committed word of the stream
        self._in_buffer = 0  # how many of the last committed words lie inside the buffer
        self._hypothesis: list[Word] = []
        self._decoded_end = -1.0
        self.decodes = 0

    # -- audio ----------------------------------------------------------------------------------
    @property
    def buffer_end(self) -> float:
        return self._start + len(self._audio) / SAMPLE_RATE

    @property
    def buffer_seconds(self) -> float:
        return len(self._audio) / SAMPLE_RATE

    def feed(self, chunk: AudioChunk) -> None:
        if chunk.sample_rate != SAMPLE_RATE:
            raise ValueError(f"Whisper takes {SAMPLE_RATE} Hz audio, got {chunk.sample_rate} Hz")
        if not len(self._audio):
            self._start = chunk.start
        self._audio = np.concatenate([self._audio, chunk.samples])

    def close_segment(self) -> list[Word]:
        """The speaker paused: the segment's last uncommitted words, and a fresh buffer after."""
        words = self._decode(full=True) if self.config.full_window_at_close and self.config.encoder_pad_s is not None else self.hypothesis()
        self.commit(words)
        self._audio = np.zeros(0, dtype=np.float32)
        self._in_buffer = 0
        self._hypothesis = []
        return words

    # -- decoding -------------------------------------------------------------------------------
    def prompt(self) -> str:
        outside = self._committed[: len(self._committed) - self._in_buffer]
        return " ".join(w.text for w in outside[-self.config.prompt_words :])

    def hypothesis(self) -> list[Word]:
        """Decode the buffer (if it grew) and return the words not yet committed."""
        if self.buffer_end == self._decoded_end:
            return list(self._hypothesis)
        return self._decode()

    def _decode(self, full: bool = False) -> list[Word]:
        """Decode the buffer; `full`: with the whole 30-s encoder window (alone, not batched)."""
        if len(self._audio) < SAMPLE_RATE // 10:
            return []
        if full:
            from .window import full_window

            with full_window():
                words, language = transcribe_words(self.model, self._audio, self.config, self.prompt(), self._start)
        else:
            decode = self.batcher.transcribe if self.batcher is not None else partial(transcribe_words, self.model)
            words, language = decode(self._audio, self.config, self.prompt(), self._start)
        self.decodes += 1
        self.language = language
        self._decoded_end = self.buffer_end
        end = self.buffer_end
        # A word that starts after the audio ends was not heard (a decoding loop into the padding).
        words = [Word(w.text, w.start or 0.0, min(w.end or end, end), w.probability)
                 for w in words if (w.start or 0.0) < end - 0.02]
        self._hypothesis = self._strip_committed(words)
        return list(self._hypothesis)

    def _strip_committed(self, words: list[Word]) -> list[Word]:
        if not self._in_buffer:
            return words
        inside = self._committed[-self._in_buffer :]
        last_end = inside[-1].end or self._start
        # Words that start before the last committed word ended were already committed.
        fresh = [w for w in words if (w.start or 0.0) > last_end - 0.1]
        before = [word_key(w.text) for w in words[: len(words) - len(fresh)]]
        # Committed words re-decoded with later timestamps open `fresh`: drop that n-gram, unless
        # the decode already holds those words before `fresh` (then it is a real repeat: "that that").
        for n in range(min(5, len(fresh), len(inside)), 0, -1):
            tail = [word_key(w.text) for w in inside[-n:]]
            if tail == [word_key(w.text) for w in fresh[:n]] and before[-n:] != tail:
                return fresh[n:]
        return fresh

    def commit(self, words: list[Word]) -> None:
        """The policy committed `words` (a prefix of the last hypothesis): trim what we can."""
        if not words:
            return
        self._committed.extend(words)
        self._in_buffer += len(words)
        self._hypothesis = self._hypothesis[len(words) :]
        if self.buffer_seconds > self.config.trim_s:
            self._trim()

    def _trim(self) -> None:
        inside = self._committed[-self._in_buffer :]
        cut = None
        for i in range(len(inside) - 1, -1, -1):
            if inside[i].text.endswith((".", "?", "!")):
                cut = i
                break
        if cut is None or (inside[cut].end or 0.0) - self._start < self.config.trim_s / 2:
            cut = len(inside) - 1  # no sentence end far enough: cut after the last committed word
        t = inside[cut].end or self._start
        drop = int(round((t - self._start) * SAMPLE_RATE))
        if drop <= 0:
            return
        self._audio = self._audio[drop:]
        self._start = t
        self._in_buffer = len(inside) - cut - 1

    def finish(self) -> list[Word]:
        """End of stream: the words not yet committed, from a last decode."""
        return self.close_segment()


def check_limits(config: WhisperConfig) -> None:
    if config.max_new_tokens < 1 or config.new_tokens_floor < 1:
        raise ValueError("whisper max_new_tokens and new_tokens_floor must be at least 1")
    if config.new_tokens_per_s is not None and config.new_tokens_per_s <= 0:
        raise ValueError("whisper new_tokens_per_s must be above 0 (null: only max_new_tokens limits a decode)")


def make_whisper(config: WhisperConfig, registry: Any) -> WhisperRecognizer:
    check_limits(config)
    model = load_model(registry, config)
    batcher = None
    if config.batch_sessions:
        from .batching import DecodeBatcher

        batcher = registry.shared(("whisper-batcher", id(model), config.batch_sessions, config.batch_window_s),
                                  lambda: DecodeBatcher(model, config.batch_sessions, config.batch_window_s))
    return WhisperRecognizer(model, config, batcher)
