"""Joins: padding trimmed, edges faded, touching chunks cross-faded, and the measure sees gaps and clicks."""

from __future__ import annotations

import numpy as np
import pytest

from speech.tts.joins import (
    JoinConfig, JoinSummary, ListenerTimeline, measure_joins, prepare_chunk, shape_edges, trim_padding,
)

RATE = 22050


def tone(seconds: float, level: float = 0.3, freq: float = 220.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (level * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def padded(lead: float, body: np.ndarray, tail: float) -> np.ndarray:
    noise = np.random.default_rng(0).normal(0, 1e-5, int(RATE * (lead + tail))).astype(np.float32)
    return np.concatenate([noise[: int(RATE * lead)], body, noise[int(RATE * lead) :]])


def test_trim_keeps_short_fixed_pauses():
    x = padded(0.07, tone(0.5), 0.2)
    y = trim_padding(x, RATE, JoinConfig(keep_lead_ms=10, keep_tail_ms=25))
    assert abs(len(y) / RATE - (0.5 + 0.010 + 0.025)) < 0.006
    assert trim_padding(np.zeros(1000, np.float32), RATE).size == 0


def test_a_faint_last_burst_after_a_silence_is_cut_with_the_padding():
    def word_then(closure_s: float, burst: np.ndarray) -> np.ndarray:
        return padded(0.07, np.concatenate([tone(0.5), np.zeros(int(RATE * closure_s), np.float32), burst]), 0.2)

    faint = tone(0.01, level=0.005)  # -49 dBFS RMS: a final stop's release 30 dB under the word
    y = trim_padding(word_then(0.065, faint), RATE)
    assert abs(len(y) / RATE - (0.5 + 0.010 + 0.025)) < 0.006  # ends 25 ms after the word
    assert len(trim_padding(word_then(0.065, faint), RATE, JoinConfig(faint_ms=0))) / RATE > 0.5 + 0.065 + 0.01
    # kept: a faint burst right after the word, a loud one, a long one
    for x in (word_then(0.015, faint), word_then(0.065, tone(0.01, level=0.05)), word_then(0.065, tone(0.05, level=0.005))):
        assert len(trim_padding(x, RATE)) == len(trim_padding(x, RATE, JoinConfig(faint_ms=0)))


def test_edges_start_and_end_at_zero_and_loudness_is_not_normalised():
    x = tone(0.3, level=0.1)
    y = shape_edges(x, RATE, 8)
    assert abs(y[0]) < 0.01 * 0.1 and abs(y[-1]) < 0.01 * 0.1
    mid = slice(len(y) // 4, 3 * len(y) // 4)
    assert np.max(np.abs(y[mid])) == pytest.approx(0.1, rel=0.01)  # no per-chunk gain


def test_timeline_places_chunks_at_emission_or_after_the_previous():
    tl = ListenerTimeline(RATE, crossfade_ms=0)
    a = tl.add(tone(1.0), emitted=0.5)
    b = tl.add(tone(1.0), emitted=1.0)  # ready while a plays: waits for a's end
    c = tl.add(tone(0.5), emitted=4.0)  # ready after a silence
    assert (a.start, b.start, c.start) == pytest.approx((0.5, 1.5, 4.0))
    assert tl.duration == pytest.approx(4.5)
    compact = ListenerTimeline(RATE, compact=True, crossfade_ms=0)
    for emitted in (0.5, 1.0, 4.0):
        compact.add(tone(0.5), emitted=emitted)
    assert compact.duration == pytest.approx(1.5)


def test_touching_chunks_cross_fade_without_a_dip_or_click():
    cfg = JoinConfig(fade_ms=8)
    tl = ListenerTimeline(RATE, compact=True, crossfade_ms=8)
    tl.add(shape_edges(tone(0.5), RATE, 8), emitted=0)
    tl.add(shape_edges(tone(0.5), RATE, 8), emitted=0)
    out = tl.render()
    assert len(out) == pytest.approx(RATE * 1.0 - int(RATE * 0.008), abs=2)
    [report] = measure_joins(out, RATE, tl.boundaries(), cfg.silence_db)
    assert report.gap_ms == 0 and abs(report.level_jump_db) < 1.0


def test_measure_finds_gaps_level_jumps_and_clicks():
    quiet_then_loud = np.concatenate([tone(0.5, 0.05), np.zeros(int(RATE * 0.12), np.float32), tone(0.5, 0.4)])
    [r] = measure_joins(quiet_then_loud, RATE, [int(RATE * 0.55)])
    assert r.gap_ms >= 100 and r.level_jump_db > 15
    # a hard cut from a loud sample to zero is a step (click)
    click = np.concatenate([np.full(2000, 0.5, np.float32), np.zeros(2000, np.float32)])
    [c] = measure_joins(click, RATE, [2000])
    assert c.step >= 0.5
    assert JoinSummary.of([r, c]).gaps_over_50ms == 1


def test_prepared_chunks_joined_compactly_have_short_gaps():
    tl = ListenerTimeline(RATE, compact=True)
    for i in range(4):
        tl.add(prepare_chunk(padded(0.06, tone(0.4, 0.2, 200 + 40 * i), 0.18), RATE)[0], emitted=0)
    summary = JoinSummary.of(measure_joins(tl.render(), RATE, tl.boundaries()))
    assert summary.joins == 3
    assert summary.max_gap_ms <= 50 and summary.max_step < 0.05


def test_gaps_after_punctuation_are_reported_apart_from_mid_clause_ones():
    from speech.tts.joins import ends_with_pause

    assert ends_with_pause("the house.") and ends_with_pause('he said, "yes!"') and ends_with_pause("first,")
    assert not ends_with_pause("he was in") and not ends_with_pause("Dr") and not ends_with_pause("")
    gap = np.zeros(int(RATE * 0.12), np.float32)
    x = np.concatenate([tone(0.3), gap, tone(0.3), gap, tone(0.3)])
    joins = [int(RATE * 0.36), int(RATE * 0.78)]
    reports = measure_joins(x, RATE, joins, left_texts=["one sentence.", "and then"])
    assert [r.after_punctuation for r in reports] == [True, False]
    summary = JoinSummary.of(reports)
    assert summary.gaps_over_50ms == 2 and summary.gaps_over_50ms_after_punctuation == 1
    assert summary.max_gap_mid_clause_ms >= 100
    # without the texts every join counts as mid-clause
    assert JoinSummary.of(measure_joins(x, RATE, joins)).gaps_over_50ms_after_punctuation == 0



def test_a_part_inside_a_piece_keeps_its_pauses_at_the_inner_edges():
    x = padded(0.07, tone(0.5), 0.2)
    whole, lead = prepare_chunk(x, RATE)
    assert lead > 0 and len(whole) < len(x) - int(RATE * 0.2)
    opening, lead = prepare_chunk(x, RATE, head=True, tail=False)  # the first window: its end is inside the piece
    assert lead > 0 and len(opening) == len(x) - lead
    inner, lead = prepare_chunk(x, RATE, head=False, tail=False)
    assert lead == 0 and len(inner) == len(x)
    silent, lead = prepare_chunk(np.zeros(2000, np.float32), RATE, head=False, tail=False)  # a pause between windows
    assert len(silent) == 2000 and lead == 0
