"""Corpus figures from per-utterance metrics, and the JSON/CSV tables of both."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from statistics import mean, median

from speech.asr.normalize import normalize
from speech.stats import percentile

from .quality import ErrorCounts, corpus_scores

# Figures averaged over utterances, as SimulEval averages its per-instance latency scores; the
# listener lag's mean and percentiles are taken over the words of all utterances instead.
MEAN_PREFIXES = ("mt_", "audio_", "ttfa_")
NOT_AVERAGED = {"mt_text", "mt_words"}


def aggregate(rows: list[dict], target: str = "") -> dict:
    """`rows`: per-utterance metrics (each with `reference` when one exists); `target`: the
    translation's language (ASR-BLEU normalises the heard output and the reference in it).

    Latencies are means over the utterances that have them: an utterance whose translation is
    empty has no latency and is counted in `mt_empty_outputs` instead of being averaged as 0."""
    out: dict = {"utterances": len(rows), "source_s": sum(r.get("source_s") or 0 for r in rows)}
    # every utterance with a transcript: one with an empty transcript adds its insertions
    # (as in `speech bench asr`), not nothing
    errors = sum((ErrorCounts(r["asr_errors"], r["asr_ref_words"]) for r in rows if "asr_errors" in r), ErrorCounts())
    if errors.wer is not None:
        out["wer"] = errors.wer
    for clock in ("cu", "ca"):
        # the listener's lag over every heard word of the corpus, as `speech bench s2st` pools it
        heard = [x for r in rows for x in r.get(f"_audio_lags_{clock}", [])]
        if heard:
            out.update({f"audio_lag_mean_{clock}": mean(heard), f"audio_lag_p50_{clock}": percentile(heard, 50),
                        f"audio_lag_p90_{clock}": percentile(heard, 90), f"audio_lag_max_{clock}": max(heard)})
        lags = [x for r in rows for x in r.get(f"_asr_lags_{clock}", [])]
        if lags:
            out[f"asr_lag_median_{clock}"] = median(lags)
            out[f"asr_lag_p90_{clock}"] = percentile(lags, 90)
    referenced = [r for r in rows if r.get("asr_reference_words")]
    if referenced:  # reference words never committed, pooled over the corpus
        out["asr_unmatched_share"] = sum(r["asr_unmatched"] for r in referenced) / sum(r["asr_reference_words"] for r in referenced)
    with_ref = [r for r in rows if r.get("reference")]
    if with_ref:
        scores = corpus_scores([r.get("mt_text", "") for r in with_ref], [r["reference"] for r in with_ref])
        out.update(scores)
        heard = [r for r in with_ref if "output_asr_text" in r]
        if heard:
            asr = corpus_scores(
                [normalize(r["output_asr_text"], target) for r in heard],
                [normalize(r["reference"], target) for r in heard],
            )
            out.update(asr_bleu=asr["bleu"], asr_chrf=asr["chrf"])
    keys = sorted({k for r in rows for k in r if k.startswith(MEAN_PREFIXES) and k not in NOT_AVERAGED
                   and not k.startswith("audio_lag_")})
    for key in keys:
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
        if values:
            out[key] = mean(values)
    if any("mt_words" in r for r in rows):
        out["mt_empty_outputs"] = sum(1 for r in rows if r.get("mt_words") == 0)
    erasures = [r["mt_erasure"] for r in rows if r.get("mt_erasure") is not None]
    if erasures:
        out["mt_erasure"] = mean(erasures)
    total_src = out["source_s"]
    for stage in sorted({k[4:] for r in rows for k in r if k.startswith("rtf_")}):
        compute = sum((r.get(f"rtf_{stage}") or 0) * (r.get("source_s") or 0) for r in rows)
        out[f"rtf_{stage}"] = compute / total_src if total_src else None
    peaks = [r["peak_rss_mb"] for r in rows if r.get("peak_rss_mb") is not None]
    if peaks:
        out["peak_rss_mb"] = max(peaks)
    return out


def public(row: dict) -> dict:
    """A row without its internal lists (kept in metrics.json, not in the tables)."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def write_tables(folder: Path, name: str, rows: list[dict]) -> None:
    """`name`.json (a list of objects) and `name`.csv (one column per key, in first-seen order)."""
    rows = [public(r) for r in rows]
    (folder / f"{name}.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _cell(r.get(k)) for k in columns})


def _cell(v: object) -> object:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False)
    return "" if v is None else v
