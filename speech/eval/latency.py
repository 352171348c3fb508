"""Simultaneous-translation latency metrics, following SimulEval's scorers exactly.

Each function scores one instance (one utterance). `delays[i]` is when output token i was emitted,
in the same unit as `source_length` (seconds here): the source seconds consumed for the
computation-unaware form, the (emulated) wall-clock time for the computation-aware form. Averaging
over instances is the caller's job (SimulEval takes the plain mean of per-instance scores).

`target_length` is the reference length in tokens when a reference exists (SimulEval's
`use_ref_len`), else the hypothesis length `len(delays)`.
"""

from __future__ import annotations

from statistics import mean
from typing import Sequence


def _check(delays: Sequence[float], source_length: float) -> None:
    if not delays:
        raise ValueError("latency needs at least one emitted token")
    if source_length <= 0:
        raise ValueError(f"source length must be positive, got {source_length}")


def average_lagging(delays: Sequence[float], source_length: float, target_length: float) -> float:
    """AL (STACL) with SimulEval's oracle rate |Y|/|X|, summed up to the first delay >= |X|."""
    _check(delays, source_length)
    if delays[0] > source_length:
        return float(delays[0])
    gamma = target_length / source_length
    total, tau = 0.0, 0
    for i, d in enumerate(delays):
        total += d - i / gamma
        tau = i + 1
        if d >= source_length:
            break
    return total / tau


def length_adaptive_average_lagging(delays: Sequence[float], source_length: float, target_length: float) -> float:
    """LAAL: AL with the rate max(|hyp|, |ref|)/|X|, so over-generation is not rewarded."""
    return average_lagging(delays, source_length, max(len(delays), target_length))


def average_proportion(delays: Sequence[float], source_length: float, target_length: float) -> float:
    """AP = sum(delays) / (|X| * |Y|), in the units used (SimulEval passes the reference length)."""
    _check(delays, source_length)
    return sum(delays) / (source_length * target_length)


def differentiable_average_lagging(delays: Sequence[float], source_length: float, target_length: float = 0) -> float:
    """DAL: each delay is at least the previous one plus 1/gamma, gamma = |hyp|/|X| (SimulEval
    uses the hypothesis length here whatever `target_length` says)."""
    _check(delays, source_length)
    n = len(delays)
    gamma = n / source_length
    total, last = 0.0, 0.0
    for i, g in enumerate(delays):
        g_prime = g if i == 0 else max(g, last + 1 / gamma)
        total += g_prime - i / gamma
        last = g_prime
    return total / n


def start_offset(delays: Sequence[float], source_length: float = 1.0, target_length: float = 0) -> float:
    _check(delays, source_length)
    return float(delays[0])


def end_offset(delays: Sequence[float], source_length: float, target_length: float = 0) -> float:
    _check(delays, source_length)
    return float(delays[-1] - source_length)


def speech_end_offset(intervals: Sequence[tuple[float, float]], source_length: float) -> float:
    """EndOffset for speech output: end of the last played interval (start, duration) minus |X|."""
    if not intervals:
        raise ValueError("speech EndOffset needs at least one played interval")
    start, duration = intervals[-1]
    return start + duration - source_length


# ATD works on token lengths (300 ms a source word). Its chunking uses divmod, which is exact on
# SimulEval's millisecond values but not on binary fractions of seconds (divmod(0.6, 0.3) leaves
# 0.2999...). So ATD converts seconds to milliseconds rounded to the microsecond, and back.
def _ms(x: float) -> float:
    return round(x * 1000.0, 6)


