"""The run's report: a headline table per configuration, notes, skipped inputs and plots, as
Markdown and as a self-contained-looking HTML page (plots are PNG files beside it)."""

from __future__ import annotations

import html
from pathlib import Path

from .phases import phase_leads

# (key in the aggregate, column title, format)
HEADLINE = [
    ("utterances", "n", "{:d}"),
    ("wer", "WER %", "pct"),
    ("asr_lag_median_cu", "ASR lag med (u)", "{:.2f}"),
    ("asr_lag_median_ca", "ASR lag med (a)", "{:.2f}"),
    ("asr_lag_p90_ca", "ASR lag p90 (a)", "{:.2f}"),
    ("asr_unmatched_share", "ASR unmatched", "{:.1%}"),
    ("bleu", "BLEU", "{:.1f}"),
    ("chrf", "chrF", "{:.1f}"),
    ("asr_bleu", "ASR-BLEU", "{:.1f}"),
    ("asr_chrf", "ASR-chrF", "{:.1f}"),
    ("mt_AL_cu", "AL (u)", "{:.2f}"),
    ("mt_LAAL_cu", "LAAL (u)", "{:.2f}"),
    ("mt_LAAL_ca", "LAAL (a)", "{:.2f}"),
    ("mt_DAL_cu", "DAL (u)", "{:.2f}"),
    ("mt_AP_cu", "AP (u)", "{:.2f}"),
    ("mt_ATD_cu", "ATD (u)", "{:.2f}"),
    ("mt_ATD_ca", "ATD (a)", "{:.2f}"),
    ("mt_erasure", "erasure", "{:.2f}"),
    ("audio_StartOffset_cu", "audio start (u)", "{:.2f}"),
    ("audio_StartOffset_ca", "audio start (a)", "{:.2f}"),
    ("audio_EndOffset_ca", "audio end (a)", "{:.2f}"),
    ("audio_lag_p50_ca", "listener lag p50 (a)", "{:.2f}"),
    ("audio_lag_p90_ca", "listener lag p90 (a)", "{:.2f}"),
    ("audio_discontinuities_ca", "gaps (a)", "{:.1f}"),
    ("audio_silence_mean_s_ca", "gap mean s (a)", "{:.2f}"),
    ("rtf_asr", "RTF asr", "{:.2f}"),
    ("rtf_mt", "RTF mt", "{:.2f}"),
    ("rtf_tts", "RTF tts", "{:.3f}"),
    ("peak_rss_mb", "peak MB", "{:.0f}"),
]

LEGEND = (
    "Latencies in seconds, averaged over utterances (SimulEval). (u) computation-unaware: source "
    "seconds consumed when emitted (simulated clock); (a) computation-aware: wall-clock time of "
    "emission (emulated per stage on the simulated clock). AL/LAAL/DAL/AP/ATD on committed "
    "translation words against the reference length; audio start/end are StartOffset/EndOffset of "
    "the played speech; listener lag = when a word is heard - when its source word was spoken, "
    "over every heard word; gaps are playback discontinuities per utterance. WER on normalised text; "
    "BLEU/chrF (sacrebleu, corpus) on cased text; ASR-BLEU on the recognised output speech, normalised."
)


def _fmt(value: object, fmt: str) -> str:
    if value is None or value == "":
        return "–"
    if fmt == "pct":
        return f"{100 * float(value):.1f}"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


def headline_rows(configs: list[dict]) -> tuple[list[str], list[list[str]]]:
    present = [(k, t, f) for k, t, f in HEADLINE if any(c["aggregate"].get(k) is not None for c in configs)]
    header = ["configuration"] + [t for _, t, _ in present]
    rows = [[c["label"]] + [_fmt(c["aggregate"].get(k), f) for k, _, f in present] for c in configs]
    return header, rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _phases(phases: int) -> str:
    if phases <= 1:
        return ""
    leads = ", ".join(f"{lead:g}" for lead in phase_leads(phases))
    return f", each recording at {phases} decode phases ({leads} s of leading silence; n counts every run)"


def write_report(folder: Path, run: dict, configs: list[dict], skipped: list[dict], plots: list[tuple[str, Path]]) -> None:
    """`configs`: [{label, aggregate, notes}]; `plots`: (caption, path) pairs inside `folder`."""
    header, rows = headline_rows(configs)
    md = [f"# Evaluation report: {run.get('manifest', '')}", ""]
    md.append(f"`{run.get('command', '')}`  ")
    md.append(f"source {run.get('source')} → target {run.get('target')}, clock {run.get('clock')}, "
              f"{'long-form' if run.get('long_form') else 'per utterance'}{_phases(run.get('phases', 1))}, "
              f"{run.get('started', '')}")
    md += ["", "## Headline", "", markdown_table(header, rows), "", LEGEND, ""]
    notes = [(c["label"], n) for c in configs for n in c.get("notes", [])]
    if notes:
        md += ["## Notes", ""] + [f"- {lab}: {n}" for lab, n in notes] + [""]
    if skipped:
        md += ["## Skipped inputs", ""] + [f"- line {s['line']} `{s['file']}`: {s['reason']}" for s in skipped] + [""]
    if plots:
        md += ["## Plots", ""]
        for caption, path in plots:
            md += [f"### {caption}", "", f"![{caption}]({path.relative_to(folder).as_posix()})", ""]
    machine = run.get("machine", {})
    md += ["## Run", "", f"- machine: {machine}", f"- versions: {run.get('versions', {})}", ""]
    (folder / "report.md").write_text("\n".join(md), encoding="utf-8")

    e = html.escape
    h = ["<!doctype html><html><head><meta charset='utf-8'><title>speech eval report</title>",
         "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
         "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td:first-child{text-align:left}"
         "img{max-width:100%}</style></head><body>",
         f"<h1>Evaluation report: {e(str(run.get('manifest', '')))}</h1>",
         f"<p><code>{e(str(run.get('command', '')))}</code></p>",
         "<h2>Headline</h2><table><tr>" + "".join(f"<th>{e(x)}</th>" for x in header) + "</tr>"]
    h += ["<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>" for r in rows]
    h += ["</table>", f"<p>{e(LEGEND)}</p>"]
    if notes:
        h += ["<h2>Notes</h2><ul>"] + [f"<li>{e(lab)}: {e(n)}</li>" for lab, n in notes] + ["</ul>"]
    if skipped:
        h += ["<h2>Skipped inputs</h2><ul>"]
        h += [f"<li>line {s['line']} <code>{e(s['file'])}</code>: {e(s['reason'])}</li>" for s in skipped] + ["</ul>"]
    for caption, path in plots:
        h += [f"<h3>{e(caption)}</h3><img src='{e(path.relative_to(folder).as_posix())}' alt='{e(caption)}'>"]
    h += [f"<h2>Run</h2><pre>{e(str(machine))}\n{e(str(run.get('versions', {})))}</pre></body></html>"]
    (folder / "report.html").write_text("\n".join(h), encoding="utf-8")
