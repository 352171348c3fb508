"""Metrics from hand-made event logs: every figure checked against a hand computation."""

from __future__ import annotations

import pytest

from speech.eval.aggregate import aggregate
from speech.eval.longform import align_to_references
from speech.asr.normalize import normalize
from speech.eval.metrics import normalized_erasure, playback, utterance_metrics
from speech.eval.quality import word_errors
from speech.stats import percentile


def w(text, start=None, end=None):
    d = {"text": text}
    if start is not None:
        d.update(start=start, end=end)
    return d


def upd(stage, committed, source_time, wall_time, tentative=()):
    return {"kind": "update", "stage": stage, "committed": list(committed), "tentative": list(tentative),
            "final": False, "end_of_stream": False, "source_time": source_time, "wall_time": wall_time}


LOG = [
    {"kind": "meta", "config": {}},
    {"kind": "input", "start": 0.0, "end": 1.0, "wall_time": 1.0},
    upd("asr", [], 1.0, 1.5, tentative=[w("the", 0.2, 0.5), w("cat", 0.5, 0.9)]),
    upd("asr", [w("the", 0.2, 0.5), w("cat", 0.5, 0.9)], 2.0, 2.6, tentative=[w("sad", 1.2, 1.8)]),
    upd("asr", [w("sat", 1.2, 1.8)], 4.0, 4.4),
    upd("mt", [], 2.0, 2.8, tentative=[w("el"), w("perro")]),
    upd("mt", [w("el"), w("gato")], 2.0, 3.0),
    upd("mt", [w("se"), w("sentó")], 4.0, 5.0),
    {"kind": "audio", "stage": "tts", "start": 3.1, "duration": 0.5, "wall_time": 3.1, "source_time": 2.0, "text": "el gato", "seq": 0},
    {"kind": "audio", "stage": "tts", "start": 5.2, "duration": 0.6, "wall_time": 5.2, "source_time": 4.0, "text": "se sentó", "seq": 1},
    {"kind": "stats", "stage": "asr", "compute_s": 2.0},
    {"kind": "stats", "stage": "mt", "compute_s": 1.0},
    {"kind": "stats", "stage": "eval", "peak_rss_mb": 512.0},
    {"kind": "end", "source_duration": 4.0, "wall_time": 5.8},
]


def test_utterance_metrics_by_hand():
    m = utterance_metrics(LOG, transcript="the cat sat", reference="el gato se sentó")
    assert m["asr_text"] == "the cat sat" and m["wer"] == 0
    # commit lags: the 2.0-0.5, 2.0-0.9, 4.0-1.8 (unaware); 2.6-0.5, 2.6-0.9, 4.4-1.8 (aware)
    assert m["asr_lag_median_cu"] == pytest.approx(1.5)
    assert m["asr_lag_median_ca"] == pytest.approx(2.1)
    assert m["asr_lag_p90_cu"] == pytest.approx(1.5 + 0.8 * (2.2 - 1.5))
    # translation: delays [2,2,4,4] on a 4 s source, reference of 4 words
    assert m["mt_text"] == "el gato se sentó"
    assert m["mt_AL_cu"] == pytest.approx((2 + 1 + 2) / 3)  # stops at the first delay >= 4
    assert m["mt_StartOffset_cu"] == 2.0 and m["mt_EndOffset_cu"] == 0.0
    assert m["mt_StartOffset_ca"] == 3.0 and m["mt_EndOffset_ca"] == pytest.approx(1.0)
    assert m["mt_AP_ca"] == pytest.approx((3 + 3 + 5 + 5) / 16)
    assert m["bleu"] == pytest.approx(100.0)
    # "el perro" shown, then "el gato" committed: one word erased over 4 final words
    assert m["mt_erasure"] == pytest.approx(0.25)
    # audio: played at 3.1 (0.5 s) and 5.2: one gap of 1.6 s (aware); unaware at 2.0 and 4.0;
    # StartOffset counts from the speech onset (the first recognised word starts at 0.2)
    assert m["audio_StartOffset_ca"] == pytest.approx(2.9) and m["audio_EndOffset_ca"] == pytest.approx(1.8)
    assert m["audio_discontinuities_ca"] == 1 and m["audio_silence_total_s_ca"] == pytest.approx(1.6)
    assert m["audio_StartOffset_cu"] == pytest.approx(1.8) and m["audio_EndOffset_cu"] == pytest.approx(0.6)
    assert m["rtf_asr"] == pytest.approx(0.5) and m["rtf_mt"] == pytest.approx(0.25)
    assert m["ttfa_ca"] == 3.1 and m["ttfa_cu"] == 2.0 and m["peak_rss_mb"] == 512.0
    assert m["notes"] == "no reference timeline: recognition lag against the committed words' own timestamps"


