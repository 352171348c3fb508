"""Long-form evaluation: recordings joined into one stream, output re-segmented by alignment.

As StreamLAAL does (Papi et al. 2024, with mwerSegmenter): the whole stream's committed target
words are split into one segment per reference by a minimum-edit-distance alignment against the
concatenated references; each segment is then scored like a sentence, its delays taken relative
to the start of its recording in the stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .metrics import Emitted, translation_latency
from speech.asr.normalize import normalize

from .quality import sentence_scores

RATE = 16000


@dataclass(frozen=True)
class Segment:
    """Where one recording sits in the joined stream (seconds)."""

    offset: float
    duration: float


def join_recordings(paths: list[Path], gap_s: float, out: Path) -> list[Segment]:
    """Writes the recordings one after another, `gap_s` of silence between them, at 16 kHz."""
    from ..audio import read_audio, resample, write_wav

    pieces: list[np.ndarray] = []
    segments: list[Segment] = []
    t = 0.0
    gap = np.zeros(int(round(gap_s * RATE)), np.float32)
    for i, path in enumerate(paths):
        samples, rate, _ = read_audio(path)
        samples = resample(samples, rate, RATE)
        if i:
            pieces.append(gap)
            t += len(gap) / RATE
        segments.append(Segment(t, len(samples) / RATE))
        pieces.append(samples)
        t += len(samples) / RATE
    write_wav(out, np.concatenate(pieces), RATE)
    return segments


def align_to_references(hypothesis: list[str], references: list[str]) -> list[int]:
    """The reference index each hypothesis word belongs to (a monotone split).

    jiwer's word alignment (the one WER's) of the normalised hypothesis words against the
    concatenated normalised reference words; a matched or substituted word takes its reference
    word's segment, an inserted word the segment of the reference word aligned before it (the
    first one if none).
    """
    import jiwer

    # One token per hypothesis word, whatever normalisation made of it ("25" -> "twenty five",
    # "," -> ""), so alignment positions are hypothesis word positions.
    hyp = [normalize(w).replace(" ", "_") or "\u2205" for w in hypothesis]
    ref: list[str] = []
    seg_of: list[int] = []
    for i, r in enumerate(references):
        words = normalize(r).split()
        ref.extend(words)
        seg_of.extend([i] * len(words))
    n, m = len(hyp), len(ref)
    if n == 0:
        return []
    if m == 0:
        return [0] * n
    owner = [0] * n
    for chunk in jiwer.process_words(" ".join(ref), " ".join(hyp)).alignments[0]:
        for k in range(chunk.hyp_start_idx, chunk.hyp_end_idx):
            if chunk.type in ("equal", "substitute"):
                owner[k] = seg_of[chunk.ref_start_idx + k - chunk.hyp_start_idx]
            else:  # inserted: the segment of the reference word before it
                owner[k] = seg_of[chunk.ref_start_idx - 1] if chunk.ref_start_idx > 0 else 0
    # keep the split monotone (ties in the alignment could otherwise interleave)
    for k in range(1, n):
        owner[k] = max(owner[k], owner[k - 1])
    return owner


def resegment(words: list[Emitted], references: list[str]) -> list[list[Emitted]]:
    owner = align_to_references([e.word.text for e in words], references)
    out: list[list[Emitted]] = [[] for _ in references]
    for e, k in zip(words, owner):
        out[k].append(e)
    return out


def segment_metrics(words: list[Emitted], segment: Segment, reference: str | None) -> dict:
    """One re-segmented reference: quality, and latency relative to its recording's start."""
    shifted = [
        Emitted(e.word, e.source_time - segment.offset, e.wall_time - segment.offset) for e in words
    ]
    out: dict = {"mt_text": " ".join(e.word.text for e in words), "mt_words": len(words), "source_s": segment.duration}
    if reference:
        out.update(sentence_scores(out["mt_text"], reference))
    out.update(translation_latency(shifted, segment.duration, len(reference.split()) if reference else None))
    return out
