"""Where a model runs: `cpu`, `cuda` or `auto`, checked against what this machine and build offer.

`cuda` where it is absent is one clear error (`DeviceError`), not a crash deep in an engine; `auto`
takes the GPU when the engine can use one and the CPU otherwise. The checks import the engine
(CTranslate2, llama.cpp) only when called.
"""

from __future__ import annotations

from typing import Any

from .errors import DeviceError
from .options import DEVICES


def check_device(device: str, key: str = "device") -> str:
    if device not in DEVICES:
        raise DeviceError(key, f"expected one of {', '.join(DEVICES)}", device)
    return device


def cuda_devices_ctranslate2() -> int:
    """GPUs CTranslate2 (the recogniser's engine) can use; 0 when its build or the machine has none."""
    try:
        import ctranslate2
    except ImportError:
        return 0
    try:
        return int(ctranslate2.get_cuda_device_count())
    except Exception:  # noqa: BLE001 - a build without CUDA may raise instead of returning 0
        return 0


def llama_gpu_offload() -> bool:
    """Whether this llama.cpp build (cyllama) can offload layers to a GPU."""
    try:
        from cyllama.llama import llama_cpp as L
    except ImportError:
        return False
    L.ggml_backend_load_all()
    return bool(L.llama_supports_gpu_offload())


def recognizer_device(device: str, key: str = "asr_options.device") -> str:
    """The CTranslate2 device ("cpu" or "cuda") for an asked `device`."""
    check_device(device, key)
    if device == "cpu":
        return "cpu"
    count = cuda_devices_ctranslate2()
    if device == "auto":
        return "cuda" if count else "cpu"
    if not count:
        raise DeviceError(key, "", message=(
            "device cuda for the recogniser: CTranslate2 sees no CUDA device here "
            f"(ctranslate2.get_cuda_device_count() = 0; {key}); use --device cpu or --device auto"))
    return "cuda"


def llm_gpu_layers(device: str, key: str = "mt_options.device") -> int:
    """llama.cpp `n_gpu_layers` for an asked `device`: 0 on the CPU, every layer on the GPU."""
    check_device(device, key)
    if device == "cpu":
        return 0
    offload = llama_gpu_offload()
    if device == "auto":
        return -1 if offload else 0
    if not offload:
        raise DeviceError(key, "", message=(
            "device cuda for the LLM translator: this llama.cpp build (cyllama) cannot offload to a GPU "
            f"(llama_supports_gpu_offload() is false; {key}); use --device cpu or --device auto, "
            "or install a GPU build of cyllama"))
    return -1


def check_devices(config: Any, registry: Any) -> None:
    """Fail early, before any model loads, when `config` asks for a device that is not here."""
    from speech.asr.stage import recognizer_name

    if "asr" in config.stages and "device" in registry.option_names("recognizer", recognizer_name(config.asr_model)[0]):
        recognizer_device(config.asr_options.device)
    if "mt" in config.stages and config.mt_options.device != "cpu":
        backend = config.mt_backend
        if backend == "default":
            from speech.translate.backends import default_backend

            backend = default_backend(config.source, config.target, registry)
        from speech.translate.graph import is_path_spec, parse_path

        # A path is checked hop by hop: one LLM hop on a device that is not here fails it.
        engines = [edge.engine for edge in parse_path(backend)] if is_path_spec(backend) else [backend]
        for engine in engines:
            if engine.endswith(".gguf"):
                engine = "gguf"
            if ("translator", engine) in registry.specs and "device" in registry.option_names("translator", engine):
                llm_gpu_layers(config.mt_options.device)
