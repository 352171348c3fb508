"""`speech bench asr`: streaming WER against the same model offline, commit lag, RTF, memory.

Each configuration (model x policy) runs in its own process, so its peak memory is its own.
Lag per word = source time of the update that committed it minus the word's end time on the
clip's reference timeline (asr/reference.py: Whisper base offline, the same for every
configuration; reference words left unmatched are reported as a share); "ca" figures use the
emulated wall clock (computation-aware: each update waits for the compute before it). The
reference timelines are prepared first, in a process of their own, and cached on disk.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Iterator

from speech.data import data_path
from speech.eval.manifest import unmarked_language
from speech.eval.quality import ErrorCounts

DATA = data_path("speech")  # $SPEECH_DATA/speech, else ../shared/data/speech beside the checkout
ENGLISH_MANIFEST = str(DATA / "librivox" / "manifest.jsonl")  # LibriVox: English lines without a `lang`
DEFAULT_MANIFESTS = (ENGLISH_MANIFEST, str(DATA / "fleurs" / "manifest.jsonl"))
# Other languages: FLEURS and Leopard's one clip (for English that clip stays held out)
OTHER_MANIFESTS = (str(DATA / "fleurs" / "manifest.jsonl"), str(DATA / "leopard" / "manifest.jsonl"))
ENGLISH_ONLY = {"whisper-tiny.en", "pocketsphinx"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifest", action="append", metavar="M",
                        help="JSON-lines manifest (file, transcript or transcript_normalized, lang; a line "
                             "without lang is taken to be in --language, LibriVox's as English); repeatable; default: LibriVox + "
                             "the FLEURS clips for English, FLEURS + Leopard for other languages")
    parser.add_argument("--model", action="append", metavar="NAME",
                        help="recogniser (repeatable): whisper-base, whisper-tiny.en, pocketsphinx; "
                             "default: whisper-tiny.en and whisper-base")
    parser.add_argument("--policy", action="append", metavar="NAME",
                        help="commit policy (repeatable; 'default' = the model's default policy); "
                             "default: local-agreement-2 and stable")
    parser.add_argument("--language", default="en", help="only clips in this language (default en)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many clips (0: all)")
    parser.add_argument("--chunk-ms", type=int, default=100, help="feeding granularity (default 100)")
    parser.add_argument("--update-ms", type=int, default=0, help="decode every N ms of new audio (0: model default)")
    parser.add_argument("--no-vad", action="store_true", help="no VAD gating")
    parser.add_argument("--adaptive", action="store_true",
                        help="let the stage postpone decodes while it is behind real time (live behaviour); "
                             "off by default so computation-unaware figures do not depend on machine load")
    parser.add_argument("--threads", type=int, default=2, help="recogniser CPU threads (default 2)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                        help="a recogniser option for every configuration (repeatable), e.g. "
                             "encoder_pad_s=1.0 or beam_size=2; the names are the fields of the "
                             "recogniser's config (`speech backends` lists them)")
    parser.add_argument("--config", metavar="FILE.toml",
                        help="TOML (or JSON) file whose [asr_options] set the stage for every configuration "
                             "(update_s, segment_start, first_update_s, first_update_words)")
    parser.add_argument("--long", type=float, default=0, metavar="SECONDS",
                        help="instead: one stream of the clips concatenated to SECONDS (e.g. 300), "
                             "reporting update time and lag per minute (flat = buffer trimming works)")
    parser.add_argument("--json", action="store_true", help='print one JSON object {"configs": [...]}')


def default_manifests(language: str) -> list[str]:
    """The clips `speech bench asr` scores when no --manifest is given."""
    return list(DEFAULT_MANIFESTS if language == "en" else OTHER_MANIFESTS)


def manifest_lines(path: Path) -> Iterator[tuple[int, dict, Path]]:
    """(line number, record, audio path) of each line of a JSON-lines manifest of clips."""
    from speech.errors import UserError

    if not path.exists():
        raise UserError(f"{path}: no such manifest; pass --manifest with a JSON-lines file")
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            audio = path.parent / rec["file"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise UserError(f"{path}:{i}: expected a JSON object with a 'file' field ({e})") from None
        yield i, rec, audio


def load_clips(manifests: list[str], language: str, limit: int) -> list[dict]:
    """The clips in `language`; a line without `lang` counts as `language`, except in the
    LibriVox manifest, whose lines are all English."""
    from speech.errors import UserError

    clips = []
    for m in manifests:
        path = Path(m)
        unmarked = unmarked_language(path, language)
        for i, rec, audio in manifest_lines(path):
            if rec.get("lang", unmarked) != language:
                continue
            ref = rec.get("transcript") or rec.get("transcript_normalized") or rec.get(f"ref_{language}")
            if ref is None:
                raise UserError(f"{path}:{i}: no 'transcript' to score against")
            clips.append({"file": str(audio), "ref": ref, "duration": rec.get("duration_s")})
    if limit:
        clips = clips[:limit]
    if not clips:
        raise UserError(f"no {language} clips in {', '.join(manifests)}")
    return clips


def corpus_errors(pairs: list[tuple[str, str]], language: str) -> ErrorCounts:
    """Word errors summed over (reference, hypothesis) pairs: the corpus WER `speech eval` reports
    for the same texts (both call `speech.eval.quality.word_errors`)."""
    from speech.eval.quality import word_errors

    return sum((word_errors(ref, hyp, language) for ref, hyp in pairs), ErrorCounts())


def stage_options(path: str | None, language: str) -> dict:
    """The ASR stage options of a configuration file's [asr_options] (the defaults without one)."""
    from speech.eval.configs import load_config

    from .stage import SEGMENT_START_KEYS

    typed = load_config(path, language, language).asr_options
    return {"update_s": typed.update_s, **{k: getattr(typed, k) for k in SEGMENT_START_KEYS}}


