"""`speech bench {asr,langid,mt,s2st,report}`: each benchmark lives beside the stage it measures."""

from __future__ import annotations

import argparse
import importlib

BENCHES: dict[str, tuple[str, str]] = {
    "asr": ("speech.asr.bench", "streaming recognition: WER, commit lag, RTF, memory"),
    "langid": ("speech.asr.langid_bench", "language detection (--source auto): how often it is right, by seconds of speech"),
    "mt": ("speech.translate.bench", "simultaneous translation on FLORES: chrF, BLEU, AL, LAAL, erasure"),
    "s2st": ("speech.tts.bench", "end to end: time to first audio, TTS RTF, offsets, round-trip WER"),
    "report": ("speech.benchreport", "the headline figures: run the benchmarks, write docs/benchmarks.md"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name, (module, help_text) in BENCHES.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_bench_module=module)
        try:
            importlib.import_module(module).configure(p)
        except ModuleNotFoundError as e:
            if not (e.name and e.name.startswith("speech")):
                raise


def run(args: argparse.Namespace) -> int:
    return int(importlib.import_module(args._bench_module).run(args) or 0)