def average_token_delay(
    delays: Sequence[float],
    elapsed: Sequence[float] | None = None,
    durations: Sequence[float] | None = None,
    src_token_s: float = 0.3,
    tgt_token_s: float = 0.3,
) -> float:
    """ATD (Kano et al. 2023) as SimulEval computes it for speech input.

    - text output: `durations` is None; target tokens have length 0.
    - speech output: `durations[i]` is the duration of output segment i (seconds); each segment is
      cut into `tgt_token_s` tokens.
    - computation-aware: pass `elapsed` (wall times of the same emissions); the compute time
      between emissions is added to the target token times, as SimulEval does.
    """
    if not delays:
        raise ValueError("latency needs at least one emitted token")
    d_ms = [_ms(d) for d in delays]
    if elapsed is not None:
        e_ms = [_ms(e) for e in elapsed]
        if e_ms != [0.0] * len(d_ms):
            compute_elapsed = [e - d for e, d in zip(e_ms, d_ms)]
            compute_times = [a - b for a, b in zip(compute_elapsed, [0.0] + compute_elapsed[:-1])]
        else:
            compute_times = e_ms
    else:
        compute_times = [0.0] * len(d_ms)
    src_len = _ms(src_token_s)

    chunk_sizes: dict[str, list[float]] = {"src": [0], "tgt": [0]}
    token_to_chunk: dict[str, list[int]] = {"src": [0], "tgt": [0]}
    token_to_time: dict[str, list[float]] = {"src": [0.0], "tgt": [0.0]}
    delays_no_dup = sorted(set(d_ms), key=d_ms.index)

    if durations is None:
        tgt_token_lens = [0.0] * len(d_ms)
        prev = None
        for d in d_ms:
            if d != prev:
                chunk_sizes["tgt"].append(1)
            else:
                chunk_sizes["tgt"][-1] += 1
            prev = d
        for i, size in enumerate(chunk_sizes["tgt"][1:], 1):
            token_to_chunk["tgt"] += [i] * int(size)
    else:
        tgt_len = _ms(tgt_token_s)
        tgt_token_lens = []
        chunk_durations: list[float] = []
        chunk_compute: list[float] = []
        prev = None
        for d, c, dur in zip(d_ms, compute_times, [_ms(x) for x in durations]):
            if d != prev:
                chunk_durations.append(dur)
                chunk_compute.append(c)
            else:
                chunk_durations[-1] += dur
                chunk_compute[-1] += c
            prev = d
        s2s_delays: list[float] = []
        s2s_compute: list[float] = []
        for i, dur in enumerate(chunk_durations, 1):
            n, rest = divmod(round(dur, 6), tgt_len)
            lens = int(n) * [tgt_len] + ([round(rest, 6)] if round(rest, 6) != 0 else [])
            tgt_token_lens += lens
            chunk_sizes["tgt"].append(len(lens))
            token_to_chunk["tgt"] += [i] * len(lens)
            s2s_delays += [delays_no_dup[i - 1]] * len(lens)
            s2s_compute += [chunk_compute[i - 1] / len(lens)] * len(lens) if lens else []
        d_ms, compute_times = s2s_delays, s2s_compute

    src_chunk_durations = [a - b for a, b in zip(delays_no_dup, [0.0] + delays_no_dup[:-1])]
    for i, dur in enumerate(src_chunk_durations, 1):
        n, rest = divmod(round(dur, 6), src_len)
        lens = int(n) * [src_len] + ([round(rest, 6)] if round(rest, 6) != 0 else [])
        chunk_sizes["src"].append(len(lens))
        for token_len in lens:
            token_to_time["src"].append(token_to_time["src"][-1] + token_len)
            token_to_chunk["src"].append(i)

    for d, c, token_len in zip(d_ms, compute_times, tgt_token_lens):
        start = max(d, token_to_time["tgt"][-1])
        token_to_time["tgt"].append(start + token_len + c)

    atd_delays = []
    for t in range(1, len(token_to_chunk["tgt"])):
        chunk_id = token_to_chunk["tgt"][t]
        acc_x = sum(chunk_sizes["src"][:chunk_id])
        acc_y = sum(chunk_sizes["tgt"][:chunk_id])
        s = t - max(0, acc_y - acc_x)
        current_src = sum(chunk_sizes["src"][: chunk_id + 1])
        s = s if s < current_src else current_src
        atd_delays.append(token_to_time["tgt"][t] - token_to_time["src"][int(s)])
    return float(mean(atd_delays)) / 1000.0


TEXT_METRICS = {
    "AL": average_lagging,
    "LAAL": length_adaptive_average_lagging,
    "AP": average_proportion,
    "DAL": differentiable_average_lagging,
    "StartOffset": start_offset,
    "EndOffset": end_offset,
}


def text_latency(
    delays: Sequence[float],
    source_length: float,
    reference_length: int | None,
    elapsed: Sequence[float] | None = None,
) -> dict[str, float]:
    """Every text-output metric for one instance; the target length is the reference's when known.

    Without `elapsed`: the computation-unaware scores. With it: SimulEval's computation-aware
    scores (AL and the others on `elapsed`; ATD on the delays plus the compute time between them).
    """
    target_length = reference_length if reference_length else len(delays)
    times = elapsed if elapsed is not None else delays
    out = {name: fn(times, source_length, target_length) for name, fn in TEXT_METRICS.items()}
    out["ATD"] = average_token_delay(delays, elapsed=elapsed)
    return out
