"""Feed text to a simultaneous translator word by word and trace what it displays."""

from __future__ import annotations

from dataclasses import dataclass, field

from speech.types import TextUpdate, Word

from .metrics import Trace
from .simultaneous import Emitted, SimultaneousTranslation


@dataclass
class Run:
    trace: Trace
    target: list[str]
    tokens_per_update: list[int] = field(default_factory=list)
    update_ms: list[float] = field(default_factory=list)
    cache_tokens: list[int] = field(default_factory=list)
    update_cpu_ms: list[float] = field(default_factory=list)
    generated: list[int] = field(default_factory=list)  # output tokens per update


def translate_stream(translation: SimultaneousTranslation, words: list[str]) -> Run:
    """One source text as a stream of committed words, then end of stream."""
    trace = Trace(source_words=len(words))
    run = Run(trace, [])

    def absorb(emitted: list[Emitted], read: int) -> None:
        for e in emitted:
            new = [w.text for w in e.update.committed]
            run.target += new
            trace.record(read, run.target, [w.text for w in e.update.tentative], len(new))
            if e.stats.calls:
                run.tokens_per_update.append(e.stats.tokens_evaluated)
                run.update_ms.append(e.stats.ms)
                run.cache_tokens.append(e.stats.cache_tokens)
                run.update_cpu_ms.append(e.stats.cpu_ms)
                run.generated.append(e.stats.generated)

    for i, word in enumerate(words, 1):
        absorb(translation.step(TextUpdate(committed=(Word(word),), source_time=float(i))), i)
    absorb(translation.finish_steps(float(len(words))), len(words))
    return run
