"""`speech bench s2st --long MINUTES`: a long talk through the whole pipeline, listener lag per minute.

A talk is built from the shared recordings of one language (FLEURS, plus LibriVox and Leopard
where they speak it), joined with natural pauses of 0.3-1.0 s (seeded) and repeated until it lasts
MINUTES. It runs on the simulated clock, computation-aware: recognition once per source language,
translation once per pair, then synthesis once per duration-control setting on the same
translated stream, so "control on" and "control off" differ only in the TTS stage. A third
setting, "reactive", is the control without its look-ahead: each piece's speed from its own
backlog only (`PaceConfig.look_ahead` and `tentative` off).

Per pair and control setting: listener lag (speech.eval.listener) over the whole talk (p50, p90)
and per minute (p50, p90, max), its least-squares slope in seconds per minute, StartOffset,
EndOffset, the output/input duration ratio, how often each control acted, and where the lag goes
(`lag_parts`: over every word and over the slowest tenth).
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from speech.eval.manifest import unmarked_language

RATE = 16000


@dataclass
class Talk:
    language: str
    samples: np.ndarray  # 16 kHz mono
    clips: list[tuple[float, str]]  # (start in the talk, file)

    @property
    def duration(self) -> float:
        return len(self.samples) / RATE


def talk_clips(data: Path, language: str) -> list[Path]:
    """The shared recordings in `language`: FLEURS, then Leopard, then LibriVox (English)."""
    out: list[Path] = []
    for folder in ("fleurs", "leopard", "librivox"):
        manifest = data / "speech" / folder / "manifest.jsonl"
        if not manifest.is_file():
            continue
        for line in manifest.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else None
            if row and (row.get("lang") or unmarked_language(manifest, language)) == language:
                out.append(manifest.parent / row["file"])
    return out


def build_talk(data: Path, language: str, minutes: float, seed: int = 0) -> Talk:
    """The clips of `language` in a seeded random order, joined with 0.3-1.0 s pauses, repeated
    until the talk lasts `minutes`."""
    from speech.audio import read_audio, resample
    from speech.errors import UserError

    files = talk_clips(data, language)
    if not files:
        raise UserError(f"{data}: no recordings in language {language!r} to build a talk from")
    rng = random.Random(seed)
    cache: dict[Path, np.ndarray] = {}
    pieces, clips, t = [], [], 0.0
    while t < minutes * 60:
        order = files[:]
        rng.shuffle(order)
        for f in order:
            if f not in cache:
                samples, rate, _ = read_audio(f)
                cache[f] = resample(samples, rate, RATE).astype(np.float32)
            clips.append((t, f.name))
            pause = np.zeros(int(RATE * rng.uniform(0.3, 1.0)), np.float32)
            pieces += [cache[f], pause]
            t += (len(cache[f]) + len(pause)) / RATE
            if t >= minutes * 60:
                break
    return Talk(language, np.concatenate(pieces), clips)


async def run_stages(registry, config, source, progress=None) -> tuple[list[dict], list]:  # noqa: ANN001
    """Run `config.stages` on the simulated clock from `source`; returns the log and what the
    last stage emitted."""
    from speech.clock import SimulatedClock
    from speech.events import EventLog
    from speech.pipeline import build_session

    log = EventLog()
    out: list = []

    async def sink(inbox) -> None:  # noqa: ANN001
        async for item in inbox:
            out.append(item)

    session = build_session(registry, config, source=source, sink=sink, clock=SimulatedClock(), log=log)
    await session.run()
    return log.records, out


def audio_source(talk: Talk, chunk_ms: int, progress=None):  # noqa: ANN001
    from speech.audio import iter_chunks
    from speech.types import AudioChunk

    async def feed(outbox) -> None:  # noqa: ANN001
        for i, chunk in enumerate(iter_chunks(talk.samples, RATE, RATE, chunk_ms)):
            await outbox.put(AudioChunk(chunk.samples, chunk.sample_rate, chunk.start, chunk.seq, wall_time=chunk.end))
            if progress is not None and i % 50 == 49:
                progress(chunk.end)
    return feed


def replay(items: list):  # noqa: ANN001
    async def feed(outbox) -> None:  # noqa: ANN001
        for item in items:
            await outbox.put(item)
    return feed


# --control names: the duration-control settings a long talk can be spoken with
CONTROL_SETTINGS = {
    "on": {"control": True},
    "off": {"control": False},
    "reactive": {"control": True, "look_ahead": False, "tentative": False},
}


def summarise(pair: str, control: str, records: list[dict], asr_records: list[dict], talk: Talk) -> dict:
    """The long-talk figures of one pair and control setting (see the module doc)."""
    from speech.eval.listener import (audio_records, heard_words, lag_parts, lag_per_minute, lag_slope,
                                      listener_latency, start_parts)
    from speech.stats import percentile

    audio = audio_records(records)
    words = heard_words(audio)
    figures = listener_latency(asr_records + records, talk.duration)
    lags = [w.lag for w in words if w.lag is not None]
    p90 = percentile(lags, 90)
    cu_words = heard_words(audio, "cu")
    cu_lags = [w.lag for w in cu_words if w.lag is not None]
    minutes = lag_per_minute(words)
    stats = next((r for r in records if r.get("kind") == "stats" and r.get("stage") == "tts"), {})
    chunks = max(1, stats.get("chunks", len(audio)))
    spoken = sum(len(r.get("word_times") or []) for r in audio)
    r3 = lambda x: None if x is None else round(float(x), 3)  # noqa: E731
    return {
        "pair": pair,
        "control": control,
        "talk_s": round(talk.duration, 1),
        "listener_lag_p50_s": r3(percentile(lags, 50)),
        "listener_lag_p90_s": r3(p90),
        "listener_lag_max_s": r3(max(lags) if lags else None),
        "listener_lag_p50_s_per_minute": [r3(m["p50"]) for m in minutes],
        "listener_lag_p90_s_per_minute": [r3(m["p90"]) for m in minutes],
        "listener_lag_max_s_per_minute": [r3(m["max"]) for m in minutes],
        "listener_lag_slope_s_per_min": r3(lag_slope(words)),
        "start_offset_s": r3(figures.get("StartOffset")),
        "end_offset_s": r3(figures.get("EndOffset")),
        "duration_ratio": r3(sum(float(r["duration"]) for r in audio) / talk.duration),
        "speed_max": stats.get("speed_max"),
        "share_chunks_faster": r3(stats.get("faster", 0) / chunks),
        "share_chunks_pauses_shortened": r3(stats.get("pauses_shortened", 0) / chunks),
        "share_words_dropped": r3(stats.get("words_dropped", 0) / max(1, spoken + stats.get("words_dropped", 0))),
        "words_spoken": spoken,
        # whole pieces not spoken because the voice fell more than skip_lag_s behind (tts.pace)
        "words_unspoken": stats.get("words_skipped", 0),
        # words the relief voice spoke while the main one was too far behind (tts.pace)
        "words_relief": stats.get("words_relief", 0),
        # the main voice's synthesis seconds per second of its speech (None: under 2 s of synthesis)
        "voice_rtf": r3(stats.get("voice_rtf")),
        # where the lag goes (speech.eval.listener.LAG_PARTS), over every word and over the slowest tenth
        "lag_parts_s": {k: r3(v) for k, v in lag_parts(audio).items()},
        "lag_parts_s_above_p90": {k: r3(v) for k, v in lag_parts(audio, p90).items()},
        # where the talk's StartOffset goes (speech.eval.listener.START_PARTS)
        "start_parts_s": {k: r3(v) for k, v in start_parts(asr_records + records).items()},
        # the same on the computation-unaware timeline (deterministic: no compute time counted)
        "listener_lag_p90_s_cu": r3(percentile(cu_lags, 90)),
        "listener_lag_p90_s_per_minute_cu": [r3(m["p90"]) for m in lag_per_minute(cu_words)],
        "listener_lag_slope_s_per_min_cu": r3(lag_slope(cu_words)),
        "end_offset_s_cu": r3(listener_latency(asr_records + records, talk.duration, "cu").get("EndOffset")),
        "_lags": [(w.spoken, w.lag) for w in words if w.lag is not None],
    }


def run_long(registry, pairs: list[str], minutes: float, args, data: Path) -> list[dict]:  # noqa: ANN001
    """Every pair with control on and off; recognition shared by pairs with one source language."""
    from speech.progress import Progress

    from .bench import bench_config, tts_options

    results = []
    recognised: dict[str, tuple[list[dict], list, Talk]] = {}
    for pair in pairs:
        source, target = pair.split("-")
        base = bench_config(args, source, target)
        base = base.replace(extra={**base.extra, "tts_options": tts_options(registry, target, base.voice, args.tts_set)})
        if source not in recognised:
            talk = build_talk(data, source, minutes, seed=args.seed)
            with Progress(int(talk.duration), label=f"long talk {source}: recognition") as bar:
                done = [0]

                def step(t: float) -> None:
                    bar.update(int(t) - done[0])
                    done[0] = int(t)
                asr_records, asr_out = asyncio.run(run_stages(registry, base.replace(stages=("asr",)),
                                                              audio_source(talk, base.chunk_ms, step)))
            recognised[source] = (asr_records, asr_out, talk)
        asr_records, asr_out, talk = recognised[source]
        mt_records, mt_out = asyncio.run(run_stages(registry, base.replace(stages=("mt",)), replay(asr_out)))
        for control in args.control:
            pace = {**args.pace, **CONTROL_SETTINGS[control]}
            config = base.replace(stages=("tts",), extra={**base.extra, "tts_pace": pace})
            records, _ = asyncio.run(run_stages(registry, config, replay(mt_out)))
            results.append(summarise(pair, control, records, asr_records, talk))
            print(f"{pair} control {control}: lag p50 {results[-1]['listener_lag_p50_s']} s "
                  f"p90 {results[-1]['listener_lag_p90_s']} s, end offset {results[-1]['end_offset_s']} s",
                  file=__import__("sys").stderr)
    return results


def plot(results: list[dict], path: str) -> None:
    """Listener lag against source time, one panel per pair, control on and off together."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = list(dict.fromkeys(r["pair"] for r in results))
    fig, axes = plt.subplots(len(pairs), 1, figsize=(9, 3.2 * len(pairs)), squeeze=False)
    for ax, pair in zip(axes[:, 0], pairs):
        # "on" last, so the default is drawn over the settings it is compared with
        for r in sorted(results, key=lambda r: r["control"] == "on"):
            if r["pair"] != pair:
                continue
            pts = np.array(r["_lags"]) if r["_lags"] else np.zeros((0, 2))
            ax.plot(pts[:, 0] / 60, pts[:, 1], ".", ms=2, label=f"control {r['control']}",
                    color={"on": "tab:blue", "off": "tab:red"}.get(r["control"], "tab:green"))
        ax.set_title(f"{pair}: listener lag (hearing a word - its source word spoken)")
        ax.set_xlabel("source time (minutes)")
        ax.set_ylabel("lag (s)")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def public(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if not k.startswith("_")}