TIME_KEYS = ("source_time", "wall_time", "spoken_time", "start", "end", "play_start", "commit_time", "source_duration")


def delayed(records: list[dict], lead: float) -> list[dict]:
    """The log of the same session after `lead` seconds of silence (`speech eval --phases`)."""
    def move(d: dict) -> dict:
        out = {k: (v + lead if k in TIME_KEYS and isinstance(v, (int, float)) else v) for k, v in d.items()}
        for key in ("committed", "tentative"):
            if key in out:
                out[key] = [move(word) for word in out[key]]
        return out
    return [move(r) for r in records]


def test_leading_silence_does_not_move_any_latency():
    # Every figure counts from where the recording starts: a phase's silence is not latency.
    plain = utterance_metrics(LOG, transcript="the cat sat", reference="el gato se sentó")
    phased = utterance_metrics(delayed(LOG, 0.75), transcript="the cat sat", reference="el gato se sentó", origin=0.75)
    latency = [k for k in plain if k.startswith(("mt_", "audio_", "asr_lag", "ttfa")) and isinstance(plain[k], float)]
    assert len(latency) > 30 and {"mt_AL_cu", "mt_LAAL_ca", "audio_AL_ca", "audio_ATD_ca", "ttfa_ca"} <= set(latency)
    assert {k: phased[k] for k in latency} == pytest.approx({k: plain[k] for k in latency}, abs=1e-4)  # sample rounding
    # Without the origin the silence is counted as the system's delay.
    counted = utterance_metrics(delayed(LOG, 0.75), transcript="the cat sat", reference="el gato se sentó")
    assert counted["mt_AL_cu"] > plain["mt_AL_cu"] + 0.3 and counted["ttfa_ca"] == pytest.approx(plain["ttfa_ca"] + 0.75)


def test_missing_references_are_left_out_and_said():
    m = utterance_metrics(LOG)
    assert "wer" not in m and "bleu" not in m
    assert "no transcript" in m["notes"] and "no reference translation" in m["notes"]
    # without a reference the target length is the hypothesis length (4 here, the same)
    assert m["mt_AL_cu"] == pytest.approx((2 + 1 + 2) / 3)


def test_playback_waits_for_the_previous_chunk():
    chunks = [{"wall_time": 1.0, "duration": 2.0}, {"wall_time": 2.0, "duration": 1.0}, {"wall_time": 5.0, "duration": 1.0}]
    intervals, silences = playback(chunks, "ca")
    assert intervals == [(1.0, 2.0), (3.0, 1.0), (5.0, 1.0)]
    assert silences == [pytest.approx(1.0)]


def test_erasure_of_a_retracting_stage():
    log = [upd("mt", [], 1, 1, tentative=[w("a"), w("b"), w("c")]),
           upd("mt", [w("a")], 2, 2, tentative=[w("x")]),
           upd("mt", [w("x"), w("y")], 3, 3)]
    # a b c -> a x (2 erased) -> a x y (0 erased); final length 3
    assert normalized_erasure(log, "mt") == pytest.approx(2 / 3)


def test_percentile_matches_numpy_linear():
    assert percentile([1, 2, 3, 4], 90) == pytest.approx(3.7)
    assert percentile([], 50) is None


