"""`speech eval MANIFEST --source xx --target yy`: offline latency and quality evaluation."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  speech eval ../shared/data/speech/fleurs/manifest.jsonl --source en --target es\n"
        "  speech eval M.jsonl --source en --target pt --sweep chunk_ms=250,500,1000 --sweep policy=stable,local-agreement-2\n"
        "  speech eval M.jsonl --source en --target es --long-form --out runs/long\n"
        "  speech eval M.jsonl --source es --target en --phases 4   # figures averaged over the decode's phase\n"
        "An interrupted run resumes when the same command is repeated with the same --out."
    )
    parser.add_argument("manifest", help="JSON lines: file, transcript, ref_<target>, optional lang")
    parser.add_argument("--source", required=True, help="source language (ISO 639-1, e.g. en)")
    parser.add_argument("--target", required=True, help="target language (ISO 639-1, e.g. es)")
    parser.add_argument("--config", metavar="FILE.toml",
                        help="TOML (or JSON) file of PipelineConfig keys and tables, as `speech config show eval` prints")
    from ..configuration import add_device_flag

    add_device_flag(parser)
    parser.add_argument("--out", help="run folder (default: runs/eval-SOURCE-TARGET)")
    parser.add_argument("--clock", choices=("simulated", "wall", "both"), default="simulated",
                        help="simulated: as fast as possible, computation-aware times emulated (default); "
                             "wall: real-time input; both: each configuration twice")
    parser.add_argument("--long-form", action="store_true",
                        help="join the recordings into one stream and re-segment the output by alignment")
    parser.add_argument("--gap", type=float, default=1.0, help="seconds of silence between joined recordings (long-form)")
    parser.add_argument("--sweep", action="append", default=[], metavar="NAME=V1,V2",
                        help="evaluate every value (repeatable; combinations of all sweeps); "
                             "NAME: a PipelineConfig field, policy (= asr_policy), a typed option such as "
                             "asr_options.update_s, or extra.NAME")
    parser.add_argument("--limit", type=int, help="only the first N usable recordings")
    parser.add_argument("--phases", type=int, default=1, metavar="K",
                        help="run every recording K times, after 0, 1/K, ... s of leading silence, so the "
                             "recogniser's 1-s decode steps fall at K places in the speech; every figure is "
                             "then over all K runs (default 1; at most 10; not with --long-form)")
    parser.add_argument("--no-asr-bleu", action="store_true", help="skip transcribing the output speech")
    parser.add_argument("--asr-bleu-model", default="whisper-base", help="recogniser for ASR-BLEU (default whisper-base)")
    parser.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")


def run(args: argparse.Namespace) -> int:
    from ..errors import UserError
    from .configs import parse_sweep
    from .manifest import check_language, read_manifest
    from .run import EvalOptions, evaluate

    source = check_language(args.source, "source")
    target = check_language(args.target, "target")
    if args.limit is not None and args.limit < 1:
        raise UserError("--limit must be at least 1")
    if args.gap < 0:
        raise UserError("--gap must not be negative")
    from .phases import MAX_PHASES

    if not 1 <= args.phases <= MAX_PHASES:
        raise UserError(f"--phases must be between 1 and {MAX_PHASES}, got {args.phases}")
    if args.phases > 1 and args.long_form:
        raise UserError("--phases runs each recording on its own; it does not combine with --long-form")
    from ..configuration import resolve

    base = resolve("eval", args).config.replace(source=source, target=target)
    sweeps = [parse_sweep(s) for s in args.sweep]
    manifest = read_manifest(args.manifest, source, target, limit=args.limit)
    for s in manifest.skipped:
        print(f"skipped line {s['line']} {s['file']}: {s['reason']}", file=sys.stderr)
    if not any(i.reference for i in manifest.items):
        print(f"note: no ref_{target} references in {args.manifest}: BLEU, chrF and ASR-BLEU are left out",
              file=sys.stderr)
    from ..backends import default_registry

    registry = default_registry()
    from ..preflight import check_config
    from .configs import combinations

    # Every swept configuration is checked before anything loads or the run folder is written: a
    # misspelt value must not leave a folder that refuses the corrected command.
    for combo in combinations(base, sweeps, ["simulated"]):
        check_config(combo.config, registry)
    out = Path(args.out or f"runs/eval-{source}-{target}")
    opts = EvalOptions(
        manifest=manifest, source=source, target=target, out=out, base=base, sweeps=sweeps,
        clocks=["simulated", "wall"] if args.clock == "both" else [args.clock],
        long_form=args.long_form, gap_s=args.gap, asr_bleu=not args.no_asr_bleu,
        asr_bleu_model=args.asr_bleu_model, plots=not args.no_plots, phases=args.phases,
        command="speech eval " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else "speech eval",
    )
    result = evaluate(opts, registry)
    from .report import headline_rows, markdown_table

    header, rows = headline_rows(result["configs"])
    print(markdown_table(header, rows))
    done = sum(1 for r in result["rows"] if r.get("_resumed"))
    if done:
        print(f"resumed: {done} recording(s) were already done in {out}", file=sys.stderr)
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    failed = [s for s in result["skipped"] if s.get("failed")]
    for s in failed:
        print(f"failed line {s['line']} {s['file']}: {s['reason']}", file=sys.stderr)
    if failed:
        print(f"speech eval: {len(failed)} run(s) failed and are left out of the figures; run the same command "
              f"again to retry them (the rest is kept in {out})", file=sys.stderr)
        return 1
    return 0
