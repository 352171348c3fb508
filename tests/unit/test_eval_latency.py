"""Latency metrics against SimulEval's own scorers.

Reference values were produced by SimulEval 1.1.4's latency_scorer (LogInstance / a
SpeechToSpeechInstance, delays in milliseconds; offsets and lags divided by 1000 here, AP is
unit-free). Cases cover exact-length, over-generation (B, F), under-generation (C), a first delay
beyond the source (D) and the computation-aware form (E).
"""

from __future__ import annotations

import pytest

from speech.eval.latency import (
    average_token_delay,
    speech_end_offset,
    text_latency,
)

# name: (delays s, source s, reference words, elapsed s or None, SimulEval's scores)
CASES = {
    "A": ([1, 2, 3, 4], 4, 4, None,
          dict(AL=1.0, LAAL=1.0, AP=0.625, DAL=1.0, ATD=1.8, StartOffset=1.0, EndOffset=0.0)),
    "B_over": ([1, 1, 2.5, 3, 3, 3], 3, 4, None,
               dict(AL=0.75, LAAL=1.125, AP=1.125, DAL=1.3333333333333333, ATD=1.3, StartOffset=1.0, EndOffset=0.0)),
    "C_under": ([0.5, 1.7, 2.9], 4, 6, None,
                dict(AL=1.0333333333333333, LAAL=1.0333333333333333, AP=0.2125, DAL=0.5,
                     ATD=1.1666666666666667, StartOffset=0.5, EndOffset=-1.1)),
    "D_late": ([5, 5], 4, 2, None,
               dict(AL=5.0, LAAL=5.0, AP=1.25, DAL=5.0, ATD=4.55, StartOffset=5.0, EndOffset=1.0)),
    "E_aware": ([1, 2, 3, 4], 4, 4, [1.2, 2.5, 3.1, 4.6],
                dict(AL=1.35, LAAL=1.35, AP=0.7125, DAL=1.45, ATD=1.95, StartOffset=1.2, EndOffset=0.6)),
    "F_over": ([0.3, 0.3, 0.6, 1.25, 1.25, 2.0, 2.4], 2.4, 5, None,
               dict(AL=-0.28285714285714283, LAAL=0.12857142857142867, AP=0.675, DAL=0.306122448979592,
                    ATD=0.2, StartOffset=0.3, EndOffset=0.0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_latency_equals_simuleval(name):
    delays, source, ref_len, elapsed, expected = CASES[name]
    got = text_latency(delays, source, ref_len, elapsed=elapsed)
    for metric, value in expected.items():
        assert got[metric] == pytest.approx(value, abs=1e-6), metric


def test_brief_reference_values():
    got = text_latency([1, 2, 3, 4], 4, 4)
    assert (got["AL"], got["LAAL"], got["AP"], got["DAL"], got["StartOffset"], got["EndOffset"]) == pytest.approx(
        (1.0, 1.0, 0.625, 1.0, 1.0, 0.0), abs=1e-6
    )
    got = text_latency([1, 1, 2.5, 3, 3, 3], 3, 4)
    assert got["AL"] == pytest.approx(0.75, abs=1e-6)
    assert got["LAAL"] == pytest.approx(1.125, abs=1e-6)


def test_without_reference_uses_hypothesis_length():
    # No reference: |Y| = |hyp| = 6, so AL = LAAL (over-generation is invisible without one).
    got = text_latency([1, 1, 2.5, 3, 3, 3], 3, None)
    assert got["AL"] == pytest.approx(got["LAAL"]) == pytest.approx(1.125)


def test_speech_output_atd_equals_simuleval():
    delays, durations = [1, 2, 2, 3.5], [0.5, 0.7, 0.4, 1.0]
    assert average_token_delay(delays, durations=durations) == pytest.approx(1.6, abs=1e-6)
    aware = average_token_delay(delays, durations=durations, elapsed=[1.1, 2.3, 2.4, 3.9])
    assert aware == pytest.approx(1.69, abs=1e-6)


def test_speech_end_offset_uses_last_interval_end():
    assert speech_end_offset([(1.0, 0.5), (2.0, 1.5)], 3.0) == pytest.approx(0.5)


def test_empty_delays_is_an_error():
    with pytest.raises(ValueError):
        text_latency([], 3, 4)
