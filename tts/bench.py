"""`speech bench s2st`: the whole pipeline on recorded speech, per language pair.

Per pair it reports: time from a committed target word to its first audio sample (median, p90,
computation-aware wall clock), TTS real-time factor, the speech-out StartOffset and EndOffset
(seconds after the source's start / end, on the listener timeline), whether every stage kept up
with real time, the round-trip WER (the project's Whisper on the output speech against the text
the voice was given, a piece it synthesised as silence counting as heard nothing) for PCM16 and
for Opus at 24 kbit/s, and the joins (gaps, level jumps, steps).

`--text-only` skips ASR and MT: the reference translation is committed word by word at a fixed
pace into the TTS stage, to measure synthesis alone in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

import numpy as np

from speech.data import data_path

from .pair_result import PairResult, clip_detail, first_audio_per_commit

DEFAULT_MANIFEST = data_path("speech", "fleurs", "manifest.jsonl")  # $SPEECH_DATA, else ../shared/data
DEFAULT_PAIRS = ("en-es", "en-pt", "pt-en")
FLORES = {"en": "eng", "de": "deu", "fr": "fra", "es": "spa", "pt": "por", "it": "ita", "ca": "cat", "gl": "glg", "ro": "ron"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifest", default=str(DEFAULT_MANIFEST.resolve()),
                        help="JSON-lines manifest: file, lang, ref_<target> (default: the shared FLEURS clips)")
    parser.add_argument("--pairs", default=",".join(DEFAULT_PAIRS), help="source-target pairs (default en-es,en-pt,pt-en)")
    parser.add_argument("--limit", type=int, default=0, help="clips per pair (default: all)")
    parser.add_argument("--voice", default="default", help="synthesiser (see speech translate --voice)")
    parser.add_argument("--config", metavar="FILE.toml",
                        help="TOML (or JSON) file of PipelineConfig keys and tables, as `speech config show eval` prints "
                             "(e.g. [asr_options]): the pipeline measured; the flags here win")
    parser.add_argument("--text-only", action="store_true",
                        help="TTS alone: commit the reference translation word by word (no ASR, no MT)")
    parser.add_argument("--words-per-s", type=float, default=2.5, help="--text-only commit pace (default 2.5)")
    parser.add_argument("--speed", type=float, default=0, metavar="X",
                        help="--text-only: speak everything at X times the voice's rate (1-2.5), no duration control: "
                             "the intelligibility at the control's fastest speed")
    parser.add_argument("--more-texts", type=int, default=0,
                        help="--text-only: also speak this many FLORES-101 devtest lines of the target language "
                             "(lines the manifest does not use, from --more-from on): more words, less judge noise")
    parser.add_argument("--more-from", type=int, default=60,
                        help="first of those lines (default 60: the first 60 were used to tune the voices and codecs)")
    parser.add_argument("--tts-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a synthesiser option, e.g. --tts-set treble_db=0 (eSpeak) (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--details", metavar="FILE",
                        help="write one JSON line per clip: the synthesised chunks and what the judge heard per codec")
    parser.add_argument("--long", type=float, metavar="MINUTES",
                        help="one long talk per pair, built from the shared recordings of the source language: "
                             "listener lag per minute, its slope, EndOffset, duration ratio, control on and off")
    parser.add_argument("--control", default="on,off",
                        help="--long: duration-control settings to run on the same translated talk: on, off, "
                             "reactive (on without its look-ahead) (default on,off)")
    parser.add_argument("--seed", type=int, default=0, help="--long: seed of the clip order and pauses (default 0)")
    parser.add_argument("--plot", metavar="PNG", help="--long: draw listener lag against source time here")
    from .pace import add_pace_arguments

    add_pace_arguments(parser)


def more_texts(manifest: Path, target: str, count: int, first: int) -> list[dict]:
    """`count` FLORES-101 devtest lines in `target` that the manifest's clips do not read, as
    text-only clips (`ref_<target>`), from the `first` such line on."""
    from speech.errors import UserError

    if count <= 0:
        return []
    path = manifest.parent.parent.parent / "text" / "flores101" / f"{FLORES.get(target, target)}.devtest"
    if not path.is_file():
        raise UserError(f"{path}: no FLORES-101 text for {target!r} (--more-texts)")
    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    used = {r.get("flores101_devtest_line") for r in rows}
    lines = [(i, t) for i, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if i not in used and t.strip()]
    return [{"file": f"flores101:{i}", f"ref_{target}": t} for i, t in lines[first:first + count]]


def _clips(manifest: Path, source: str, limit: int) -> list[dict]:
    from speech.errors import UserError

    if not manifest.is_file():
        raise UserError(f"{manifest}: no such manifest (give --manifest)")
    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("lang") == source]
    for r in rows:
        r["path"] = str((manifest.parent / r["file"]).resolve())
    return rows[:limit] if limit else rows


async def _text_only(registry, config, text: str, words_per_s: float):
    """Commit `text` word by word into the TTS stage (simulated clock); returns the records, the
    chunks back to back, and the text's duration at that pace."""
    from speech.channel import Channel
    from speech.clock import SimulatedClock
    from speech.events import EventLog
    from speech.types import TextUpdate, Word

    from .sink import SpeechSink
    from .stage import build_stage

    log = EventLog()
    stage = build_stage(registry, config, SimulatedClock(), log)
    inbox: Channel = Channel(1024)
    outbox: Channel = Channel(1024)
    words = text.split()
    for i, w in enumerate(words):
        t = (i + 1) / words_per_s
        await inbox.put(TextUpdate(committed=(Word(w),), wall_time=t, source_time=t, final=i == len(words) - 1))
    inbox.close()
    await stage.run(inbox, outbox)
    outbox.close()
    compact = SpeechSink(compact=True)
    async for chunk in outbox:
        compact.add(chunk)
    return log.records, compact, len(words) / words_per_s


