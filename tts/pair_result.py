"""What `speech bench s2st` reports for one language pair: the figures gathered clip by clip
(`PairResult`) and their summary, one `--details` line per clip, and time to first audio per
commit event."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from speech.eval.quality import ErrorCounts


@dataclass
class PairResult:
    pair: str
    clips: int = 0
    ttfa_ms: list[float] = field(default_factory=list)  # per commit event: its first audio
    chunk_ttfa_ms: list[float] = field(default_factory=list)  # per chunk
    tts_compute_s: float = 0.0
    tts_audio_s: float = 0.0
    start_offsets: list[float] = field(default_factory=list)
    start_parts: list[dict[str, float]] = field(default_factory=list)  # per clip: where its StartOffset went
    end_offsets: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)  # listener lag of every word heard
    stage_rtf_max: dict[str, float] = field(default_factory=dict)
    errors: dict[str, list[int]] = field(default_factory=lambda: {"pcm16": [0, 0], "opus": [0, 0]})
    per_clip: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: {"pcm16": [], "opus": []})
    joins: list = field(default_factory=list)
    details: list[dict] = field(default_factory=list)  # per clip: what was spoken, what the judge heard
    wall_s: float = 0.0
    failures: list[str] = field(default_factory=list)

    def add_errors(self, codec: str, errors: "ErrorCounts") -> None:
        """One clip's round-trip errors through `codec`."""
        self.errors[codec][0] += errors.errors
        self.errors[codec][1] += errors.words
        self.per_clip[codec].append((errors.errors, errors.words))

    def summary(self) -> dict:
        from speech.stats import percentile
        from .joins import JoinSummary

        def roundtrip_wer(codec: str) -> float | None:
            e, n = self.errors[codec]
            return round(e / n, 4) if n else None

        def halves(codec: str) -> list[float | None]:
            """WER of the first and second half of the clips: the spread the judge's noise leaves."""
            clips = self.per_clip[codec]
            h = len(clips) // 2
            return [round(sum(e for e, _ in p) / n, 4) if (n := sum(w for _, w in p)) else None
                    for p in (clips[:h], clips[h:])]

        joins = JoinSummary.of(self.joins)
        rtf_ok = bool(self.stage_rtf_max) and all(v < 1.0 for v in self.stage_rtf_max.values())
        total = sum(self.stage_rtf_max.values())
        p50, p90 = percentile(self.ttfa_ms, 50), percentile(self.ttfa_ms, 90)
        c50, c90 = percentile(self.chunk_ttfa_ms, 50), percentile(self.chunk_ttfa_ms, 90)
        parts = [p for p in self.start_parts if p]
        return {
            "pair": self.pair,
            "clips": self.clips,
            "ttfa_p50_ms": None if p50 is None else round(p50, 1),
            "ttfa_p90_ms": None if p90 is None else round(p90, 1),
            "chunk_ttfa_p50_ms": None if c50 is None else round(c50, 1),
            "chunk_ttfa_p90_ms": None if c90 is None else round(c90, 1),
            "tts_rtf": round(self.tts_compute_s / self.tts_audio_s, 4) if self.tts_audio_s else None,
            # means over the clips, as SimulEval reports them; medians beside them
            "start_offset_s": round(float(np.mean(self.start_offsets)), 3) if self.start_offsets else None,
            "start_offset_median_s": round(float(np.median(self.start_offsets)), 3) if self.start_offsets else None,
            # the mean StartOffset split where it goes (speech.eval.listener.START_PARTS; they add up to it)
            "start_parts_s": {k: round(float(np.mean([p[k] for p in parts])), 3) for k in parts[0]} if parts else {},
            "end_offset_s": round(float(np.mean(self.end_offsets)), 3) if self.end_offsets else None,
            "end_offset_median_s": round(float(np.median(self.end_offsets)), 3) if self.end_offsets else None,
            "listener_lag_p50_s": None if not self.lags else round(percentile(self.lags, 50), 3),
            "listener_lag_p90_s": None if not self.lags else round(percentile(self.lags, 90), 3),
            "realtime_ok": rtf_ok and total < 2.0,
            "stage_rtf_max": {k: round(v, 3) for k, v in self.stage_rtf_max.items()},
            "roundtrip_wer": roundtrip_wer("pcm16"),
            "roundtrip_wer_opus24k": roundtrip_wer("opus"),
            "roundtrip_wer_halves": halves("pcm16"),
            "roundtrip_wer_opus24k_halves": halves("opus"),
            "roundtrip_words": self.errors["pcm16"][1],
            "join_max_gap_ms": round(joins.max_gap_ms, 1),
            "join_gaps_over_50ms": joins.gaps_over_50ms,
            "join_gaps_over_50ms_after_punctuation": joins.gaps_over_50ms_after_punctuation,
            "join_max_gap_mid_clause_ms": round(joins.max_gap_mid_clause_ms, 1),
            "join_mean_abs_level_jump_db": round(joins.mean_abs_level_jump_db, 2),
            "join_max_step": round(joins.max_step, 4),
            "joins": joins.joins,
            "wall_s": round(self.wall_s, 1),
            "failures": self.failures,
        }


def clip_detail(pair: str, clip: dict, audio: list[dict], judged: dict, judged_s: float, joins: list = (),
                spoken: str | None = None) -> dict:
    """One `--details` line: the chunks as synthesised (text, seconds, why the chunker cut there),
    the text the judge is scored against, per codec what it heard and its errors, and per join
    (after chunk i) its gap, level jump and step."""
    target = pair.split("-")[1]
    return {
        "pair": pair,
        "file": clip["file"],
        "reference": clip.get(f"ref_{target}"),
        "chunks": [{"text": r["text"], "duration_s": round(float(r["duration"]), 3), "reason": r.get("reason")}
                   for r in audio],
        "spoken": " ".join(r["text"] for r in audio) if spoken is None else spoken,
        "judged_s": round(judged_s, 3),
        "joins": [{"after_chunk": i, "at_s": round(j.position_s, 3), "gap_ms": round(j.gap_ms, 1),
                   "level_jump_db": round(j.level_jump_db, 2), "step": round(j.step, 4),
                   "after_punctuation": j.after_punctuation} for i, j in enumerate(joins)],
        **{codec: {"heard": heard, "errors": e.errors, "words": e.words,
                   "wer": round(e.errors / e.words, 4) if e.words else None}
           for codec, (e, heard) in judged.items()},
    }


def first_audio_per_commit(audio: list[dict]) -> list[float]:
    """Time to first audio of each commit event: a translator that commits a sentence at once is
    heard from the first chunk of it; the later chunks of the burst play after that one (their
    per-chunk figures, `chunk_ttfa_*`, add the synthesis of the chunks before them)."""
    first: dict[float, float] = {}
    for r in audio:
        key = round(float(r.get("commit_time", r["wall_time"] - r["ttfa_ms"] / 1000)), 3)
        first[key] = min(first.get(key, float("inf")), float(r["ttfa_ms"]))
    return list(first.values())
