"""The simultaneous translator: source TextUpdates in, target TextUpdates out.

Backend-agnostic: a `TranslationStream` (LLM with KV cache, or NMT re-translation) proposes a
hypothesis for the current sentence, continuing the committed target words; a `TargetPolicy`
decides how much of it to commit. Committed words are appended to the output and never come back:
the next hypothesis is forced (LLM) or aligned (NMT) to continue them. At the end of a source
sentence, of speech (`final`) or of the stream, everything is committed and the sentence leaves
the working area.

Only the committed source words are translated; the source's tentative tail never reaches the
output, because translating words the recogniser may still retract would multiply target erasure.
A policy with `lookahead` uses it as a test instead: the words that the translation of the
committed source and the translation of the source plus its tentative tail share are the words
the next source update would most likely confirm, so they are committed without waiting for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from speech.types import TextUpdate, Word

from .hypothesis import Hypothesis, TranslationStream
from .policy import TargetPolicy
from .segment import SentenceSegmenter, ends_sentence


@dataclass
class UpdateStats:
    """Model work behind one emitted update."""

    tokens_evaluated: int = 0
    rewound: int = 0
    generated: int = 0
    calls: int = 0
    ms: float = 0.0  # wall time in the backend
    cpu_ms: float = 0.0  # CPU time of the process meanwhile (all threads): load-independent
    cache_tokens: int = 0

    def add(self, hyp: Hypothesis, seconds: float, cpu_seconds: float = 0.0) -> None:
        self.ms += 1000 * seconds
        self.cpu_ms += 1000 * cpu_seconds
        self.tokens_evaluated += hyp.tokens_evaluated
        self.rewound += hyp.rewound
        self.generated += hyp.generated
        self.calls += 1
        self.cache_tokens = hyp.cache_tokens


@dataclass
class Emitted:
    update: TextUpdate
    stats: UpdateStats


@dataclass
class SimultaneousTranslation:
    """One stream's translation state; implements speech.stage.SimultaneousTranslator."""

    stream: TranslationStream
    policy: TargetPolicy
    language: str = ""
    segmenter: SentenceSegmenter = field(default_factory=SentenceSegmenter)
    committed: list[str] = field(default_factory=list)  # committed target words of this sentence
    sentences: int = 0
    loops: int = 0
    copies: int = 0  # finished sentences the model copied instead of translating (Gemma does)
    _hypothesised: int = 0  # source words of the current sentence behind the last hypothesis
    _tentative: tuple[str, ...] = ()
    # the committed source words not yet in a finished sentence, with their times: each target
    # word gets the times of the source word at the same relative position (see `_aligned`)
    _source: list[Word] = field(default_factory=list)

    # -- protocol -------------------------------------------------------------------------
    def update(self, source: TextUpdate) -> TextUpdate:
        return _merge([e.update for e in self.step(source)], source)

    def finish(self) -> TextUpdate:
        return _merge([e.update for e in self.finish_steps()], None, end=True)

    def reset(self) -> None:
        self.segmenter.reset()
        self.stream.reset()
        self.policy.reset()
        self.committed = []
        self._hypothesised = 0
        self._tentative = ()
        self._source = []

    # -- the work ---------------------------------------------------------------------------
    def step(self, source: TextUpdate) -> list[Emitted]:
        """The target updates for one source update (none when nothing changed)."""
        out: list[Emitted] = []
        for word in source.committed:
            self._source.append(word)
            for sentence in self.segmenter.push(word.text):
                out.append(self._end_sentence(sentence, source))
        if source.final:
            sentence = self.segmenter.flush()
            if sentence:
                out.append(self._end_sentence(sentence, source))
        elif self.segmenter.words and len(self.segmenter.words) != self._hypothesised:
            out.append(self._advance(source))
        return out

    def finish_steps(self, source_time: float = 0.0) -> list[Emitted]:
        """End of stream: commit everything; the last update has final and end_of_stream."""
        out: list[Emitted] = []
        sentence = self.segmenter.flush()
        if sentence:
            out.append(self._end_sentence(sentence, TextUpdate(source_time=source_time)))
        if out:
            last = out[-1]
            out[-1] = Emitted(_with(last.update, final=True, end_of_stream=True), last.stats)
        else:
            out.append(Emitted(TextUpdate(final=True, end_of_stream=True, source_time=source_time, language=self.language), UpdateStats()))
        return out

    def _advance(self, source: TextUpdate) -> Emitted:
        stats = UpdateStats()
        words = list(self.segmenter.words)
        t0, c0 = time.perf_counter(), time.process_time()
        hyp = self.stream.hypothesis(words, self.committed, complete=False)
        stats.add(hyp, time.perf_counter() - t0, time.process_time() - c0)
        self.loops += hyp.looped
        ahead = None
        tail = _sentence_head([w.text for w in source.tentative]) if getattr(self.policy, "lookahead", False) else []
        if tail:
            t0, c0 = time.perf_counter(), time.process_time()
            ahead = self.stream.hypothesis(words + tail, self.committed, complete=False)
            stats.add(ahead, time.perf_counter() - t0, time.process_time() - c0)
        total = min(self.policy.commit(len(self.committed), hyp, len(words), source=words, ahead=ahead),
                    max(hyp.stable, len(self.committed)))
        new = hyp.words[len(self.committed) : total]
        self.committed += new
        self._hypothesised = len(words)
        self._tentative = tuple(hyp.words[max(total, len(self.committed)) :])
        start = len(self.committed) - len(new)
        timed = self._aligned(new, start, max(len(hyp.words), len(self.committed)), self._source[: len(words)])
        return Emitted(self._make(timed, self._tentative, source, final=False), stats)

    def _end_sentence(self, sentence: list[str], source: TextUpdate) -> Emitted:
        stats = UpdateStats()
        t0, c0 = time.perf_counter(), time.process_time()
        hyp = self.stream.hypothesis(sentence, self.committed, complete=True)
        stats.add(hyp, time.perf_counter() - t0, time.process_time() - c0)
        self.loops += hyp.looped
        self.copies += hyp.copied
        new = hyp.words[len(self.committed) :]
        target = self.committed + new
        timed = self._aligned(new, len(self.committed), len(target), self._source[: len(sentence)])
        del self._source[: len(sentence)]
        self.stream.end_sentence(sentence, target)
        self.policy.reset()
        self.committed = []
        self._hypothesised = 0
        self._tentative = ()
        self.sentences += 1
        return Emitted(self._make(timed, (), source, final=True), stats)

    @staticmethod
    def _aligned(new: list[str], first: int, length: int, source: list[Word]) -> list[Word]:
        """Target words `first`.. of a sentence translation `length` words long, each with the
        times of the source word at the same relative position among the `source` words read
        (a monotonic alignment: with no word aligner at hand, the listener's lag of a translated
        word is measured from the source word it most likely renders)."""
        if not source:
            return [Word(w) for w in new]
        out = []
        for j, w in enumerate(new, first):
            src = source[min(len(source) - 1, (j * len(source)) // max(length, 1))]
            out.append(Word(w, src.start, src.end))
        return out

    def _make(self, new: list[Word], tentative: tuple[str, ...], source: TextUpdate, final: bool) -> TextUpdate:
        return TextUpdate(
            committed=tuple(new),
            tentative=tuple(Word(w) for w in tentative),
            final=final,
            source_time=source.source_time,
            wall_time=source.wall_time,
            language=self.language,
        )


def _sentence_head(words: list[str]) -> list[str]:
    """The words up to the first sentence end (the rest belongs to the next sentence)."""
    for i, w in enumerate(words):
        if ends_sentence(w):
            return words[: i + 1]
    return words


def _with(u: TextUpdate, **changes: object) -> TextUpdate:
    import dataclasses

    return dataclasses.replace(u, **changes)


def _merge(updates: list[TextUpdate], source: TextUpdate | None, end: bool = False) -> TextUpdate:
    """Several updates as one (for the one-in one-out protocol)."""
    if not updates:
        return TextUpdate(source_time=source.source_time if source else 0.0, end_of_stream=end, final=end)
    committed = tuple(w for u in updates for w in u.committed)
    last = updates[-1]
    return _with(last, committed=committed, final=any(u.final for u in updates) or end, end_of_stream=end or last.end_of_stream)