def tts_options(registry, target: str, voice: str, items: list[str]) -> dict:  # noqa: ANN001
    """--tts-set options for this pair's synthesiser: the ones its config knows (a run may mix
    eSpeak and Piper pairs); an option no synthesiser knows is an error."""
    import dataclasses

    from speech.errors import UserError
    from speech.settings import parse_settings

    from .backends import synthesizer_name

    options = parse_settings(items, "--tts-set")
    if not options:
        return {}
    # the pair and --voice choose these; as options they would collide with them
    chosen = {"language": "the pair's target", "voice": "--voice", "model": "--voice"}
    for key in sorted(set(options) & set(chosen)):
        raise UserError(f"--tts-set {key}=...: set by {chosen[key]}, not by --tts-set")
    if options.get("attributes", "default") != "default":  # checked before any clip, not once per clip
        from .espeak_voice import parse_attributes

        parse_attributes(str(options["attributes"]))
    name = synthesizer_name(target, voice)
    known_anywhere = {f.name for n in registry.names("synthesizer") for f in dataclasses.fields(registry.config("synthesizer", n))}
    unknown = set(options) - known_anywhere
    if unknown:
        raise UserError(f"--tts-set: no synthesiser has option(s) {sorted(unknown)}; options: {sorted(known_anywhere)}")
    if ("synthesizer", name) not in registry.specs:
        return options  # an unknown --voice: create_synthesizer says which voices there are
    known = {f.name for f in dataclasses.fields(registry.config("synthesizer", name))}
    mine = {k: v for k, v in options.items() if k in known}
    registry.config("synthesizer", name, **mine)  # a bad value is refused before any clip, not once per clip
    return mine


def bench_config(args: argparse.Namespace, source: str, target: str):  # noqa: ANN201
    """The pipeline a pair is measured with: `--config`'s file (else the defaults) for `source` and
    `target`, with `--voice` when given."""
    from speech.eval.configs import load_config

    config = load_config(getattr(args, "config", None), source, target)
    return config.replace(voice=args.voice) if args.voice != "default" else config


def run_pair(registry, pair: str, clips: list[dict], args) -> PairResult:
    from speech.progress import Progress
    from speech.translate_cmd import translate_file

    from speech.eval.listener import heard_words, listener_latency, start_parts

    from .joins import measure_joins
    from .roundtrip import roundtrip, score, through_codec

    source, target = pair.split("-")
    result = PairResult(pair)
    base = bench_config(args, source, target)
    config = base.replace(stages=("asr", "mt", "tts", "codec"),
                          extra={**base.extra, "tts_options": tts_options(registry, target, base.voice, args.tts_set),
                                 "tts_pace": args.pace})
    with Progress(len(clips), label=f"s2st {pair}") as bar:
        for clip in clips:
            t0 = time.perf_counter()
            try:
                if args.text_only:
                    records, compact, duration = asyncio.run(
                        _text_only(registry, config, clip[f"ref_{target}"], args.words_per_s))
                    rate = compact.sample_rate
                    samples, boundaries = compact.render(), compact.boundaries()
                else:
                    # The joins and the judge take the chunks back to back as the sink decoded them
                    # (compact): the same rendering as --text-only's, with neither the wait before the
                    # first chunk (3-7 s) nor any that depends on when a chunk was emitted (a
                    # timeline split at chunk starts cross-faded touching chunks only, so the same
                    # chunks were judged differently from run to run). The listener-timeline
                    # figures come from the event log.
                    out = asyncio.run(translate_file(clip["path"], config, registry, compact=True))
                    records, duration, rate = out.records, out.source_duration, out.sample_rate
                    samples, boundaries = out.samples, out.boundaries
            except Exception as e:  # noqa: BLE001 - one bad clip must not hide the others' figures
                result.failures.append(f"{clip['file']}: {type(e).__name__}: {e}")
                bar.update(1, status="failed")
                continue
            result.clips += 1
            result.wall_s += time.perf_counter() - t0
            audio = [r for r in records if r.get("kind") == "audio" and r.get("stage") == "tts"]
            result.ttfa_ms += first_audio_per_commit(audio)
            result.chunk_ttfa_ms += [r["ttfa_ms"] for r in audio]
            # the judge is scored against every piece the voice was given: one it synthesised as
            # silence counts as heard nothing (condensed words were never given to it)
            spoken = " ".join(r["text"] for r in records if (r.get("kind") == "audio" and r.get("stage") == "tts")
                              or (r.get("kind") == "tts_skip" and r.get("reason") == "silent synthesis"))
            for r in records:
                if r.get("kind") == "stats" and r.get("compute_s") is not None and duration:
                    stage = r["stage"]
                    result.stage_rtf_max[stage] = max(result.stage_rtf_max.get(stage, 0.0), r["compute_s"] / duration)
                    if stage == "tts":
                        result.tts_compute_s += r["compute_s"]
                        result.tts_audio_s += r.get("audio_s", 0.0)
            if audio:
                heard = listener_latency(records, duration)
                result.start_offsets.append(heard["StartOffset"])
                result.start_parts.append(start_parts(records))
                result.end_offsets.append(heard["EndOffset"])
                result.lags += [w.lag for w in heard_words(audio) if w.lag is not None]
                # the sink's chunks are the stage's (one boundary fewer) unless two shared a wall time
                left = [r["text"] for r in audio[:-1]] if len(boundaries) == len(audio) - 1 else None
                joins = measure_joins(samples, rate, boundaries, left_texts=left)
                result.joins += joins
                judged = {}
                for codec in ("pcm16", "opus"):
                    coded, coded_rate = through_codec(registry, samples, rate, codec)
                    errors, heard = roundtrip(registry, coded, coded_rate, spoken, target)
                    result.add_errors(codec, errors)
                    judged[codec] = (errors, heard)
                result.details.append(clip_detail(pair, clip, audio, judged, len(samples) / rate, joins, spoken))
            elif spoken.strip():  # text given, nothing heard: every word is an error
                for codec in ("pcm16", "opus"):
                    result.add_errors(codec, score("", spoken, target))
            bar.update(1, status=f"ttfa {np.median(result.ttfa_ms) if result.ttfa_ms else 0:.0f} ms")
    return result


