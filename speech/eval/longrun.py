"""--long-form: one stream made of the manifest's recordings, scored per reference after
re-segmentation (see longform.py). Stream-wide figures (WER, ASR lag, audio, RTF, memory) come from
the whole stream's log; translation quality and latency from the re-segmented references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ..events import read_events
from .longform import Segment, join_recordings, resegment, segment_metrics
from .metrics import committed_words
from .runner import EVENTS, evaluate_recording, load_done, write_json_atomic

STREAM_KEYS = ("wer", "asr_errors", "asr_ref_words", "asr_lag_median_cu", "asr_lag_median_ca", "asr_lag_p90_cu",
               "asr_lag_p90_ca", "asr_erasure", "mt_erasure", "ttfa_cu", "ttfa_ca", "peak_rss_mb", "asr_bleu", "asr_chrf")


def evaluate_long_form(opts: Any, registry: Any, combo: Any, folder: Path, transcriber: Callable | None,
                       skipped: list[dict]) -> tuple[list[dict], dict, list[str]]:
    items = opts.manifest.items
    lf = folder / "longform"
    lf.mkdir(parents=True, exist_ok=True)
    seg_file = lf / "segments.json"
    if seg_file.exists():
        segments = [Segment(**s) for s in json.loads(seg_file.read_text())]
    else:
        segments = join_recordings([i.path for i in items], opts.gap_s, lf / "input.wav")
        write_json_atomic(seg_file, [s.__dict__ for s in segments])
    transcript = " ".join(i.transcript for i in items) if all(i.transcript for i in items) else None
    references = [i.reference for i in items]
    joined_ref = " ".join(references) if all(references) else None
    stream = load_done(lf)
    if stream is None:
        stream = evaluate_recording(registry, combo.config, lf / "input.wav", lf, combo.clock,
                                    transcript, joined_ref, transcriber)
    records = read_events(lf / EVENTS)
    pieces = resegment(committed_words(records, "mt"), [r or "" for r in references])
    rows = []
    for item, seg, words in zip(items, segments, pieces):
        row = segment_metrics(words, seg, item.reference)
        row.update(config=combo.label, clock=combo.clock, id=item.id, file=str(item.path), offset_s=seg.offset,
                   transcript=item.transcript, reference=item.reference)
        rows.append(row)
    summary = {k: stream[k] for k in STREAM_KEYS if stream.get(k) is not None}
    summary.update({k: v for k, v in stream.items() if k.startswith(("audio_", "rtf_"))})
    summary["stream_s"] = stream.get("source_s")
    notes = [n for n in stream.get("notes", "").split(" | ") if n]
    notes.append(f"long-form: {len(items)} recordings joined with {opts.gap_s:g} s gaps; translation re-segmented "
                 "to the references by edit-distance alignment; WER, ASR lag, audio and ASR-BLEU over the whole stream")
    if not all(references):
        notes.append("some recordings have no reference: their segments get no quality scores")
    return rows, summary, notes
