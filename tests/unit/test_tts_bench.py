"""The benchmark's time-to-first-audio: one figure per commit event, from its first chunk."""

import numpy as np
import pytest

from speech.eval.listener import play_starts
from speech.tts.pair_result import first_audio_per_commit


def test_first_audio_per_commit_event():
    audio = [
        {"wall_time": 1.10, "ttfa_ms": 100.0, "commit_time": 1.0, "duration": 1.0},
        {"wall_time": 1.30, "ttfa_ms": 300.0, "commit_time": 1.0, "duration": 1.0},  # same burst, later chunk
        {"wall_time": 5.05, "ttfa_ms": 50.0, "commit_time": 5.0, "duration": 0.5},
    ]
    assert sorted(first_audio_per_commit(audio)) == [50.0, 100.0]
    # listener timeline: 1.1-2.1, then 2.1-3.1 (waits for the first, 8 ms cross-fade), then 5.05-5.55
    assert play_starts(audio) == pytest.approx([1.10, 2.092, 5.05], abs=1e-3)


def test_more_texts_are_flores_lines_the_manifest_does_not_read(tmp_path):
    import json

    from speech.tts.bench import more_texts

    fleurs = tmp_path / "speech" / "fleurs"
    flores = tmp_path / "text" / "flores101"
    fleurs.mkdir(parents=True)
    flores.mkdir(parents=True)
    rows = [{"file": "a.ogg", "lang": "en", "flores101_devtest_line": 2},
            {"file": "b.ogg", "lang": "en", "flores101_devtest_line": 4}]
    (fleurs / "manifest.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (flores / "por.devtest").write_text("".join(f"linha {i}\n" for i in range(1, 9)))
    texts = more_texts(fleurs / "manifest.jsonl", "pt", 3, 1)
    # lines 2 and 4 are the manifest's; the held-out lines are 1, 3, 5, 6, ...: skip one, take three
    assert [t["ref_pt"] for t in texts] == ["linha 3", "linha 5", "linha 6"]
    assert texts[0]["file"] == "flores101:3"
    assert more_texts(fleurs / "manifest.jsonl", "pt", 0, 0) == []


def _pipeline_judged(monkeypatch, emitted: list[float], first: str = "uno dos tres",
                     silent: str | None = None) -> tuple[list, object]:
    """Run `run_pair` on one clip whose pipeline (faked) emits two chunks at `emitted` seconds;
    returns what the (faked) judge was given."""
    from types import SimpleNamespace

    import numpy as np

    import speech.translate_cmd
    import speech.tts.roundtrip
    from speech.eval.quality import ErrorCounts
    from speech.translate_cmd import TranslationResult
    from speech.tts.bench import run_pair
    from speech.tts.sink import SpeechSink
    from speech.types import AudioChunk

    rate = 1000
    chunks = [AudioChunk(np.full(300, 0.5, np.float32), rate, start=emitted[0], wall_time=emitted[0], text=first),
              AudioChunk(np.full(200, -0.5, np.float32), rate, start=emitted[1], wall_time=emitted[1], text="cuatro")]

    async def fake_translate(path, config, registry, compact=False, **_):
        sink = SpeechSink(compact=compact)
        for c in chunks:
            sink.add(c)
        records = [{"kind": "audio", "stage": "tts", "text": c.text, "wall_time": c.wall_time, "ttfa_ms": 5.0,
                    "duration": c.duration} for c in chunks]
        if silent is not None:  # a piece between the two that the voice synthesised as silence
            records.insert(1, {"kind": "tts_skip", "stage": "tts", "text": silent, "reason": "silent synthesis"})
        return TranslationResult(sink.render(), rate, sink.chunks, "", 8.0, 0.1, records, sink.boundaries())

    judged = []

    def fake_roundtrip(registry, samples, rate, text, language):
        judged.append((samples.copy(), text))
        return ErrorCounts(0, len(text.split())), text

    monkeypatch.setattr(speech.translate_cmd, "translate_file", fake_translate)
    monkeypatch.setattr(speech.tts.roundtrip, "roundtrip", fake_roundtrip)
    monkeypatch.setattr(speech.tts.roundtrip, "through_codec", lambda registry, x, rate, codec: (x, rate))
    args = SimpleNamespace(voice="default", text_only=False, tts_set=[], pace={})
    result = run_pair(None, "en-es", [{"file": "a.ogg", "path": "a.ogg"}], args)
    assert result.clips == 1 and not result.failures
    return judged, result


def test_pipeline_judge_hears_the_chunks_back_to_back_whenever_they_were_emitted(monkeypatch):
    """The listener file waits 4 s for the first chunk; chunks that touch are cross-faded there and
    chunks with a wait between them are not. The judge must get the same audio either way (the
    same chunks were judged differently from run to run), and no leading wait."""
    touching, _ = _pipeline_judged(monkeypatch, [4.0, 4.3])
    apart, _ = _pipeline_judged(monkeypatch, [4.0, 6.0])
    (a, text), (b, _) = touching[0], apart[0]
    assert text == "uno dos tres cuatro"
    assert len(a) < 510 and a[0] == 0.5  # starts with the first chunk: no 4 s wait
    assert len(a) == len(b) and (a == b).all()


def test_a_piece_synthesised_as_silence_counts_against_the_voice(monkeypatch):
    judged, _ = _pipeline_judged(monkeypatch, [4.0, 4.3], silent="siete ocho")
    assert judged[0][1] == "uno dos tres siete ocho cuatro"


def test_a_clip_with_no_audio_counts_every_word_as_an_error(monkeypatch):
    from types import SimpleNamespace

    import speech.translate_cmd
    from speech.translate_cmd import TranslationResult
    from speech.tts.bench import run_pair

    async def silent_translate(path, config, registry, compact=False, **_):
        records = [{"kind": "tts_skip", "stage": "tts", "text": "uno dos tres", "reason": "silent synthesis"}]
        return TranslationResult(np.zeros(0, np.float32), 1000, 0, "", 8.0, 0.1, records, [])

    monkeypatch.setattr(speech.translate_cmd, "translate_file", silent_translate)
    args = SimpleNamespace(voice="default", text_only=False, tts_set=[], pace={})
    result = run_pair(None, "en-es", [{"file": "a.ogg", "path": "a.ogg"}], args)
    assert result.errors["pcm16"] == [3, 3] and result.per_clip["opus"] == [(3, 3)]


@pytest.mark.parametrize("first, pause", [("uno dos tres", False), ("uno, dos, tres.", True)])
def test_details_list_every_join_and_whether_the_text_asks_for_a_pause_there(monkeypatch, first, pause):
    _, result = _pipeline_judged(monkeypatch, [4.0, 4.3], first)
    [join] = result.details[0]["joins"]
    assert join["after_chunk"] == 0 and join["at_s"] > 0 and join["after_punctuation"] is pause
    assert result.summary()["join_gaps_over_50ms_after_punctuation"] == 0


def test_details_line_holds_what_was_spoken_and_what_the_judge_heard():
    from speech.eval.quality import ErrorCounts
    from speech.tts.pair_result import clip_detail

    audio = [{"text": "Hola,", "duration": 0.41, "reason": "clause"},
             {"text": "buenos días.", "duration": 0.9, "reason": "final"}]
    judged = {"pcm16": (ErrorCounts(1, 3), "hola buenos dias"), "opus": (ErrorCounts(3, 3), "")}
    row = clip_detail("en-es", {"file": "x.ogg", "ref_es": "Hola, buen día."}, audio, judged, 1.3)
    assert row["spoken"] == "Hola, buenos días."
    assert [c["text"] for c in row["chunks"]] == ["Hola,", "buenos días."]
    assert row["chunks"][1] == {"text": "buenos días.", "duration_s": 0.9, "reason": "final"}
    assert row["reference"] == "Hola, buen día."
    assert row["pcm16"] == {"heard": "hola buenos dias", "errors": 1, "words": 3, "wer": 0.3333}
    assert row["opus"]["wer"] == 1.0


def test_tts_set_reaches_only_the_synthesiser_that_knows_the_option():
    import pytest

    from speech.backends import default_registry
    from speech.errors import UserError
    from speech.tts.bench import tts_options

    registry = default_registry()
    assert tts_options(registry, "pt", "espeak", ["treble_db=0"]) == {"treble_db": 0}  # eSpeak
    assert tts_options(registry, "en", "default", ["treble_db=0"]) == {}  # Piper has no such option
    with pytest.raises(UserError, match="no synthesiser has option"):
        tts_options(registry, "pt", "espeak", ["nonsense=1"])
    # the voice comes from --voice: as an option it collided with it (a TypeError per clip)
    with pytest.raises(UserError, match="--voice"):
        tts_options(registry, "pt", "espeak", ["voice=pt-br+m3"])
    with pytest.raises(UserError, match="'konsonants' .* not one of"):  # before any clip is synthesised
        tts_options(registry, "pt", "espeak", ["attributes=konsonants 1"])
    assert tts_options(registry, "pt", "espeak", ["attributes=flutter 0"]) == {"attributes": "flutter 0"}
    with pytest.raises(UserError, match=r"synthesizer espeak\.treble_db: expected a number, got 'loud'"):
        tts_options(registry, "pt", "espeak", ["treble_db=loud"])  # before any clip, not once per clip


def test_a_voice_that_does_not_speak_a_pair_target_is_refused_before_any_clip():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "speech.cli", "bench", "s2st", "--text-only", "--pairs", "en-es,en-gl",
                           "--voice", "festival", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert "voice 'festival' speaks ca, not 'es'" in done.stderr and "s2st en-es" not in done.stderr


@pytest.mark.parametrize("control", ["on,fast", ""])
def test_long_talk_refuses_an_unknown_control_setting_before_any_work(control):
    from argparse import Namespace

    from speech.errors import UserError
    from speech.tts.longtalk import run_long_talk

    args = Namespace(long=10, text_only=False, control=control)
    with pytest.raises(UserError, match="--control: give a comma-separated list of on, off, reactive"):
        run_long_talk(None, ["en-es"], args)


@pytest.mark.parametrize("bench", ["s2st", "asr"])
def test_a_negative_clip_limit_is_refused_not_read_as_all_but_the_last(bench):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "speech.cli", "bench", bench, "--limit", "-1"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "--limit must be 0 (all clips) or more, got -1" in done.stderr


@pytest.mark.parametrize("minutes", ["0", "-3"])
def test_long_talk_of_no_minutes_is_refused_not_run_as_the_clip_benchmark(minutes):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "speech.cli", "bench", "s2st", "--long", minutes], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "--long needs a positive number of minutes" in done.stderr
    assert "s2st en-es" not in done.stderr  # no clip was run


def test_long_talk_control_settings_differ_only_in_the_pace_options():
    from speech.tts.longtalk import CONTROL_SETTINGS
    from speech.tts.pace import PaceConfig

    on, reactive = PaceConfig(**CONTROL_SETTINGS["on"]), PaceConfig(**CONTROL_SETTINGS["reactive"])
    assert on.look_ahead and on.tentative and not reactive.look_ahead and not reactive.tentative
    assert not PaceConfig(**CONTROL_SETTINGS["off"]).control
