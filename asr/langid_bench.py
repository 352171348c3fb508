"""`speech bench langid`: how often the recogniser tells a recording's language, by how much
speech it heard.

Each clip of the manifests is cut to its first S seconds of speech (Silero, pauses removed) and
its language detected as `speech translate --source auto` detects it (`asr/language_id.py`),
among the candidate languages; a clip is right when the language chosen is the manifest's.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from speech.errors import UserError

# the languages the translation graph takes as sources
SOURCES = ("en", "es", "pt", "de", "fr", "it", "ca", "gl", "ro")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifest", action="append", metavar="M",
                        help="JSON-lines manifest (file, lang; LibriVox's lines are English); repeatable; "
                             "default: the shared LibriVox, FLEURS and Leopard clips")
    parser.add_argument("--seconds", default="2,4,8,30", metavar="S,S",
                        help="seconds of speech heard, comma-separated (default 2,4,8,30; 30 is what "
                             "--source auto hears when the recording holds that much)")
    parser.add_argument("--candidates", default=",".join(SOURCES),
                        help="languages to choose among, comma-separated, or 'all' (every language "
                             f"Whisper knows); default: the translation graph's sources, {','.join(SOURCES)}")
    parser.add_argument("--model", default="whisper-base",
                        help="recogniser (a multilingual Whisper: whisper-base or a local CTranslate2 folder)")
    parser.add_argument("--sure", type=float, action="append", default=[], metavar="P",
                        help="also score a staged decision (repeatable): at the first of --seconds where the "
                             "choice has at least this probability, else at the last")
    parser.add_argument("--json", action="store_true", help='print one JSON object {"configs": [...]}')


def load_clips(manifests: list[str]) -> list[dict]:
    """Every clip of the manifests with its language."""
    from speech.eval.manifest import unmarked_language

    from .bench import manifest_lines

    clips = []
    for m in manifests:
        path = Path(m)
        unmarked = unmarked_language(path, "")
        for i, rec, audio in manifest_lines(path):
            language = rec.get("lang", unmarked)
            if not language:
                raise UserError(f"{path}:{i}: no 'lang' field: the clip's language is what is scored")
            clips.append({"file": str(audio), "language": language})
    if not clips:
        raise UserError(f"no clips in {', '.join(manifests)}")
    return clips


def parse_seconds(text: str) -> list[float]:
    try:
        seconds = [float(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--seconds: expected numbers such as 2,4,8,30, got {text!r}") from None
    if not seconds or any(not 0.5 <= s <= 30 for s in seconds):
        raise UserError(f"--seconds: each between 0.5 and 30 (Whisper's window), got {text!r}")
    return seconds


def score(results: list[dict]) -> dict:
    """Accuracy overall and per language, and the confusions, of one setting's detections."""
    per: dict[str, list[bool]] = defaultdict(list)
    confusions: Counter[str] = Counter()
    for r in results:
        per[r["language"]].append(r["detected"] == r["language"])
        if r["detected"] != r["language"]:
            confusions[f"{r['language']}->{r['detected']}"] += 1
    right = sum(sum(v) for v in per.values())
    return {"clips": len(results), "accuracy": round(right / max(len(results), 1), 4),
            "per_language": {k: {"clips": len(v), "right": sum(v)} for k, v in sorted(per.items())},
            "confusions": dict(confusions.most_common())}


def staged(results: dict[float, list[dict]], sure: float) -> list[dict]:
    """Per clip, the detection a staged decision takes: the first of the settings (by seconds of
    speech) whose choice was not refused and has probability >= `sure`, else the last setting's."""
    seconds = sorted(results)
    chosen = []
    for i in range(len(results[seconds[0]])):
        tries = [results[s][i] for s in seconds]
        chosen.append(next((r for r in tries[:-1] if not r["detected"].endswith("?") and r["probability"] >= sure),
                           tries[-1]))
    return chosen


