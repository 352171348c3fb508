"""Real-time speech-to-speech translation: streaming recognition -> simultaneous translation ->
streaming synthesis, on a plain CPU.

The public API (docs/api.md)::

    import speech

    result = speech.translate_file("talk.wav", "en", "es", output="talk.es.wav")
    pipeline = speech.Pipeline(speech.PipelineConfig(source="en", target="de"))
    async for event in pipeline.stream(chunks): ...

Names are imported on first use, so `import speech` loads no model and no engine.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> module that defines it
_EXPORTS = {
    "Pipeline": "speech.api",
    "PipelineConfig": "speech.pipeline",
    "AsrOptions": "speech.options",
    "MtOptions": "speech.options",
    "TtsOptions": "speech.options",
    "CodecOptions": "speech.options",
    "ServerOptions": "speech.options",
    "Recognition": "speech.api",
    "Translation": "speech.api",
    "SpeechAudio": "speech.api",
    "EncodedAudio": "speech.api",
    "Result": "speech.api",
    "translate_file": "speech.api",
    "load_config": "speech.api",
    "load_server_options": "speech.api",
    "serve": "speech.api",
    "ConfigError": "speech.errors",
    "DeviceError": "speech.errors",
    "UserError": "speech.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'speech' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
