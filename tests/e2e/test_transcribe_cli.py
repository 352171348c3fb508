"""`speech transcribe` and `speech bench asr` through the installed command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LIBRIVOX

SPEECH = [str(Path(sys.executable).parent / "speech")]
ENV = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
CLIP = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"


def speech(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(SPEECH + list(args), capture_output=True, text=True, timeout=timeout, env=ENV)


def test_transcribe_prints_text_summary_and_writes_the_log(librivox, tmp_path):
    log = tmp_path / "events.jsonl"
    out = speech("transcribe", str(CLIP), "--model", "whisper-tiny.en", "--policy", "stable", "--log", str(log))
    assert out.returncode == 0, out.stderr
    assert "young man" in out.stdout.lower()
    assert "words" in out.stderr and "RTF" in out.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = {r["kind"] for r in records}
    assert {"meta", "input", "update", "stats"} <= kinds
    assert [r for r in records if r["kind"] == "update"][-1]["end_of_stream"]


def test_transcribe_bad_input_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.wav"
    bad.write_text("not audio")
    out = speech("transcribe", str(bad))
    assert out.returncode == 2
    assert "bad.wav" in out.stderr and "Traceback" not in out.stderr
    out = speech("transcribe", str(CLIP), "--model", "nope")
    assert out.returncode == 2 and "whisper-tiny.en" in out.stderr  # names the choices
    out = speech("transcribe", str(CLIP), "--model", "whisper-tiny.en", "--language", "de")
    assert out.returncode == 2 and "English-only" in out.stderr
    out = speech("transcribe", str(CLIP), "--language", "xx")  # found by Whisper inside the stage
    assert out.returncode == 2 and "'xx' is not a valid language code" in out.stderr
    assert "Traceback" not in out.stderr


def test_bench_asr_json(librivox, tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"file": str(CLIP), "transcript": "he was not an ill disposed young man"}) + "\n")
    out = speech("bench", "asr", "--manifest", str(manifest), "--model", "pocketsphinx",
                 "--policy", "local-agreement-2", "--json")
    assert out.returncode == 0, out.stderr
    configs = json.loads(out.stdout)["configs"]
    assert len(configs) == 1
    c = configs[0]
    assert c["name"] == "pocketsphinx/local-agreement-2" and c["clips"] == 1 and c["words"] == 8
    # The bench's WER is the project's one WER on the streamed text it reports.
    from speech.eval.quality import word_errors

    streamed = c["per_clip"][0]["streaming"]
    assert c["wer"] == pytest.approx(100 * word_errors("he was not an ill disposed young man", streamed).wer, abs=0.01)
    assert c["wer"] < 70, streamed
    assert 0 < c["lag_p50_s"] <= c["lag_p90_s"] < 5 and c["lag_ca_p50_s"] >= c["lag_p50_s"]
    assert 0 < c["rtf"] and c["peak_rss_mb"] > 20
    # Lag against Whisper base's offline timeline: its 8 words, the ones PocketSphinx missed counted.
    assert c["lag_reference_words"] == 8 and 0.0 <= c["lag_unmatched_share"] < 0.5


def test_transcribe_bad_policy_option_names_the_known_ones():
    out = speech("transcribe", str(CLIP), "--model", "pocketsphinx", "--policy", "stable:foo=1")
    assert out.returncode == 2 and "margin_s" in out.stderr and "Traceback" not in out.stderr


def test_ctrl_c_ends_the_input_and_still_transcribes_what_was_heard(librivox, tmp_path):
    """The first SIGINT stops reading the file; what was read is transcribed to its end (the last
    update ends the stream), the summary says how much was read, and the exit status is 130."""
    import signal
    import time

    import numpy as np
    import soundfile as sf

    parts = []
    for clip in sorted(LIBRIVOX.glob("*.wav")):
        audio, rate = sf.read(str(clip), dtype="float32")
        parts.append(audio if audio.ndim == 1 else audio.mean(axis=1))
    talk = tmp_path / "talk.wav"
    sf.write(str(talk), np.concatenate(parts), rate)
    length = sum(len(p) for p in parts) / rate
    log = tmp_path / "events.jsonl"
    proc = subprocess.Popen(SPEECH + ["transcribe", str(talk), "--model", "whisper-tiny.en", "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the first committed words: the input is being read
            records = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
            if any(r["kind"] == "update" and r["committed"] for r in records):
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    read = float(err.split("stopped by SIGINT after ")[1].split(" s")[0])
    assert 1.0 < read < length - 5.0, (read, length)
    records = [json.loads(x) for x in log.read_text().splitlines()]
    last = [r for r in records if r["kind"] == "update"][-1]
    assert last["end_of_stream"] and len(out.split()) >= 3 and "Traceback" not in err
    assert max(r["end"] for r in records if r["kind"] == "input") <= read + 0.01


def test_language_auto_is_told_once_from_the_speech_and_named(tmp_path):
    from tests.conftest import FLEURS, require_data

    clip = FLEURS / "fleurs-pt-001.ogg"  # two seconds of it are heard as English or Romanian
    require_data(clip)
    log = tmp_path / "events.jsonl"
    out = speech("transcribe", str(clip), "--language", "auto", "--log", str(log))
    assert out.returncode == 0, out.stderr
    assert f"{clip}: speaks Portuguese (pt), Whisper's probability" in out.stderr
    assert "pirâmide" in out.stdout
    meta = next(json.loads(line) for line in log.read_text().splitlines() if '"meta"' in line)
    assert meta["config"]["source"] == "pt", meta
    silent = tmp_path / "silent.wav"
    import numpy as np
    import soundfile as sf

    sf.write(str(silent), np.zeros(3 * 16000, np.float32), 16000)
    out = speech("transcribe", str(silent), "--language", "auto")
    assert out.returncode == 2 and "no speech in its first 3 s" in out.stderr and "Traceback" not in out.stderr
    out = speech("transcribe", str(clip), "--language", "auto", "--model", "whisper-tiny.en")
    assert out.returncode == 0 and "taken as English (en), the only language whisper-tiny.en recognises" in out.stderr


def test_bench_langid_scores_each_clip_by_seconds_of_speech(tmp_path):
    from tests.conftest import FLEURS, require_data

    clips = [FLEURS / "fleurs-es-001.ogg", FLEURS / "fleurs-pt-002.ogg"]
    require_data(clips[0])
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps({"file": str(c), "lang": c.name[7:9]}) + "\n" for c in clips))
    out = speech("bench", "langid", "--manifest", str(manifest), "--seconds", "1,8", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [c["seconds"] for c in report["configs"]] == [1.0, 8.0]
    eight = report["configs"][1]
    assert eight["clips"] == 2 and eight["accuracy"] == 1.0, eight
    assert [c["speech_s"] for c in report["configs"][0]["per_clip"]] == [1.0, 1.0]
    assert [c["speech_s"] for c in eight["per_clip"]] == [8.0, 5.73]  # the second clip holds 5.73 s of speech
