"""Fake translators for the translation-graph tests: imported only when a test registry creates
one. `tag` marks each word with the target language (`cat` en->pt: `cat~pt`), so a chain's output
shows its hops; `flap` changes its output on every call (a pivot that rewords between updates)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from speech.translate.nmt import RetranslationStream

PAIRS = {"tag": (("en", "pt"), ("pt", "es"), ("es", "fr"), ("en", "es"), ("pt", "en"), ("es", "en")),
         "flap": (("pt", "es"),), "absent": (("en", "es"),)}


@dataclass(frozen=True)
class FakeMtConfig:
    mask: int | None = 0
    shout: bool = False  # an option only this engine knows
    close: bool = False  # end every output with a full stop, as Bergamot does for an unfinished sentence


class FakeEngine:
    def __init__(self, name: str, config: FakeMtConfig) -> None:
        self.name, self.config = name, config
        self.mask, self.boundary_mask, self.align = config.mask, config.mask, "edit"
        self.calls: list[tuple[str, str, str]] = []
        self._flips = itertools.count()

    def translate(self, text: str, source: str, target: str) -> str:
        self.calls.append((text, source, target))
        words = [f"{w}~{target}" for w in text.split()]
        if self.name == "flap" and next(self._flips) % 2 and len(words) > 1:
            words[0], words[1] = words[1], words[0] + "!"  # reworded and reordered on odd calls
        if self.config.close and words and not words[-1].endswith("."):
            words[-1] += "."
        return " ".join(w.upper() if self.config.shout else w for w in words)

    def open(self, source: str, target: str, examples: object = None) -> RetranslationStream:
        assert (source, target) in PAIRS[self.name], (self.name, source, target)
        return RetranslationStream(self, source, target, self.mask or 0, self.boundary_mask or 0, "edit")


def load_tag(config: FakeMtConfig, registry) -> FakeEngine:  # noqa: ANN001
    return registry.shared(("tag", config), lambda: FakeEngine("tag", config))


def load_flap(config: FakeMtConfig, registry) -> FakeEngine:  # noqa: ANN001
    return registry.shared(("flap", config), lambda: FakeEngine("flap", config))


def installed_pairs(name: str, options: dict) -> tuple[tuple[str, str], ...]:
    return PAIRS[name]
