"""An evaluation run: every configuration over every recording, into one resumable run folder.

    OUT/run.json                       what was asked, versions, machine (checked on resume)
    OUT/configs/LABEL/items/ID/        events.jsonl, output.wav, metrics.json (= done)
    OUT/configs/LABEL/longform/        the joined stream (--long-form)
    OUT/per_utterance.{json,csv}       every configuration's rows
    OUT/aggregate.{json,csv}           one row per configuration
    OUT/report.{md,html}, OUT/plots/   the report
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError
from ..events import read_events
from ..pipeline import PipelineConfig
from ..progress import Progress
from ..stage import StageError
from .aggregate import aggregate, write_tables
from .configs import Combination, combinations, folder_name, machine, versions
from .manifest import Manifest
from .phases import phase_id, phase_leads, phased_input
from .runner import EVENTS, evaluate_recording, load_done, write_json_atomic


@dataclass
class EvalOptions:
    manifest: Manifest
    source: str
    target: str
    out: Path
    base: PipelineConfig
    sweeps: list[tuple[str, list[Any]]] = field(default_factory=list)
    clocks: list[str] = field(default_factory=lambda: ["simulated"])
    long_form: bool = False
    gap_s: float = 1.0
    asr_bleu: bool = True
    asr_bleu_model: str = "whisper-base"
    plots: bool = True
    command: str = ""
    phases: int = 1  # each recording after 0, 1/K, ... s of leading silence (speech/eval/phases.py)


def identity(opts: EvalOptions) -> dict:
    """What must match for a run folder to be resumed."""
    return {
        "manifest": str(opts.manifest.path.resolve()),
        "items": [i.id for i in opts.manifest.items],
        "source": opts.source,
        "target": opts.target,
        "base": opts.base.to_json(),
        "sweeps": [[k, list(v)] for k, v in opts.sweeps],
        "clocks": opts.clocks,
        "long_form": opts.long_form,
        "gap_s": opts.gap_s,
        "asr_bleu": opts.asr_bleu,
    } | ({"phases": opts.phases} if opts.phases != 1 else {})


def prepare_folder(opts: EvalOptions) -> bool:
    """Creates or checks OUT/run.json; True when resuming an earlier run."""
    opts.out.mkdir(parents=True, exist_ok=True)
    run_file = opts.out / "run.json"
    ident = json.loads(json.dumps(identity(opts)))
    if run_file.exists():
        try:
            earlier = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            earlier = {}
        if earlier.get("identity") != ident:
            raise UserError(
                f"{opts.out} holds a run with another manifest or configuration; "
                "give a new --out folder, or repeat the earlier command to resume it"
            )
        # the same command with other software (a new voice, engine or commit) would mix two
        # systems' figures in one table
        was, now = earlier.get("versions") or {}, versions()
        changed = [f"{k} {was.get(k)} -> {now.get(k)}" for k in sorted(set(was) | set(now)) if was.get(k) != now.get(k)]
        if changed:
            raise UserError(
                f"{opts.out} holds a run made with other software ({'; '.join(changed)}); "
                "give a new --out folder, or delete this one to measure again"
            )
        return True
    write_json_atomic(run_file, {
        "identity": ident, "command": opts.command, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "versions": versions(), "machine": machine(),
    })
    return False


def evaluate(opts: EvalOptions, registry: Any, progress_stream: Any = None) -> dict:
    """Runs (or resumes) everything; returns {"configs": [...], "rows": [...], "skipped": [...]}."""
    resumed = prepare_folder(opts)
    combos = combinations(opts.base, opts.sweeps, opts.clocks)
    items = [(item, lead) for item in opts.manifest.items for lead in phase_leads(opts.phases)]
    skipped = list(opts.manifest.skipped)
    transcriber = _transcriber(opts, registry)
    total = len(combos) * (1 if opts.long_form else len(items))
    results: list[dict] = []
    all_rows: list[dict] = []
    with Progress(total, label="eval", stream=progress_stream) as bar:
        for combo in combos:
            folder = opts.out / "configs" / folder_name(combo.label)
            if opts.long_form:
                from .longrun import evaluate_long_form

                rows, stream, notes = evaluate_long_form(opts, registry, combo, folder, transcriber, skipped)
                bar.update(1, status=combo.label)
                agg = aggregate(rows, combo.config.target)
                agg.update(stream)
            else:
                rows, notes, failed = [], [], 0
                for item, lead in items:
                    name = phase_id(item.id, lead)
                    row = _evaluate_item(opts, registry, combo, folder / "items" / name, item, transcriber, skipped,
                                         name, lead)
                    bar.update(1, status=f"{combo.label} {name}{' (done earlier)' if row and row.get('_resumed') else ''}")
                    if row is not None:
                        rows.append(row)
                    else:
                        failed += 1
                agg = aggregate(rows, combo.config.target)
                notes = sorted({n for r in rows for n in r.get("notes", "").split(" | ") if n})
                if failed:  # a failure is never averaged away unseen: the figures say what they leave out
                    notes.insert(0, f"{failed} of {len(items)} runs failed and are left out of these figures "
                                    "(Skipped inputs); running the same command again retries them")
            if opts.asr_bleu and transcriber is None:
                notes.append("ASR-BLEU left out: no recogniser for the target language")
            results.append({"label": combo.label, "clock": combo.clock, "settings": dict(combo.settings),
                            "config": combo.config.to_json(), "aggregate": agg, "notes": notes, "folder": str(folder)})
            results += _phase_results(opts, results[-1], rows)
            all_rows.extend(rows)
    write_tables(opts.out, "per_utterance", all_rows)
    write_tables(opts.out, "aggregate", [{"config": r["label"], **r["aggregate"]} for r in results])
    skipped_unique = list({(s["line"], s["file"], s["reason"]): s for s in skipped}.values())
    (opts.out / "skipped.json").write_text(json.dumps(skipped_unique, indent=1, ensure_ascii=False), encoding="utf-8")
    _report(opts, results, skipped_unique)
    return {"configs": results, "rows": all_rows, "skipped": skipped_unique, "resumed": resumed}


def _phase_results(opts: EvalOptions, whole: dict, rows: list[dict]) -> list[dict]:
    """With --phases: one more row per phase (`LABEL @0.25 s`), beside the row over all of them."""
    if opts.phases == 1 or opts.long_form:
        return []
    return [{**whole, "label": f"{whole['label']} @{lead:g} s", "settings": {**whole["settings"], "lead_s": lead},
             "aggregate": aggregate([r for r in rows if r.get("lead_s") == lead], opts.target), "notes": []}
            for lead in phase_leads(opts.phases)]


def _transcriber(opts: EvalOptions, registry: Any) -> Callable | None:
    if not opts.asr_bleu:
        return None
    from .asrbleu import OutputTranscriber

    try:
        registry.spec("recognizer", opts.asr_bleu_model)
    except LookupError:
        return None
    if opts.asr_bleu_model.endswith(".en") and opts.target != "en":
        return None
    return OutputTranscriber(registry, opts.target, opts.asr_bleu_model)


def _evaluate_item(opts: EvalOptions, registry: Any, combo: Combination, folder: Path, item: Any,
                   transcriber: Callable | None, skipped: list[dict], name: str, lead: float) -> dict | None:
    base = {"config": combo.label, "clock": combo.clock, "id": name, "file": str(item.path),
            "transcript": item.transcript, "reference": item.reference}
    if opts.phases != 1:
        base["lead_s"] = lead
    done = load_done(folder)
    if done is not None:
        return {**done, **base, "_resumed": True}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        metrics = evaluate_recording(registry, combo.config, phased_input(item.path, lead, folder), folder, combo.clock,
                                     item.transcript, item.reference, transcriber, origin=lead)
    except StageError as e:
        where = combo.label if opts.phases == 1 else f"{combo.label} {name}"  # one entry per failed run
        skipped.append({"line": item.line, "file": str(item.path), "reason": f"{where}: {e}", "failed": True})
        return None
    return {**metrics, **base}


def _report(opts: EvalOptions, results: list[dict], skipped: list[dict]) -> None:
    from .report import write_report

    run = json.loads((opts.out / "run.json").read_text(encoding="utf-8"))
    info = {"manifest": str(opts.manifest.path), "command": run.get("command"), "source": opts.source,
            "target": opts.target, "clock": ",".join(opts.clocks), "long_form": opts.long_form,
            "phases": opts.phases,
            "started": run.get("started"), "versions": run.get("versions"), "machine": run.get("machine")}
    plots: list[tuple[str, Path]] = []
    if opts.plots and results:
        from . import plots as P

        pdir = opts.out / "plots"
        pdir.mkdir(exist_ok=True)
        first = Path(results[0]["folder"])
        logs = sorted((first / "items").glob(f"*/{EVENTS}")) if not opts.long_form else []
        long_log = first / "longform" / EVENTS
        if logs:
            records = read_events(logs[0])
            plots.append((f"waterfall: {logs[0].parent.name} ({results[0]['label']})",
                          P.waterfall(records, pdir / "waterfall.png", logs[0].parent.name)))
        stream = long_log if long_log.exists() else _longest(logs)
        if stream is not None:
            records = read_events(stream)
            if opts.long_form:
                plots.append(("waterfall: long-form stream", P.waterfall(records, pdir / "waterfall.png", "long-form stream")))
            plots.append((f"lag over time: {stream.parent.name}", P.lag_over_time(records, pdir / "lag_over_time.png")))
            plots.append((f"listener lag, duration control on and off: {stream.parent.name}",
                          _listener_plot(records, pdir / "listener_lag.png")))
        plots.append(("quality against latency", P.quality_latency(results, pdir / "quality_latency.png")))
    write_report(opts.out, info, results, skipped, plots)


def _listener_plot(records: list[dict], path: Path) -> Path:
    """The stream's listener lag as it ran, beside the same translation spoken with the duration
    control switched the other way (only the TTS stage runs again)."""
    from speech.tts.longtalk import respeak

    from . import plots as P

    config = next((r for r in records if r.get("kind") == "meta"), {}).get("config", {})
    control = (config.get("extra") or {}).get("tts_pace", {}).get("control", True)
    other = respeak(records, not control)
    on, off = (records, other) if control else (other, records)
    return P.listener_lag([("duration control on", on), ("duration control off", off)], path)


def _longest(logs: list[Path]) -> Path | None:
    best, best_len = None, -1.0
    for log in logs:
        for rec in read_events(log):
            if rec.get("kind") == "end" and float(rec.get("source_duration", 0)) > best_len:
                best, best_len = log, float(rec["source_duration"])
    return best
