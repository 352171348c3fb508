"""The public API with the real embedded models: streams of text and audio, translate_file."""

import asyncio

import numpy as np
import pytest

import speech
from tests.conftest import DATA

CLIP = DATA / "speech" / "leopard" / "test.wav"


def run(agen):
    async def collect():
        return [e async for e in agen]
    return asyncio.run(collect())


@pytest.mark.slow
def test_stream_text_through_translation_synthesis_and_codec():
    config = speech.PipelineConfig(source="en", target="es", stages=("mt", "tts", "codec"), mt_backend="apertium",
                                   voice="espeak", codec="pcm16")
    events = run(speech.Pipeline(config).stream(["Good morning.", "The house is red."]))
    translations = [e for e in events if isinstance(e, speech.Translation)]
    packets = [e for e in events if isinstance(e, speech.EncodedAudio)]
    assert "casa" in " ".join(e.text for e in translations)
    assert not any(isinstance(e, speech.Recognition) for e in events)
    assert packets and all(p.codec == "pcm16" and p.data for p in packets)
    audio = run(speech.Pipeline(config.replace(stages=("mt", "tts"))).stream(["Good morning."]))
    speech_audio = [e for e in audio if isinstance(e, speech.SpeechAudio)]
    assert speech_audio and speech_audio[0].duration > 0.3 and speech_audio[0].samples.dtype == np.float32


@pytest.mark.slow
def test_stream_audio_recognises_at_any_rate():
    if not CLIP.exists():
        pytest.skip("../shared/data is not beside the repository")
    import soundfile as sf

    samples, rate = sf.read(CLIP, dtype="float32")
    from speech.audio import StreamingResampler

    samples = StreamingResampler(rate, 22050).process(samples, last=True)  # a rate the recogniser does not take

    async def chunks():  # an async iterable works as well as a list
        for i in range(0, len(samples), 2205):
            yield samples[i:i + 2205]

    config = speech.PipelineConfig(asr_model="whisper-tiny.en", stages=("asr",))
    events = run(speech.Pipeline(config).stream(chunks(), sample_rate=22050))
    text = " ".join(e.text for e in events if isinstance(e, speech.Recognition))
    assert "apostle" in text and "middle classes" in text
    assert events[-1].source_time == pytest.approx(len(samples) / 22050, abs=0.05)


@pytest.mark.slow
def test_translate_file_result_and_save(tmp_path):
    if not CLIP.exists():
        pytest.skip("../shared/data is not beside the repository")
    pipeline = speech.Pipeline(speech.PipelineConfig(asr_model="whisper-tiny.en", mt_backend="apertium",
                                                     voice="espeak", stages=("asr", "mt", "tts", "codec")))
    result = pipeline.translate_file(CLIP, compact=True, log=tmp_path / "events.jsonl")
    assert isinstance(result, speech.Result)
    assert "apostle" in result.recognized and "apóstol" in result.translated
    assert result.spoken and result.first_audio_s is not None and result.duration > 2
    assert any(r["kind"] == "meta" for r in result.events) and (tmp_path / "events.jsonl").exists()
    path = result.save(tmp_path / "out.wav")
    import soundfile as sf

    data, rate = sf.read(path)
    assert rate == result.sample_rate and len(data) == len(result.samples)


@pytest.mark.slow
def test_stream_to_several_targets_tags_each_event_with_its_language():
    config = speech.PipelineConfig(source="en", targets=("es", "pt"), stages=("mt", "tts"), voice="espeak")
    events = run(speech.Pipeline(config).stream(["The weather is nice today."]))
    audio = {e.language: e for e in events if isinstance(e, speech.SpeechAudio)}
    assert set(audio) == {"es", "pt"}
    translated = {e.language: e.text for e in events if isinstance(e, speech.Translation) and e.text}
    assert "tiempo" in translated["es"] and "tempo" in translated["pt"]
