"""Typed stage options: checked when made, named keys in errors, the old `extra` mapped onto them."""

import pytest

from speech.errors import ConfigError, DeviceError, OptionError, UserError
from speech.options import AsrOptions, CodecOptions, MtOptions, TtsOptions, from_mapping
from speech.pipeline import PipelineConfig


def test_defaults_are_typed_dataclasses():
    c = PipelineConfig()
    assert isinstance(c.asr_options, AsrOptions) and c.asr_options.device == "cpu"
    assert isinstance(c.mt_options, MtOptions) and isinstance(c.tts_options, TtsOptions)
    assert c.codec_options == CodecOptions(frame_ms=20.0, application="lowdelay", complexity=5)


def test_tables_become_dataclasses_and_numbers_widen():
    c = PipelineConfig(stages=["asr", "mt"], asr_options={"update_s": 1, "device": "auto"},
                       codec_options={"application": "voip"})
    assert c.stages == ("asr", "mt")
    assert c.asr_options == AsrOptions(device="auto", update_s=1.0)
    assert isinstance(c.asr_options.update_s, float)
    assert c.codec_options.application == "voip"


@pytest.mark.parametrize("kwargs, key, allowed", [
    ({"chunk_ms": 0}, "chunk_ms", "must be > 0"),
    ({"vad": "yes"}, "vad", "true or false"),
    ({"source": 3}, "source", "text"),
    ({"stages": ("asr", "ocr")}, "stages", "asr, mt, tts, codec"),
    ({"asr_options": {"device": "gpu"}}, "asr_options.device", "cpu, cuda, auto"),
    ({"asr_options": {"updates": 1}}, "asr_options.updates", "device, update_s, segment_start, first_update_s, first_update_words, adaptive, engine"),
    ({"asr_options": {"update_s": -1}}, "asr_options.update_s", "> 0.0"),
    ({"mt_options": {"engine": 3}}, "mt_options.engine", "table"),
    ({"codec_options": {"complexity": 11}}, "codec_options.complexity", "<= 10"),
    ({"codec_options": {"application": "music"}}, "codec_options.application", "lowdelay, voip, audio"),
    ({"tts_options": {"chunker": {"words": 3}}}, "tts_options.chunker.words", "max_words"),
    ({"tts_options": {"chunker": {"min_words": 0}}}, "tts_options.chunker", "min_words"),
])
def test_bad_values_name_the_key_and_what_is_allowed(kwargs, key, allowed):
    with pytest.raises(ConfigError) as e:
        PipelineConfig(**kwargs)
    assert e.value.key == key
    assert str(e.value).startswith(key) and allowed in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, UserError)


def test_replace_checks_again():
    with pytest.raises(ConfigError, match="chunk_ms"):
        PipelineConfig().replace(chunk_ms=-5)


def test_extra_maps_onto_the_typed_options():
    c = PipelineConfig(extra={"asr_update_s": 0.5, "asr_adaptive": True, "mt_options": {"threads": 1},
                              "tts_options": {"speed": 1.1}, "tts_chunker": {"max_words": 6},
                              "codec_options": {"complexity": 3}, "mode": "kept"})
    assert c.asr_options.update_s == 0.5 and c.asr_options.adaptive is True
    assert c.mt_options.engine == {"threads": 1}
    assert c.tts_options.engine == {"speed": 1.1} and c.tts_options.chunker == {"max_words": 6}
    assert c.codec_options.complexity == 3
    assert c.extra == {"mode": "kept"}  # unknown keys stay for code that reads them
    assert PipelineConfig(extra={"asr_update_s": 0}).asr_options.update_s is None  # 0: the model's own
    with pytest.raises(ConfigError, match="extra.codec_options"):
        PipelineConfig(extra={"codec_options": 5})


def test_from_mapping_rejects_unknown_keys_and_non_tables():
    assert from_mapping(MtOptions, {"device": "cuda"}, "mt_options.").device == "cuda"
    with pytest.raises(ConfigError, match=r"mt_options\.gpu: unknown key; allowed: device, engine, policy"):
        from_mapping(MtOptions, {"gpu": True}, "mt_options.")
    with pytest.raises(ConfigError, match="expected a table"):
        from_mapping(MtOptions, [1, 2], "mt_options.")


def test_stages_read_the_typed_options():
    from speech.codecs.stage import codec_config
    from speech.tts.stage import chunker_config

    c = PipelineConfig(codec_rate=16000, codec_options={"frame_ms": 10, "application": "voip"},
                       tts_options={"chunker": {"max_words": 7}})
    cc = codec_config(c)
    assert (cc.sample_rate, cc.frame_ms, cc.application) == (16000, 10.0, "voip")

    class Voice:
        chunk_defaults = {"max_words": 12, "min_words": 2}

    chunking = chunker_config(c, Voice())
    assert (chunking.max_words, chunking.min_words) == (7, 2)


def test_engine_options_are_checked_by_the_registry_with_a_typed_error():
    from speech.backends import default_registry

    registry = default_registry()
    with pytest.raises(OptionError, match="no option") as e:
        registry.config("translator", "apertium", threads=3)
    assert isinstance(e.value, TypeError) and isinstance(e.value, ConfigError)
    assert "threads" in registry.option_names("translator", "gemma-270m")
    assert "cpu_threads" in registry.option_names("recognizer", "whisper-base")
    assert registry.option_names("translator", "apertium").isdisjoint({"threads", "cpu_threads"})


def test_device_errors_are_config_errors():
    assert issubclass(DeviceError, ConfigError)
