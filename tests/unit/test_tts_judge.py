"""The round-trip judge is deterministic: beam search at temperature 0, and a repetition loop is
decoded again with a repetition penalty instead of faster-whisper's sampling fallback (which
`ctranslate2.set_random_seed` did not make repeatable: one clip scored 30, 37, 30, 25 errors)."""

from types import SimpleNamespace

import numpy as np

import speech.tts.roundtrip as rt


class FakeWhisper:
    def __init__(self, texts):
        self.texts = list(texts)
        self.calls = []

    def transcribe(self, audio, **options):
        self.calls.append(options)
        return iter([SimpleNamespace(text=self.texts.pop(0))]), None


def _judge(monkeypatch, texts):
    model = FakeWhisper(texts)
    monkeypatch.setattr(rt, "_whisper", lambda registry, language: (model, SimpleNamespace(language=language)))
    heard = rt.transcribe(None, np.full(8000, 0.1, np.float32), 16000, "pt")
    return heard, model.calls


def test_judge_never_samples(monkeypatch):
    heard, calls = _judge(monkeypatch, ["todos os substantivos ao lado do mundo"])
    assert heard == "todos os substantivos ao lado do mundo"
    assert len(calls) == 1
    assert calls[0]["temperature"] == 0.0 and calls[0]["beam_size"] == 5


def test_a_repetition_loop_is_decoded_again_with_a_penalty(monkeypatch):
    loop = "Há-la ou não, " + "tch-" * 25 + "tch."
    heard, calls = _judge(monkeypatch, [loop, "para o norte e de fácil acesso"])
    assert heard == "para o norte e de fácil acesso"
    assert [c.get("repetition_penalty") for c in calls] == [None, rt.JudgeConfig().loop_repetition_penalty]
    assert all(c["temperature"] == 0.0 for c in calls)


def test_loop_test_is_whispers_compression_ratio():
    assert rt.is_loop("tch-" * 30, 2.0)
    assert not rt.is_loop("Todos os substantivos ao lado do mundo dizem que você sempre começa com uma letra.", 2.0)
    assert not rt.is_loop("", 2.0)
