"""The report's plots (matplotlib, Agg backend, PNG), each drawn from event records or metrics."""

from __future__ import annotations

from pathlib import Path

from .metrics import CLOCKS, audio_records, committed_words, playback, source_duration


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path: Path) -> Path:  # noqa: ANN001 - pyplot and its figure
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def waterfall(records: list[dict], path: Path, title: str = "") -> Path:
    """One utterance on one time axis: source words, ASR and MT commits, audio played.

    Commits are drawn at their computation-aware time (filled) and computation-unaware time
    (hollow); a grey line joins each ASR word's end in the source to its commit.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 3.8))
    rows = {"source": 3, "ASR commit": 2, "MT commit": 1, "audio out": 0}
    dur = source_duration(records) or 0.0
    ax.barh(rows["source"], dur, left=0, height=0.5, color="#dde6f0", label="source speech")
    asr = committed_words(records, "asr")
    for e in asr:
        if e.word.start is not None and e.word.end is not None:
            ax.barh(rows["source"], e.word.end - e.word.start, left=e.word.start, height=0.5, color="#7fa6cf")
            ax.plot([e.word.end, e.wall_time], [rows["source"] - 0.25, rows["ASR commit"] + 0.1], color="#bbb", lw=0.6)
    for stage, colour in (("asr", "#1f77b4"), ("mt", "#d62728")):
        words = committed_words(records, stage)
        y = rows["ASR commit" if stage == "asr" else "MT commit"]
        ax.scatter([e.wall_time for e in words], [y] * len(words), s=14, color=colour, label=f"{stage} (aware)")
        ax.scatter([e.source_time for e in words], [y - 0.2] * len(words), s=14, facecolors="none", edgecolors=colour,
                   label=f"{stage} (unaware)")
        last = None
        for e in words:  # label each commit with its first word
            if e.wall_time != last:
                ax.annotate(e.word.text, (e.wall_time, y + 0.12), fontsize=6, rotation=30)
                last = e.wall_time
    intervals, _ = playback(audio_records(records), "ca")
    for start, d in intervals:
        ax.barh(rows["audio out"], d, left=start, height=0.5, color="#2ca02c")
    ax.set_yticks(list(rows.values()), list(rows.keys()))
    ax.set_xlabel("seconds since the stream started")
    ax.axvline(dur, color="k", ls=":", lw=0.8)
    ax.set_title(title or "latency waterfall")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(plt, fig, path)


def lag_over_time(records: list[dict], path: Path, title: str = "") -> Path:
    """Lag along a (long) stream: ASR commit lag per word, and MT/audio emission lag
    (computation-aware time minus source time consumed) per update; a rising line means the
    system falls behind real time."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.6))
    asr = [e for e in committed_words(records, "asr") if e.word.end is not None]
    for clock, style in (("ca", "-"), ("cu", "--")):
        attr = CLOCKS[clock]
        ax.plot([e.word.end for e in asr], [getattr(e, attr) - e.word.end for e in asr], style, lw=1,
                label=f"ASR commit lag ({'aware' if clock == 'ca' else 'unaware'})")
    mt = committed_words(records, "mt")
    ax.plot([e.source_time for e in mt], [e.wall_time - e.source_time for e in mt], ".", ms=3,
            label="MT commit: wall - source time")
    audio = audio_records(records)
    ax.plot([c.get("source_time", 0) for c in audio], [c["wall_time"] - c.get("source_time", 0) for c in audio],
            "x", ms=4, label="audio emission: wall - source time")
    ax.set_xlabel("source time (s)")
    ax.set_ylabel("lag (s)")
    ax.set_title(title or "lag over time")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _save(plt, fig, path)


def listener_lag(series: list[tuple[str, list[dict]]], path: Path, title: str = "") -> Path:
    """Listener lag of every word heard (hearing it - its source word spoken) against when its
    source was spoken, one series per (label, TTS records): e.g. duration control on and off."""
    from .listener import heard_words

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.6))
    for label, records in series:
        words = [w for w in heard_words(audio_records(records)) if w.lag is not None]
        ax.plot([w.spoken for w in words], [w.lag for w in words], ".", ms=3, label=label)
    ax.set_xlabel("source time: when the source word was spoken (s)")
    ax.set_ylabel("listener lag (s)")
    ax.set_title(title or "listener lag over the stream")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def quality_latency(points: list[dict], path: Path, quality: str = "chrf", latency: str = "mt_LAAL") -> Path:
    """One point per configuration: quality against latency, unaware and aware."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for clock, marker in (("cu", "o"), ("ca", "s")):
        pts = [(p["aggregate"].get(f"{latency}_{clock}"), p["aggregate"].get(quality), p["label"]) for p in points]
        pts = sorted((x, y, lab) for x, y, lab in pts if x is not None and y is not None)
        if not pts:
            continue
        ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], marker=marker, ls="-",
                label=f"{latency} ({'unaware' if clock == 'cu' else 'aware'})")
        for x, y, lab in pts:
            ax.annotate(lab, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(f"{latency} (s)")
    ax.set_ylabel(quality)
    ax.set_title("quality against latency")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)
