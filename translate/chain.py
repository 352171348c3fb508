"""A chain of engines as one translation stream (a path of the translation graph, graph.py).

Each update re-translates the current source sentence through every hop: the pivot hops translate
the whole sentence so far, the last hop proposes the target hypothesis continuing the committed
target words (aligned by a re-translation engine, forced by an LLM). The commit policy then runs
on the final language only (simultaneous.py), so committed target words are never retracted
whatever the pivots do between updates. Sentence segmentation and context are the translator's,
as for one engine; each hop's stream keeps its own context (an LLM hop sees the pivot sentences).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .hypothesis import Hypothesis, TranslationStream
from .segment import ends_sentence


def drop_invented_end(pivot: list[str], source: list[str]) -> list[str]:
    """The pivot words without the sentence end an engine adds to an unfinished source (Bergamot
    and the LLM close every sentence): the next hop should see an unfinished sentence too."""
    if not pivot or (source and ends_sentence(source[-1])):
        return pivot
    last = pivot[-1].rstrip(".!?")
    return pivot[:-1] + [last] if last else pivot[:-1]


@dataclass
class ChainStream:
    """Implements TranslationStream over `hops` (one opened stream per edge, in order)."""

    hops: list[TranslationStream]
    strip_pivot_end: bool = True
    _pivots: list[list[str]] = field(default_factory=list)  # each hop's input of the last hypothesis

    def hypothesis(self, source: list[str], committed: list[str], complete: bool) -> Hypothesis:
        words = list(source)
        inputs = [words]
        tokens = rewound = generated = cache = 0
        looped = False
        for hop in self.hops[:-1]:
            h = hop.hypothesis(words, [], complete=True)
            tokens, rewound, generated, cache = tokens + h.tokens_evaluated, rewound + h.rewound, generated + h.generated, cache + h.cache_tokens
            looped = looped or h.looped
            words = drop_invented_end(h.words, source) if self.strip_pivot_end and not complete else list(h.words)
            inputs.append(words)
        last = self.hops[-1].hypothesis(words, committed, complete)
        self._pivots = inputs
        return Hypothesis(
            last.words, last.stable,
            tokens_evaluated=tokens + last.tokens_evaluated, rewound=rewound + last.rewound,
            generated=generated + last.generated, looped=looped or last.looped,
            cache_tokens=cache + last.cache_tokens, copied=last.copied,
        )

    def end_sentence(self, source: list[str], target: list[str]) -> None:
        # The pivots of the sentence's last (complete) hypothesis: each hop keeps its own pair as context.
        inputs = self._pivots if self._pivots and self._pivots[0] == list(source) else [list(source)] * len(self.hops)
        for i, hop in enumerate(self.hops):
            hop.end_sentence(inputs[i], inputs[i + 1] if i + 1 < len(self.hops) else target)
        self._pivots = []

    def warm_up(self) -> None:
        for hop in self.hops:
            if hasattr(hop, "warm_up"):
                hop.warm_up()

    def reset(self) -> None:
        self._pivots = []
        for hop in self.hops:
            hop.reset()

    def close(self) -> None:
        for hop in self.hops:
            hop.close()