def run_config(model: str, policy: str, language: str, clips: list[dict], chunk_ms: int,
               update_s: float | None, vad: bool, threads: int, adaptive: bool = False,
               settings: dict | None = None, progress: Any = None, stage: dict | None = None) -> dict:
    """One configuration over all clips (meant to run in a fresh process)."""
    import resource

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from speech.audio import read_audio
    from speech.backends import default_registry

    from speech.stats import percentile

    from .evaluate import offline_words, stream
    from .reference import RecognitionLag, recognition_lag, reference_timeline
    from .stage import AsrOptions
    from .vad import VadConfig

    registry = default_registry()
    opts = ({"cpu_threads": threads} if model.startswith("whisper") else {}) | (settings or {})
    options = AsrOptions(update_s=update_s, vad=VadConfig() if vad else None,
                         max_behind_s=0.3 if adaptive else float("inf"), **(stage or {}))
    streamed_pairs: list[tuple[str, str]] = []
    first_commit: list[tuple[float, float]] = []  # (source, wall) seconds from the first word spoken
    offline_pairs: list[tuple[str, str]] = []
    lag = RecognitionLag(0)
    updates: list[float] = []
    compute = audio_s = 0.0
    per_clip = []
    for clip in clips:
        samples, rate, info = read_audio(clip["file"])
        offline = offline_words(registry, model, language, samples, rate, **opts)
        result = stream(registry, model, policy, language, samples, rate, chunk_ms, options, **opts)
        streamed_pairs.append((clip["ref"], result.text))
        offline_pairs.append((clip["ref"], " ".join(w.text for w in offline)))
        reference = reference_timeline(clip["file"], language, registry)
        lag += recognition_lag(committed(result), reference)
        if result.words and reference and reference[0].start is not None:
            onset = reference[0].start
            first_commit.append((result.commit_source[0] - onset, result.commit_wall[0] - onset))
        updates += result.update_s
        compute += result.compute_s
        audio_s += info.duration
        per_clip.append({"file": Path(clip["file"]).name, "streaming": result.text,
                         "offline": " ".join(w.text for w in offline)})
        if progress is not None:
            progress.put(1)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    counts, off_counts = corpus_errors(streamed_pairs, language), corpus_errors(offline_pairs, language)

    def r(x: float | None, nd: int = 3) -> float | None:
        return None if x is None else round(x, nd)

    def percent(x: float | None) -> float | None:
        return None if x is None else 100.0 * x

    return {
        "name": f"{model}/{policy}", "model": model, "policy": policy, "settings": settings or {},
        "clips": len(clips), "audio_s": round(audio_s, 2), "words": counts.words,
        "wer": r(percent(counts.wer), 2),
        "offline_wer": r(percent(off_counts.wer), 2),
        "lag_p50_s": r(percentile(lag.lag_source, 50)), "lag_p90_s": r(percentile(lag.lag_source, 90)),
        "lag_ca_p50_s": r(percentile(lag.lag_wall, 50)), "lag_ca_p90_s": r(percentile(lag.lag_wall, 90)),
        "lag_reference_words": lag.reference_words,
        "lag_unmatched_share": r(lag.unmatched_share, 4),
        "first_commit_s": r(statistics.fmean(f[0] for f in first_commit)) if first_commit else None,
        "first_commit_ca_s": r(statistics.fmean(f[1] for f in first_commit)) if first_commit else None,
        "rtf": r(compute / max(audio_s, 1e-9)),
        "update_p50_s": r(percentile(updates, 50)), "update_p90_s": r(percentile(updates, 90)),
        "peak_rss_mb": r(peak_kb / 1024.0, 1),
        "per_clip": per_clip,
    }