def run(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from speech.backends import default_registry
    from speech.errors import UserError

    from .backends import check_voice
    from .pace import pace_options

    args.pace = pace_options(args)
    if args.limit < 0:
        raise UserError(f"--limit must be 0 (all clips) or more, got {args.limit}")
    if args.speed:
        if not args.text_only:
            raise UserError("--speed needs --text-only (the whole pipeline speeds up by itself: --max-speed)")
        if not 1.0 <= args.speed <= 2.5:
            raise UserError(f"--speed must be between 1 and 2.5, got {args.speed:g}")
        args.pace = {"control": False, "min_speed": args.speed, "max_speed": args.speed}
    registry = default_registry()
    pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    for p in pairs:
        if p.count("-") != 1:
            raise UserError(f"--pairs: {p!r} is not source-target (for example en-es)")
        check_voice(registry, p.split("-")[1], args.voice)  # refused once, not once per clip
    if args.long is not None:  # --long 0 is refused there, not read as no --long
        from .longtalk import run_long_talk

        return run_long_talk(registry, pairs, args)
    results, details = [], []
    for pair in pairs:
        clips = _clips(Path(args.manifest), pair.split("-")[0], args.limit)
        if not clips:
            raise UserError(f"{args.manifest}: no clips in language {pair.split('-')[0]!r}")
        if args.more_texts:
            if not args.text_only:
                raise UserError("--more-texts needs --text-only (FLORES lines have no recordings)")
            # the manifest's clips carry reference translations into some languages only
            clips = [c for c in clips if f"ref_{pair.split('-')[1]}" in c]
            clips += more_texts(Path(args.manifest), pair.split("-")[1], args.more_texts, args.more_from)
        result = run_pair(registry, pair, clips, args)
        results.append(result.summary())
        details += result.details
    if args.details:
        Path(args.details).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in details), encoding="utf-8")
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=2))
    else:
        for r in results:
            print(f"{r['pair']}: {r['clips']} clips  ttfa p50 {r['ttfa_p50_ms']} ms p90 {r['ttfa_p90_ms']} ms "
                  f"(per chunk {r['chunk_ttfa_p50_ms']}/{r['chunk_ttfa_p90_ms']} ms)  "
                  f"tts rtf {r['tts_rtf']}  start {r['start_offset_s']} s "
                  f"({', '.join(f'{k} {v}' for k, v in r['start_parts_s'].items()) or 'parts unknown'}) "
                  f"end {r['end_offset_s']} s  "
                  f"realtime {'ok' if r['realtime_ok'] else 'NOT ok'} {r['stage_rtf_max']}  "
                  f"round-trip WER pcm16 {r['roundtrip_wer']} opus24k {r['roundtrip_wer_opus24k']}  "
                  f"joins {r['joins']} max gap {r['join_max_gap_ms']} ms >50ms {r['join_gaps_over_50ms']} "
                  f"({r['join_gaps_over_50ms_after_punctuation']} after punctuation; mid-clause max "
                  f"{r['join_max_gap_mid_clause_ms']} ms) "
                  f"level jump {r['join_mean_abs_level_jump_db']} dB max step {r['join_max_step']}")
            for f in r["failures"]:
                print(f"  failed: {f}")
    return 0

