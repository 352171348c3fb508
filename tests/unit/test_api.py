"""The public API exported by `speech`: every name documented and exercised; bad arguments raise
typed errors with the key and what is allowed."""

import asyncio
import inspect
import subprocess
import sys

import numpy as np
import pytest

import speech
from speech.types import TextUpdate, Word
from tests.conftest import REPO


def test_every_public_name_has_a_docstring():
    assert speech.__all__ == sorted(speech.__all__) and len(speech.__all__) >= 15
    for name in speech.__all__:
        obj = getattr(speech, name)
        assert inspect.getdoc(obj), name
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member):
                    assert inspect.getdoc(member), f"{name}.{attr}"
    with pytest.raises(AttributeError):
        speech.not_a_name  # noqa: B018


def test_import_speech_loads_no_engine():
    code = ("import sys, speech; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('speech', 'numpy', 'faster_whisper', 'ctranslate2', 'cyllama', 'onnxruntime', 'piper')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.stdout.strip() == "['speech']", r.stdout + r.stderr


def run(agen):
    async def collect():
        return [e async for e in agen]
    return asyncio.run(collect())


def test_events_from_updates():
    u = TextUpdate(committed=(Word("hola", 0.1, 0.4),), tentative=(Word("mun"),), final=True, source_time=1.0,
                   wall_time=1.5, language="es")
    t = speech.Translation.from_update(u)
    assert (t.text, t.tentative, t.final, t.language, t.words[0].start) == ("hola", "mun", True, "es", 0.1)
    r = speech.Recognition.from_update(u)
    assert not isinstance(r, speech.Translation) and not isinstance(t, speech.Recognition)
    a = speech.SpeechAudio(np.zeros(2205, dtype=np.float32), 22050, "hola", 0.0, 1.0)
    assert a.duration == pytest.approx(0.1)


@pytest.mark.parametrize("call, key", [
    (lambda: speech.Pipeline("en->es"), "config"),
    (lambda: run(speech.Pipeline(speech.PipelineConfig(stages=("mt",))).stream([3])), "chunks"),
    (lambda: run(speech.Pipeline(speech.PipelineConfig(stages=("mt",))).stream("text")), "chunks"),
    (lambda: run(speech.Pipeline(speech.PipelineConfig(stages=("asr",))).stream([np.zeros((2, 2))])), "chunks"),
    (lambda: run(speech.Pipeline(speech.PipelineConfig(stages=("asr",))).stream([], sample_rate=0)), "sample_rate"),
    (lambda: speech.translate_file("x.wav", "en", "en"), "target"),
    (lambda: speech.translate_file("x.wav", "en", "es", colour="red"), "colour"),
    (lambda: speech.translate_file("x.wav", "en", "es", device="tpu"), "asr_options.device"),
    (lambda: speech.translate_file("x.wav", config={"target": "de"}), "config"),
    (lambda: speech.serve(server={"port": 1}), "server"),
    (lambda: speech.AsrOptions(update_s=0), "asr_options.update_s"),
    (lambda: speech.MtOptions(device="gpu"), "mt_options.device"),
    (lambda: speech.TtsOptions(chunker={"max_words": "many"}), "tts_options.chunker.max_words"),
    (lambda: speech.CodecOptions(frame_ms=1), "codec_options.frame_ms"),
    (lambda: speech.ServerOptions(port=-1), "server.port"),
])
def test_bad_arguments_raise_config_error_naming_the_key(call, key):
    with pytest.raises(speech.ConfigError) as e:
        call()
    assert e.value.key == key and str(e.value).startswith(key)


def test_translate_file_missing_input_is_a_user_error(tmp_path):
    with pytest.raises(speech.UserError, match="no such file"):
        speech.translate_file(tmp_path / "missing.wav", "en", "es")


def test_translate_file_absent_cuda_is_a_device_error(tmp_path, monkeypatch):
    import soundfile as sf

    from speech import devices

    monkeypatch.setattr(devices, "cuda_devices_ctranslate2", lambda: 0)
    wav = tmp_path / "a.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
    with pytest.raises(speech.DeviceError, match="no CUDA device"):
        speech.translate_file(wav, "en", "es", device="cuda")


def test_load_config_and_server_options(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('target = "fr"\n[server]\nport = 0\nwarm_up = "none"\n')
    config = speech.load_config(f, device="auto")
    assert config.target == "fr" and config.asr_options.device == config.mt_options.device == "auto"
    server = speech.load_server_options(f)
    assert server.port == 0 and server.warm_up_pair is None
    assert speech.ServerOptions().warm_up_pair == ("en", "es")
    with pytest.raises(speech.ConfigError, match=str(f)):
        f.write_text("[server]\nport = 'x'\n")
        speech.load_server_options(f)


def test_result_save_writes_wav_and_refuses_another_format(tmp_path):
    import soundfile as sf

    from speech.api import Result
    from speech.errors import UserError

    result = Result(np.zeros(2205, np.float32), 22050, "hi", "hola", "hola", 1.0, 0.5, [])
    assert result.save(tmp_path / "out") == tmp_path / "out.wav"
    assert sf.info(str(tmp_path / "out.wav")).frames == 2205
    with pytest.raises(UserError, match="out.mp3: the translated speech is written as WAV"):
        result.save(tmp_path / "out.mp3")