def run_long(model: str, policy: str, language: str, clips: list[dict], chunk_ms: int,
             update_s: float | None, vad: bool, threads: int, adaptive: bool = False,
             settings: dict | None = None, seconds: float = 300.0, progress: Any = None,
             stage: dict | None = None) -> dict:
    """One long stream: the clips back to back until `seconds`; figures per minute of source."""
    import numpy as np

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from speech.audio import read_audio, resample
    from speech.backends import default_registry
    from speech.types import Word

    from speech.eval.quality import word_errors
    from speech.stats import percentile

    from .evaluate import stream
    from .reference import RecognitionLag, recognition_lag, reference_timeline
    from .stage import AsrOptions
    from .vad import VadConfig

    registry = default_registry()
    opts = ({"cpu_threads": threads} if model.startswith("whisper") else {}) | (settings or {})
    pieces, reference, refs, spans = [], [], [], []
    t = 0.0
    cache: dict[str, tuple] = {}
    while t < seconds:
        for clip in clips:
            if clip["file"] not in cache:
                samples, rate, _ = read_audio(clip["file"])
                cache[clip["file"]] = (resample(samples, rate, 16000), reference_timeline(clip["file"], language, registry))
            audio, words = cache[clip["file"]]
            pieces.append(audio)
            reference += [Word(w.text, (w.start or 0) + t, (w.end or 0) + t) for w in words]
            refs.append(clip["ref"])
            spans.append((t, t + len(audio) / 16000, len(reference) - len(words), len(reference)))
            t += len(audio) / 16000
            if t >= seconds:
                break
    audio = np.concatenate(pieces)
    options = AsrOptions(update_s=update_s, vad=VadConfig() if vad else None,
                         max_behind_s=0.3 if adaptive else float("inf"), **(stage or {}))
    result = stream(registry, model, policy, language, audio, 16000, chunk_ms, options, **opts)
    # Align clip by clip (the clips repeat: a global alignment could pair a word with the same
    # word of another repetition).
    lag = RecognitionLag(0)
    stream_words = committed(result)
    for t0, t1, r0, r1 in spans:
        part = [c for c in stream_words if c.word.start is not None and t0 - 0.3 <= c.word.start < t1 - 0.3]
        lag += recognition_lag(part, reference[r0:r1])
    # Per minute: decode times (from the stage's log) and lags of words ending in that minute.
    stats = next(r for r in result.log.records if r["kind"] == "stats")
    decode_times = stats["update_s"]
    minutes = int(np.ceil(t / 60))
    per_min = []
    for m in range(minutes):
        lag_m = [x for e, x in zip(lag.matched_end, lag.lag_source) if m * 60 <= e < (m + 1) * 60]
        per_min.append({"minute": m + 1, "lag_p50_s": percentile(lag_m, 50)})
    n = len(decode_times)
    per_fifth = [percentile(decode_times[i * n // 5 : (i + 1) * n // 5], 50) for i in range(5)]
    counts = word_errors(" ".join(refs), result.text, language)
    if progress is not None:
        progress.put(1)
    return {"name": f"{model}/{policy}", "audio_s": round(t, 1), "wer": None if counts.wer is None else round(100 * counts.wer, 2),
            "update_p50_s_by_fifth": [None if x is None else round(x, 3) for x in per_fifth],
            "lag_p50_s_by_minute": [None if r["lag_p50_s"] is None else round(r["lag_p50_s"], 3) for r in per_min],
            "lag_unmatched_share": None if lag.unmatched_share is None else round(lag.unmatched_share, 4),
            "rtf": round(result.compute_s / t, 3)}


def committed(result: Any) -> list:
    """A StreamResult's committed words with their commit times (asr.reference.Committed)."""
    from .reference import Committed

    return [Committed(w, s, t) for w, s, t in zip(result.words, result.commit_source, result.commit_wall)]


def prepare_references(clips: list[dict], language: str, progress: Any = None) -> dict:
    """Decode and cache the reference timeline of every clip not cached yet (own process)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from speech.backends import default_registry

    from .reference import reference_timeline

    registry = default_registry()
    for clip in clips:
        reference_timeline(clip["file"], language, registry)
        if progress is not None:
            progress.put(1)
    return {}


def _child(queue: Any, progress: Any, job: str, args: tuple, kwargs: dict) -> None:
    try:
        target = {"config": run_config, "long": run_long, "references": prepare_references}[job]
        queue.put(("ok", target(*args, progress=progress, **kwargs)))
    except BaseException as e:  # noqa: BLE001 - report the failure to the parent
        queue.put(("error", f"{type(e).__name__}: {e}"))


def run_isolated(job: str, args: tuple, on_clip: Any, what: str, **kwargs: Any) -> dict:
    """`job` ("config", "long" or "references") in a fresh process; `on_clip` gets progress."""
    ctx = mp.get_context("spawn")
    queue, progress = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, progress, job, args, kwargs))
    proc.start()
    import queue as queue_mod

    while True:
        try:
            status, payload = queue.get(timeout=0.2)
            break
        except queue_mod.Empty:
            while not progress.empty():
                on_clip(progress.get())
            if not proc.is_alive() and queue.empty():
                raise RuntimeError(f"benchmark worker died (exit code {proc.exitcode})")
    while not progress.empty():
        on_clip(progress.get())
    proc.join()
    if status != "ok":
        raise RuntimeError(f"{what} failed: {payload}")
    return payload


def run(args: argparse.Namespace) -> int:
    from speech.backends import default_registry
    from speech.errors import UserError
    from speech.progress import Progress
    from speech.settings import parse_settings

    registry = default_registry()
    models = args.model or ["whisper-tiny.en", "whisper-base"]
    policies = args.policy or ["local-agreement-2", "stable"]
    settings = parse_settings(args.settings)
    for m in models:
        registry.spec("recognizer", m)
        try:
            registry.config("recognizer", m, **settings)
        except TypeError as e:
            raise UserError(f"--set: {e}") from None
        if m in ENGLISH_ONLY and args.language != "en":
            raise UserError(f"{m} is English-only; use --language en")
    for p in policies:
        if p.partition(":")[0] != "default":  # "default": the best measured policy per model
            registry.spec("asr-policy", p.partition(":")[0])
    if args.limit < 0:
        raise UserError(f"--limit must be 0 (all clips) or more, got {args.limit}")
    clips = load_clips(args.manifest or default_manifests(args.language), args.language, args.limit)
    stage = stage_options(args.config, args.language)
    file_update_s = stage.pop("update_s")
    update_s = args.update_ms / 1000 if args.update_ms else file_update_s
    from .reference import cache_path

    missing = [c for c in clips if not cache_path(c["file"], args.language).exists()]
    if missing:
        with Progress(len(missing), "reference timelines (Whisper base, offline)") as bar:
            run_isolated("references", (missing, args.language), lambda n: bar.update(n), "reference timelines")
    configs = []
    total = len(models) * len(policies) * (1 if args.long else len(clips))
    with Progress(total, "bench asr") as bar:
        for m in models:
            for p in policies:
                job: tuple = (m, p, args.language, clips, args.chunk_ms, update_s, not args.no_vad, args.threads,
                              args.adaptive, settings)
                on_clip = lambda n, m=m, p=p: bar.update(n, f"{m}/{p}")  # noqa: E731
                if args.long:
                    configs.append(run_isolated("long", job, on_clip, f"configuration {m}/{p}", seconds=args.long,
                                                stage=stage))
                else:
                    configs.append(run_isolated("config", job, on_clip, f"configuration {m}/{p}", stage=stage))
    if args.json:
        print(json.dumps({"configs": configs}))
        return 0
    if args.long:
        for c in configs:
            print(f"{c['name']}: {c['audio_s']} s, WER {c['wer']}%, RTF {c['rtf']}")
            print(f"  decode time p50 per fifth of the stream: {c['update_p50_s_by_fifth']}")
            print(f"  commit lag p50 per minute: {c['lag_p50_s_by_minute']}")
            print(f"  reference words not matched: {c['lag_unmatched_share']}")
        return 0
    cols = ("name", "wer", "offline_wer", "lag_p50_s", "lag_p90_s", "lag_ca_p50_s", "lag_ca_p90_s",
            "lag_unmatched_share", "first_commit_s", "rtf", "update_p50_s", "peak_rss_mb")
    print(f"{len(clips)} clips, {configs[0]['audio_s']} s of audio, {configs[0]['words']} reference words")
    print("  ".join(f"{c:>14}" if i else f"{c:<34}" for i, c in enumerate(cols)))
    for c in configs:
        print("  ".join(f"{str(c[k]):>14}" if i else f"{c[k]:<34}" for i, k in enumerate(cols)))
    return 0
