"""Whether a persistent Apertium pipeline translates a sentence the same whatever came before it.

    .venv/bin/python benchmarks/apertium_history.py [--pairs en-es,es-en,...] [--lines 1012] [--passes 3]
                                                    [--fresh N]

Each pair's default path (translate/paths.json) translates FLORES-101 devtest lines 1..N, whole
sentences, `--passes` times in one process, on the same pipelines. Every pass reads the same
input, so any line that reads differently in two passes was translated differently because of what
the pipelines had translated before. Prints, per pair, the lines of each pass that differ from the
last pass. `--fresh N` also translates lines 1..N each on pipelines started for it alone, as a
process that translates one recording does, and scores both against the references (chrF, BLEU).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from speech.backends import default_registry  # noqa: E402
from speech.eval.quality import corpus_scores  # noqa: E402
from speech.progress import Progress  # noqa: E402
from translate.bench import FLORES, read_lines  # noqa: E402
from translate.stage import open_stream  # noqa: E402

DEFAULT_PAIRS = "en-es,es-en,en-fr,fr-en,en-it,en-ca,en-gl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", default=DEFAULT_PAIRS, help=f"comma-separated pairs (default {DEFAULT_PAIRS})")
    parser.add_argument("--lines", type=int, default=1012, help="FLORES-101 devtest lines 1..N (default 1012)")
    parser.add_argument("--passes", type=int, default=3, help="translations of the lines in one process (default 3)")
    parser.add_argument("--data", type=Path, default=FLORES, help="FLORES-101 folder")
    parser.add_argument("--fresh", type=int, default=0, metavar="N",
                        help="also translate lines 1..N each on fresh pipelines and score both ways (default 0: no)")
    args = parser.parse_args()
    if args.passes < 2 or args.lines < 1 or not 0 <= args.fresh <= args.lines:
        parser.error("--passes must be at least 2, --lines at least 1 and --fresh between 0 and --lines")
    registry = default_registry()
    for pair in args.pairs.split(","):
        source, target = pair.split("-")
        stream, route = open_stream(registry, source, target, "default")
        path = route.spec
        lines = read_lines(args.data, source)[: args.lines]
        passes = []
        with Progress(len(lines) * args.passes, f"{pair} ({path})") as progress:
            for _ in range(args.passes):
                out = []
                for line in lines:
                    stream.reset()
                    out.append(" ".join(stream.hypothesis(line.split(), [], complete=True).words))
                    progress.update()
                passes.append(out)
        last = passes[-1]
        differ = [sum(a != b for a, b in zip(p, last)) for p in passes[:-1]]
        print(f"{pair} ({path}): lines that differ from pass {args.passes}, pass by pass: {differ} of {len(lines)}")
        stream.close()
        if args.fresh:
            fresh = translate_fresh(lines[: args.fresh], source, target, pair)
            refs = read_lines(args.data, target)[: args.fresh]
            warm, alone = corpus_scores(last[: args.fresh], refs), corpus_scores(fresh, refs)
            print(f"{pair}: lines 1-{args.fresh} each on fresh pipelines differ from pass {args.passes} in "
                  f"{sum(a != b for a, b in zip(fresh, last))}; chrF / BLEU {alone['chrf']:.2f} / {alone['bleu']:.2f} "
                  f"fresh, {warm['chrf']:.2f} / {warm['bleu']:.2f} after the passes")
    return 0


def translate_fresh(lines: list[str], source: str, target: str, label: str) -> list[str]:
    """Each line through the pair's default path on pipelines started for it alone."""
    out = []
    with Progress(len(lines), f"{label} fresh") as progress:
        for line in lines:
            registry = default_registry()  # a registry of its own: nothing shared with the last line
            stream, _ = open_stream(registry, source, target, "default")
            try:
                out.append(" ".join(stream.hypothesis(line.split(), [], complete=True).words))
            finally:
                stream.close()  # the registry's pipelines end with it, when it is dropped
            progress.update()
    return out


if __name__ == "__main__":
    raise SystemExit(main())
