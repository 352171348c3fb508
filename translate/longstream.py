"""`speech bench mt --stream-minutes M`: one long stream through one translator state.

FLORES-101 devtest lines (from line 1, as one text) are fed at 150 words a minute of speech, word by
word; per quarter of the stream it reports the median tokens evaluated and time per update, the
largest KV-cache size, and the process's resident memory: flat figures mean that per-update cost
and memory do not grow with the stream.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from speech.progress import Progress
from speech.types import TextUpdate, Word

WORDS_PER_MINUTE = 150


def bench_long_stream(registry, source: str, target: str, backend: str, policy: str, minutes: float,
                      data: Path, options: dict | None = None) -> dict:  # noqa: ANN001
    import psutil

    from .bench import options_for, read_lines
    from .stage import open_translation

    n = int(minutes * WORDS_PER_MINUTE)
    words = " ".join(read_lines(data, source)).split()[:n]
    translation = open_translation(registry, source, target, backend, policy,
                                   backend_options=options_for(registry, backend, options or {}))
    proc = psutil.Process()
    rows: list[tuple[int, int, float, int]] = []  # (word index, tokens, ms, cache tokens)
    rss: list[int] = []
    quarter = max(len(words) // 4, 1)
    try:
        with Progress(len(words), f"stream {source}-{target} {backend}") as progress:
            for i, word in enumerate(words):
                for e in translation.step(TextUpdate(committed=(Word(word),), source_time=i / 2.5)):
                    if e.stats.calls:
                        rows.append((i, e.stats.tokens_evaluated, e.stats.ms, e.stats.cache_tokens))
                if (i + 1) % quarter == 0:
                    rss.append(proc.memory_info().rss)
                if (i + 1) % 25 == 0:
                    progress.update(25)
            translation.finish_steps()
    finally:
        translation.stream.close()
    quarters = []
    for q in range(4):
        part = [r for r in rows[1:] if q * quarter <= r[0] < (q + 1) * quarter]
        if not part:
            continue
        quarters.append({
            "tokens_per_update_p50": statistics.median(r[1] for r in part),
            "tokens_per_update_max": max(r[1] for r in part),
            "update_ms_p50": round(statistics.median(r[2] for r in part), 1),
            "cache_tokens_max": max(r[3] for r in part),
            "rss_mb": round(rss[q] / 2**20, 1) if q < len(rss) else None,
        })
    return {"words": len(words), "minutes": minutes, "sentences": translation.sentences,
            "forced_segments": translation.segmenter.forced, "quarters": quarters}