def respeak(records: list[dict], control: bool) -> list[dict]:
    """The TTS stage's log for the same translated stream as `records` (an event log of the whole
    pipeline), spoken again with duration control `control`: the comparison of control on and
    off without running recognition and translation again."""
    from speech.backends import default_registry
    from speech.events import updates
    from speech.pipeline import PipelineConfig

    meta = next((r for r in records if r.get("kind") == "meta"), {})
    known = set(PipelineConfig.__dataclass_fields__)
    config = PipelineConfig(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in meta.get("config", {}).items() if k in known})
    extra = dict(config.extra)
    extra["tts_pace"] = {**extra.get("tts_pace", {}), "control": control}
    tts, _ = asyncio.run(run_stages(default_registry(), config.replace(stages=("tts",), extra=extra),
                                    replay(list(updates(records, "mt")))))
    return tts


def run_long_talk(registry, pairs: list[str], args) -> int:  # noqa: ANN001 - argparse.Namespace
    from speech.errors import UserError

    if args.long <= 0 or args.text_only:
        raise UserError("--long needs a positive number of minutes and the whole pipeline (not --text-only)")
    args.control = [c.strip() for c in args.control.split(",") if c.strip()]
    unknown = [c for c in args.control if c not in CONTROL_SETTINGS]
    if unknown or not args.control:
        raise UserError(f"--control: give a comma-separated list of {', '.join(CONTROL_SETTINGS)} "
                        f"(e.g. on,off), got {','.join(unknown) or 'nothing'!r}")
    data = Path(args.manifest).resolve().parents[2]
    results = run_long(registry, pairs, args.long, args, data)
    if args.plot:
        plot(results, args.plot)
    if args.json:
        out = [public(r) for r in results]
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
    else:
        for r in map(public, results):
            per_min = " ".join(f"{x:.1f}" if x is not None else "-" for x in r["listener_lag_p90_s_per_minute"])
            print(f"{r['pair']} control {r['control']}: {r['talk_s']:.0f} s talk, listener lag p50 "
                  f"{r['listener_lag_p50_s']} s p90 {r['listener_lag_p90_s']} s, p90 per minute [{per_min}], "
                  f"slope {r['listener_lag_slope_s_per_min']} s/min, start {r['start_offset_s']} s, "
                  f"end {r['end_offset_s']} s, output/input {r['duration_ratio']}, faster in "
                  f"{r['share_chunks_faster']:.0%} of chunks, words dropped {r['share_words_dropped']:.1%}"
                  + (f", {r['words_relief']} words spoken by the relief voice" if r.get("words_relief") else "")
                  + (f", {r['words_unspoken']} words not spoken (the voice fell behind)" if r.get("words_unspoken") else ""))
            parts = ", ".join(f"{k} {v:.2f}" for k, v in r["lag_parts_s_above_p90"].items())
            if parts:
                print(f"  the slowest tenth of words: {parts} s (mean lag parts)")
    return 0
