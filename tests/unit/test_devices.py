"""`--device cpu|cuda|auto`: resolution, one-line errors where CUDA is absent, and the pass-through
to CTranslate2 (`device`) and llama.cpp (`n_gpu_layers`)."""

import pytest

from speech import devices
from speech.errors import DeviceError
from speech.pipeline import PipelineConfig


def test_recognizer_device(monkeypatch):
    monkeypatch.setattr(devices, "cuda_devices_ctranslate2", lambda: 0)
    assert devices.recognizer_device("cpu") == "cpu"
    assert devices.recognizer_device("auto") == "cpu"
    with pytest.raises(DeviceError) as e:
        devices.recognizer_device("cuda")
    assert "no CUDA device" in str(e.value) and "--device cpu" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setattr(devices, "cuda_devices_ctranslate2", lambda: 1)
    assert devices.recognizer_device("auto") == "cuda" and devices.recognizer_device("cuda") == "cuda"
    with pytest.raises(DeviceError, match="cpu, cuda, auto"):
        devices.recognizer_device("tpu")


def test_llm_gpu_layers(monkeypatch):
    monkeypatch.setattr(devices, "llama_gpu_offload", lambda: False)
    assert devices.llm_gpu_layers("cpu") == 0 and devices.llm_gpu_layers("auto") == 0
    with pytest.raises(DeviceError, match="cannot offload"):
        devices.llm_gpu_layers("cuda")
    monkeypatch.setattr(devices, "llama_gpu_offload", lambda: True)
    assert devices.llm_gpu_layers("cuda") == -1 and devices.llm_gpu_layers("auto") == -1


def test_this_machine_answers_without_raising():
    assert devices.cuda_devices_ctranslate2() >= 0
    assert devices.llama_gpu_offload() in (True, False)
    # auto always works: the CPU where nothing else is usable
    assert devices.recognizer_device("auto") in ("cpu", "cuda")


def test_check_devices_before_any_model_loads(monkeypatch):
    from speech.backends import default_registry

    registry = default_registry()
    monkeypatch.setattr(devices, "cuda_devices_ctranslate2", lambda: 0)
    monkeypatch.setattr(devices, "llama_gpu_offload", lambda: False)
    devices.check_devices(PipelineConfig(asr_options={"device": "auto"}), registry)
    with pytest.raises(DeviceError, match="recogniser"):
        devices.check_devices(PipelineConfig(asr_options={"device": "cuda"}), registry)
    # The LLM is checked only when the pair's translator is one; Apertium runs on the CPU anyway.
    llm = PipelineConfig(source="en", target="de", stages=("mt",), mt_options={"device": "cuda"})
    with pytest.raises(DeviceError, match="LLM"):
        devices.check_devices(llm, registry)
    devices.check_devices(llm.replace(mt_backend="apertium", target="es"), registry)
    # A path is checked hop by hop: a Gemma hop fails it, Bergamot and Apertium hops do not.
    with pytest.raises(DeviceError, match="LLM"):
        devices.check_devices(llm.replace(mt_backend="gemma-270m:en-es,apertium:es-pt", target="pt"), registry)
    devices.check_devices(llm.replace(mt_backend="bergamot:en-pt,apertium:pt-es", target="es"), registry)
    devices.check_devices(PipelineConfig(asr_model="pocketsphinx", asr_options={"device": "cuda"}), registry)


def test_device_reaches_the_engines(monkeypatch):
    """The typed option becomes CTranslate2's `device` and llama.cpp's `n_gpu_layers`."""
    from speech.asr.stage import recognizer_options
    from speech.backends import default_registry
    from speech.models import whisper as whisper_models

    registry = default_registry()
    options = PipelineConfig(asr_options={"device": "auto", "engine": {"cpu_threads": 1}}).asr_options
    assert recognizer_options(registry, "whisper-base", options) == {"cpu_threads": 1, "device": "auto"}
    assert recognizer_options(registry, "pocketsphinx", PipelineConfig().asr_options) == {}

    seen = {}
    monkeypatch.setattr(devices, "cuda_devices_ctranslate2", lambda: 1)
    from speech.asr.whisper import WhisperConfig, load_model

    registry2 = default_registry()
    monkeypatch.setattr(whisper_models, "load", lambda *a, **kw: seen.update(kw) or "model")
    assert load_model(registry2, WhisperConfig(model="tiny.en", device="auto")) == "model"
    assert seen["device"] == "cuda"

    from speech.translate import llm

    captured = {}
    monkeypatch.setattr(llm, "LlamaModel", lambda path, options: captured.setdefault("options", options))
    monkeypatch.setattr(devices, "llama_gpu_offload", lambda: True)
    llm.load_llm(llm.LlmConfig(device="cuda", vocab="full"), default_registry())
    assert captured["options"].n_gpu_layers == -1
    captured.clear()
    llm.load_llm(llm.LlmConfig(device="cpu", vocab="full"), default_registry())
    assert captured["options"].n_gpu_layers == 0
