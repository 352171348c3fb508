"""Prompt layouts: the prompt is a list of text segments, tokenised one by one.

Layout (few-shot, for base models such as Gemma-3-270M):

    [instruction + examples] [ctx src 1 / tgt 1] ... [ctx src k / tgt k] [current src] [committed tgt] | tentative

    Translate English to Spanish.\\n\\nEnglish: ...\\nSpanish: ...\\n\\n      <- instruction prefix (attention sink)
    English: <finished sentence>\\nSpanish: <its translation>\\n\\n          <- last few sentences (context)
    English: <current source so far>\\nSpanish:                           <- grows with the source
     <committed target words>                                             <- never retracted
     <tentative target>                                                   <- generated, rewound each update

Source and target are interleaved by sentence, so a finished sentence's target never needs
re-evaluation while it stays in the context, and the instruction prefix is never re-evaluated.
Segments are tokenised separately (and memoised), so the tokens of an unchanged segment are the
same on every update and the KV cache keeps them. Chat models get the same order through their chat
template: the instruction as the system turn, examples and context as earlier turns.
"""

from __future__ import annotations

from dataclasses import dataclass

from .languages import NAMES


@dataclass(frozen=True)
class FewShotLayout:
    source: str
    target: str
    examples: tuple[tuple[str, str], ...]

    def _pair(self, src: str, tgt: str) -> str:
        return f"{NAMES[self.source]}: {src}\n{NAMES[self.target]}: {tgt}\n\n"

    def prefix(self) -> str:
        head = f"Translate {NAMES[self.source]} to {NAMES[self.target]}.\n\n"
        return head + "".join(self._pair(s, t) for s, t in self.examples)

    def context(self, src: str, tgt: str) -> str:
        return self._pair(src, tgt)

    def current(self, src: str) -> str:
        return f"{NAMES[self.source]}: {src}\n{NAMES[self.target]}:"

    def committed(self, words: list[str]) -> str:
        return " " + " ".join(words) if words else ""


@dataclass(frozen=True)
class ChatLayout:
    """Instruction models: the model's own chat template renders the same order of turns."""

    source: str
    target: str
    examples: tuple[tuple[str, str], ...]
    render: object  # callable(messages: list[tuple[role, content]], add_assistant: bool) -> str

    def _system(self) -> list[tuple[str, str]]:
        s, t = NAMES[self.source], NAMES[self.target]
        turns = [("system", f"You translate {s} into {t}. Reply with the {t} translation only, on one line.")]
        for src, tgt in self.examples:
            turns += [("user", src), ("assistant", tgt)]
        return turns

    def prefix(self) -> str:
        return self.render(self._system(), False)  # type: ignore[operator]

    def context(self, src: str, tgt: str) -> str:
        # The text one more exchange adds to the rendered conversation.
        base = self._system()
        before = self.render(base, False)  # type: ignore[operator]
        after = self.render(base + [("user", src), ("assistant", tgt)], False)  # type: ignore[operator]
        return after[len(before) :] if after.startswith(before) else after

    def current(self, src: str) -> str:
        base = self._system()
        before = self.render(base, False)  # type: ignore[operator]
        after = self.render(base + [("user", src)], True)  # type: ignore[operator]
        return after[len(before) :] if after.startswith(before) else after

    def committed(self, words: list[str]) -> str:
        return " ".join(words)