def run(args: argparse.Namespace) -> int:
    from speech.asr.language_id import SAMPLE_RATE, LanguageUnknown, choose, speech_of
    from speech.asr.stage import recognizer_name
    from speech.asr.whisper import load_model
    from speech.asr.window import full_window
    from speech.audio import read_audio, resample
    from speech.backends import default_registry
    from speech.progress import Progress
    from speech.stats import percentile

    from .bench import DATA

    manifests = args.manifest or [str(DATA / "librivox" / "manifest.jsonl"), str(DATA / "fleurs" / "manifest.jsonl"),
                                  str(DATA / "leopard" / "manifest.jsonl")]
    clips = load_clips(manifests)
    seconds = parse_seconds(args.seconds)
    registry = default_registry()
    name, local = recognizer_name(args.model)
    config = registry.config("recognizer", name, **local)
    if getattr(config, "language", "en"):
        raise UserError(f"--model {args.model}: recognises one language only; language detection needs a "
                        "multilingual Whisper (whisper-base, or a local CTranslate2 folder of one)")
    model = load_model(registry, config)
    everything = args.candidates.strip() == "all"
    candidates = set() if everything else {c.strip() for c in args.candidates.split(",") if c.strip()}
    bar = Progress(len(clips) * len(seconds), label="detecting")
    results: dict[float, list[dict]] = {s: [] for s in seconds}
    times: dict[float, list[float]] = {s: [] for s in seconds}
    for clip in clips:
        samples, rate, _ = read_audio(clip["file"])
        speech = speech_of(resample(samples, rate, SAMPLE_RATE))
        for s in seconds:
            heard = speech[:int(s * SAMPLE_RATE)]
            t0 = time.perf_counter()
            with full_window():
                _, _, ranked = model.detect_language(audio=heard)
            times[s].append(time.perf_counter() - t0)
            pool = {code for code, _ in ranked} if everything else candidates
            try:
                found = choose(ranked, pool, len(heard) / SAMPLE_RATE, clip["file"])
                detected, p = found.language, found.probability
            except LanguageUnknown:
                detected, p = ranked[0][0] + "?", ranked[0][1]  # refused: counted wrong
            results[s].append({"file": Path(clip["file"]).name, "language": clip["language"],
                               "detected": detected, "probability": round(p, 3),
                               "speech_s": round(len(heard) / SAMPLE_RATE, 2)})
            bar.update(1, status=f"{Path(clip['file']).name} {s:g} s: {detected}")
    bar.close()
    configs = [{"seconds": s, **score(results[s]),
                "detect_p50_s": round(percentile(times[s], 50) or 0.0, 3), "per_clip": results[s]}
               for s in seconds]
    for sure in args.sure:
        picked = staged(results, sure)
        mean = sum(r["speech_s"] for r in picked) / max(len(picked), 1)
        configs.append({"seconds": f"{'/'.join(f'{s:g}' for s in sorted(seconds))} at p>={sure:g}", "sure": sure,
                        **score(picked), "mean_speech_s": round(mean, 2), "per_clip": picked})
    if args.json:
        print(json.dumps({"model": args.model, "candidates": "all" if everything else sorted(candidates),
                          "configs": configs}, ensure_ascii=False))
        return 0
    print(f"{args.model}, {len(clips)} clips, candidates: {'all' if everything else ','.join(sorted(candidates))}")
    print(f"{'speech':>7} {'right':>9}  {'per language':<40} {'detect p50':>10}  confusions")
    for c in configs:
        right = sum(v["right"] for v in c["per_language"].values())
        langs = " ".join(f"{k} {v['right']}/{v['clips']}" for k, v in c["per_language"].items())
        wrong = ", ".join(f"{k} x{n}" for k, n in c["confusions"].items()) or "-"
        heard = f"{c['seconds']:>6g}s" if "sure" not in c else f"{c['seconds']} (mean {c['mean_speech_s']:.2f} s):\n{'':>7}"
        took = f"{c['detect_p50_s']:>9.2f}s" if "detect_p50_s" in c else f"{'':>10}"
        print(f"{heard} {right:>4}/{c['clips']:<4}  {langs:<40} {took}  {wrong}")
    return 0
