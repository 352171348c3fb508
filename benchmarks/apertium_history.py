"""Whether a persistent Apertium pipeline translates a sentence the same whatever came before it.

    .venv/bin/python benchmarks/apertium_history.py [--pairs en-es,es-en,...] [--lines 1012] [--passes 3]

Each pair's default path (translate/paths.json) translates FLORES-101 devtest lines 1..N, whole
sentences, `--passes` times in one process, on the same pipelines. Every pass reads the same
input, so any line that reads differently in two passes was translated differently because of what
the pipelines had translated before. Prints, per pair, the lines of each pass that differ from the
last pass.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from speech.backends import default_registry  # noqa: E402
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
    args = parser.parse_args()
    if args.passes < 2 or args.lines < 1:
        parser.error("--passes must be at least 2 and --lines at least 1")
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
