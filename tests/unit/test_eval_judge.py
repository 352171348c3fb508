"""The ASR-BLEU judge reads output speech with the same limits whatever the streaming defaults."""

from __future__ import annotations

from speech.asr.backends import WhisperBaseConfig, WhisperTinyEnConfig
from speech.eval.asrbleu import OutputTranscriber


class Registry:
    def __init__(self) -> None:
        self.created: dict = {}

    def config(self, kind: str, name: str, **options):
        return WhisperBaseConfig(**options)

    def create(self, kind: str, name: str, **options):
        self.created = options
        return object()


def test_the_streaming_recognisers_limit_tokens_per_second_of_buffer():
    assert WhisperBaseConfig().new_tokens_per_s == 8.0
    assert WhisperTinyEnConfig().new_tokens_per_s == 8.0


def test_the_judge_decodes_a_whole_window_without_the_streaming_token_limit():
    registry = Registry()
    OutputTranscriber(registry, "es")._recognizer()
    assert registry.created["max_new_tokens"] == 224
    assert registry.created["new_tokens_per_s"] is None
    assert registry.created["language"] == "es"
