"""Codec backends: each factory returns a fresh encoder/decoder pair (codecs keep per-stream state)."""

from __future__ import annotations

from speech.registry import BackendSpec, Registry


def register(registry: Registry) -> None:
    registry.register(BackendSpec(
        "codec", "pcm16", "speech.codecs.pcm:create", "speech.codecs.frames:CodecConfig",
        "uncompressed 16-bit PCM in 20 ms packets",
    ))
    registry.register(BackendSpec(
        "codec", "opus", "speech.codecs.opus:create", "speech.codecs.frames:CodecConfig",
        "Opus (libopus via opuslib), 20 ms frames at 8/12/16/24/48 kHz, loss concealment",
        requires=("opuslib",),
    ))
    registry.register(BackendSpec(
        "codec-decoder", "encodec", "speech.codecs.neural:create_encodec", "speech.codecs.neural:EncodecConfig",
        "EnCodec 24 kHz token decoder (codec tokens -> waveform) from a local weights file",
        requires=("torch", "encodec"),
    ))
