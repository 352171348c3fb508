"""The server with the real pipeline (tiny.en, the default translator, eSpeak NG) on shared recordings."""

from __future__ import annotations

import asyncio
import os

import pytest

from speech.events import read_events
from speech.pipeline import PipelineConfig
from speech.server.client import stream_file
from speech.server.pipelines import RealPipeline
from speech.server.server import ServerConfig, SpeechServer
from tests.conftest import LIBRIVOX

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
CLIP = "sense_and_sensibility_01_austen_64kb-0870.wav"  # 7.1 s, one long sentence

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipeline(registry, librivox):
    return RealPipeline(registry, PipelineConfig(asr_model="whisper-tiny.en"))


def committed_in_log(log_dir, stage):
    (path,) = list(log_dir.glob("session-*.jsonl"))
    return [w["text"] for r in read_events(path) if r["kind"] == "update" and r["stage"] == stage
            for w in r["committed"]]


def test_end_mid_sentence_delivers_every_committed_word(pipeline, tmp_path):
    async def main():
        async with SpeechServer(ServerConfig(port=0, log_dir=tmp_path), pipeline) as srv:
            # `end` after 3.2 s of a 7.1 s sentence, streamed at twice real time
            return await stream_file(srv.url, LIBRIVOX / CLIP, "en", "es", speed=2.0, stop_after_s=3.2)

    res = asyncio.run(asyncio.wait_for(main(), 240))
    assert res.error is None and res.events[-1]["type"] == "done"
    heard = res.committed("recognition")
    said = res.committed("translation")
    # everything the stages committed (their own log) reached the client, in order, before done
    assert heard == committed_in_log(tmp_path, "asr")
    assert said == committed_in_log(tmp_path, "mt")
    assert any(w.strip(".,").lower() in ("john", "dashwood") for w in heard), heard
    assert 3 <= len(heard) <= 12, heard  # only what was said before `end`
    assert said and res.audio, "no translation or no synthesised audio"
    pcm, rate = res.pcm()
    assert rate > 0 and len(pcm) / rate > 0.3
    assert res.done["summary"]["recognized_words"] == len(heard)


def test_opus_in_and_out(pipeline):
    pytest.importorskip("opuslib")

    async def main():
        async with SpeechServer(ServerConfig(port=0), pipeline) as srv:
            return await stream_file(srv.url, LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav", "en", "es",
                                     speed=0, codec="opus", output_codec="opus")

    res = asyncio.run(asyncio.wait_for(main(), 240))
    assert res.error is None, res.error
    assert len(res.committed("recognition")) >= 5
    assert res.audio and all(meta["codec"] == "opus" for meta, _ in res.audio)
    pcm, rate = res.pcm()
    assert len(pcm) / rate > 0.5 and abs(pcm).max() > 0.05


def test_two_targets_from_one_recogniser(pipeline, tmp_path):
    from tests.conftest import FLEURS

    async def main():
        async with SpeechServer(ServerConfig(port=0, log_dir=tmp_path), pipeline) as srv:
            return await stream_file(srv.url, FLEURS / "fleurs-en-000.ogg", "en", "es", targets=["es", "pt"], speed=0)

    res = asyncio.run(asyncio.wait_for(main(), 300))
    assert res.error is None and res.events[-1]["type"] == "done"
    (path,) = list(tmp_path.glob("session-*.jsonl"))
    records = read_events(path)
    heard = res.committed("recognition")
    assert len(heard) >= 10 and heard == [w["text"] for r in records if r["kind"] == "update" and r["stage"] == "asr"
                                          for w in r["committed"]]
    for target in ("es", "pt"):
        said = res.committed("translation", target)
        logged = [w["text"] for r in records if r["kind"] == "update" and r["stage"] == "mt"
                  and r.get("target") == target for w in r["committed"]]
        assert said and said == logged, target
        pcm, rate = res.pcm(target)
        assert rate > 0 and len(pcm) / rate > 1.0, target
    es, pt = res.text("translation", "es").lower(), res.text("translation", "pt").lower()
    assert es != pt  # two languages, not one copied
    assert res.done["summary"]["targets"]["pt"]["translated_words"] == len(res.committed("translation", "pt"))


def test_source_auto_tells_the_language_before_the_first_words_and_loses_none(registry, tmp_path):
    """Asked for Spanish and English, a Spanish speaker is translated into English only, and every
    listener is told which target went untranslated."""
    from tests.conftest import FLEURS

    multilingual = RealPipeline(registry, PipelineConfig())  # whisper-base

    async def main():
        async with SpeechServer(ServerConfig(port=0, log_dir=tmp_path), multilingual) as srv:
            return await stream_file(srv.url, FLEURS / "fleurs-es-000.ogg", "auto", "es", targets=("es", "en"),
                                     speed=2.0)

    res = asyncio.run(asyncio.wait_for(main(), 240))
    assert res.error is None and res.events[-1]["type"] == "done"
    kinds = [e["type"] for e in res.events if e["type"] in ("language", "recognition")]
    assert kinds[0] == "language" and kinds.count("language") == 1
    told = next(e for e in res.events if e["type"] == "language")
    assert told["source"] == "es" and told["probability"] > 0.9 and 1.0 <= told["speech_s"] <= 6.0, told
    assert told["untranslated"] == ["es"], told
    heard = res.committed("recognition")
    assert heard == committed_in_log(tmp_path, "asr")  # every word reached the speaker, in order
    assert heard[0].lower().startswith("se") and "viajeros" in [w.lower() for w in heard], heard
    assert res.committed("translation", "en") and not res.committed("translation", "es")
    assert {meta["target"] for meta, _ in res.audio} == {"en"}