def test_wer_normalises_case_and_punctuation():
    assert normalize("However, it's DONE.") == "however it's done"
    c = word_errors("However, the cat sat!", "however the cat sat down")  # (reference, hypothesis)
    assert (c.errors, c.words) == (1, 4)


def test_aggregate_pools_and_averages():
    a = utterance_metrics(LOG, "the cat sat", "el gato se sentó")
    b = utterance_metrics(LOG, "the dog sat", "el gato se sentó")
    agg = aggregate([{**a, "reference": "el gato se sentó"}, {**b, "reference": "el gato se sentó"}])
    assert agg["utterances"] == 2
    assert agg["wer"] == pytest.approx(1 / 6)
    assert agg["mt_AL_cu"] == pytest.approx(a["mt_AL_cu"])
    assert agg["bleu"] == pytest.approx(100.0)
    assert agg["rtf_asr"] == pytest.approx(0.5)
    assert agg["asr_lag_median_cu"] == pytest.approx(1.5)


def test_aggregate_counts_what_was_not_heard_and_what_was_inserted():
    # an utterance whose output is silent is heard as nothing (an empty hypothesis), and one with an
    # empty transcript adds its inserted words: neither is left out of the corpus figures
    ref = "el gato se sentó en la alfombra"
    heard = {"reference": ref, "mt_text": ref, "output_asr_text": ref, "asr_errors": 0, "asr_ref_words": 3}
    silent = {"reference": ref, "mt_text": ref, "output_asr_text": "", "asr_errors": 4, "asr_ref_words": 0}
    alone = aggregate([heard], target="es")
    both = aggregate([heard, silent], target="es")
    assert alone["asr_bleu"] == pytest.approx(100.0)
    assert both["asr_bleu"] < 60 and both["bleu"] == pytest.approx(100.0)
    assert alone["wer"] == 0.0 and both["wer"] == pytest.approx(4 / 3)


def test_listener_lag_percentiles_pool_the_words_of_every_utterance():
    # one short utterance with a small lag, one long one with large lags: the corpus p50 is the
    # median word's lag (as `speech bench s2st` reports it), not the mean of the two medians
    short = {"audio_lag_p50_ca": 1.0, "_audio_lags_ca": [1.0]}
    long = {"audio_lag_p50_ca": 5.0, "_audio_lags_ca": [4.0, 5.0, 6.0, 5.0, 5.0]}
    agg = aggregate([short, long])
    assert agg["audio_lag_p50_ca"] == pytest.approx(5.0)
    assert agg["audio_lag_max_ca"] == pytest.approx(6.0)
    assert agg["audio_lag_p90_ca"] == pytest.approx(percentile([1.0, 4.0, 5.0, 6.0, 5.0, 5.0], 90))


def test_alignment_resegments_by_reference():
    hyp = "hola mundo que tal estas bien gracias y tu".split()
    refs = ["Hola, mundo.", "¿Qué tal estás?", "Bien, gracias. ¿Y tú?"]
    assert align_to_references(hyp, refs) == [0, 0, 1, 1, 1, 2, 2, 2, 2]
    # an inserted word stays with the segment before it; the split is monotone
    assert align_to_references("a b x c d e".split(), ["a b c", "d e"]) == [0, 0, 0, 0, 1, 1]
    assert align_to_references([], refs) == []


def test_recognition_lag_against_the_reference_timeline():
    from speech.types import Word

    # the reference has one more word ("down", never committed) and ends "cat" later than the ASR did
    reference = [Word("the", 0.2, 0.4), Word("cat", 0.5, 1.0), Word("sat", 1.2, 1.7), Word("down", 1.7, 2.0)]
    m = utterance_metrics(LOG, transcript="the cat sat", reference="el gato se sentó", asr_reference=reference)
    # unaware commit lags: 2.0-0.4, 2.0-1.0, 4.0-1.7 -> median 1.6
    assert m["asr_lag_median_cu"] == pytest.approx(1.6)
    assert (m["asr_reference_words"], m["asr_unmatched"]) == (4, 1) and m["asr_unmatched_share"] == pytest.approx(0.25)
    assert "no reference timeline" not in m["notes"]
