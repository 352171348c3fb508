"""`speech bench mt`: simultaneous translation on FLORES-101 devtest.

Each of the first N lines is streamed word by word (one committed source word per update) through
a fresh stream state (the loaded model and the cached instruction prefix are reused); the same
backend then translates the whole line offline. Few-shot examples come from lines 900-1011 only,
so they never overlap the evaluated lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from speech.data import data_path
from speech.errors import UserError
from speech.progress import Progress
from speech.settings import parse_settings

from .graph import PATHS_FILE
from .languages import FLORES_CODES, check_pair, parse_pair
from speech.eval.erasure import erased_words
from speech.eval.latency import average_lagging, length_adaptive_average_lagging
from speech.stats import percentile

from .metrics import looks_copied
from .simulate import translate_stream

DEFAULT_PAIRS = "en-es,en-pt,pt-en,en-de,en-fr"
FLORES = data_path("text", "flores101")  # $SPEECH_DATA, else ../shared/data beside the checkout
EXAMPLE_LINES = range(899, 1011)  # 0-based: lines 900-1011


def configure(parser: argparse.ArgumentParser) -> None:
    from .pathbench import PATH_PAIRS

    parser.add_argument("--pairs", help=f"comma-separated pairs (default {DEFAULT_PAIRS}; with --paths every pair "
                                        f"among en, es, pt, fr, de, it, ca, gl and from ro: {len(PATH_PAIRS.split(','))} pairs)")
    parser.add_argument("--backends", default="default",
                        help="comma-separated translators or paths (bergamot:en-pt,apertium:pt-es) to compare, "
                        "or 'default' (the best installed path per pair) or 'all'")
    parser.add_argument("--paths", action="store_true",
                        help="score every installed path of the pairs (offline, then the --top best simultaneously) "
                        "and write the table the default path comes from (--paths-out)")
    parser.add_argument("--max-hops", type=int, default=3, help="--paths: longest path (default 3)")
    parser.add_argument("--top", type=int, default=3, help="--paths: paths streamed word by word per pair (default 3)")
    parser.add_argument("--llm-lines", type=int, default=10,
                        help="--paths: lines for paths with an LLM edge (0.2-0.6 s an update; default 10)")
    parser.add_argument("--paths-out", type=Path, default=PATHS_FILE,
                        help="--paths: the table to update (default translate/paths.json in the package)")
    parser.add_argument("--policy", default="default",
                        help="target commit policy: default (best measured per backend), local-agreement, wait-k")
    parser.add_argument("--lines", type=int, default=100, help="first N devtest lines (default 100)")
    parser.add_argument("--start", type=int, default=0,
                        help="skip this many lines first (tune on e.g. --start 200, score on the default 0)")
    parser.add_argument("--shots", type=int, default=5, help="few-shot examples for LLMs, from lines 900-1011 (default 5)")
    parser.add_argument("--data", type=Path, default=FLORES, help="FLORES-101 folder (default: $SPEECH_DATA/text/flores101, else ../shared/data beside the checkout)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a translator option, e.g. --set max_tentative_tokens=6 (repeatable)")
    parser.add_argument("--policy-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a policy option, e.g. --policy-set n=3 or boundary_n=1 (local-agreement), k=4 (wait-k)")
    parser.add_argument("--stream-minutes", type=float, default=0.0,
                        help="instead: one long stream of this many minutes of text (150 words a minute) "
                        "through one translator state, reporting work and memory per quarter")
    parser.add_argument("--offline-only", action="store_true",
                        help="only the whole-line (offline) translation: a quick check of a backend's quality")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def read_lines(folder: Path, lang: str) -> list[str]:
    path = folder / f"{FLORES_CODES[lang]}.devtest"
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}; pass --data with the FLORES-101 folder") from e


def pick_examples(src: list[str], tgt: list[str], shots: int) -> tuple[tuple[str, str], ...]:
    """The first `shots` lines of 900-1011 of moderate length (8-24 words)."""
    out = [(src[i], tgt[i]) for i in EXAMPLE_LINES if i < len(src) and 8 <= len(src[i].split()) <= 24]
    return tuple(out[:shots])


def p50(values: list[float]) -> float | None:
    return percentile(values, 50)


def rounded(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def options_for(registry, backend: str, options: dict) -> dict:  # noqa: ANN001
    """The --set options this backend's config knows (a comparison may mix backends; a path's
    options are those of any of its engines)."""
    import dataclasses

    from .graph import is_path_spec, parse_path

    engines = {e.engine for e in parse_path(backend)} if is_path_spec(backend) else {backend}
    known = {f.name for name in engines for f in dataclasses.fields(registry.config("translator", name))}
    return {k: v for k, v in options.items() if k in known}


def bench_pair(registry, source: str, target: str, backend: str, policy: str, lines: int, shots: int,
               data: Path, progress: Progress | None = None, options: dict | None = None,
               policy_options: dict | None = None, start: int = 0, simultaneous: bool = True) -> dict:  # noqa: ANN001
    from speech.eval.quality import corpus_scores

    from .stage import open_stream, open_translation

    options = options_for(registry, backend, options or {})
    src, ref = read_lines(data, source), read_lines(data, target)
    examples = pick_examples(src, ref, shots)
    offline_stream, _ = open_stream(registry, source, target, backend, options, examples)
    if not simultaneous:
        translation = None
    else:
        translation = open_translation(registry, source, target, backend, policy, backend_options=options,
                                       policy_options=policy_options, examples=examples)
    hyps, offline, als, laals, tokens, ms, sources, cpu = [], [], [], [], [], [], [], []
    generated: list[int] = []
    erased = committed_erased = final_tokens = empty = 0
    try:
        for i in range(start, min(start + lines, len(src), EXAMPLE_LINES.start)):
            words = src[i].split()
            if not simultaneous:
                offline_stream.reset()
                offline.append(" ".join(offline_stream.hypothesis(words, [], complete=True).words))
                sources.append(src[i])
                if progress:
                    progress.update(1, f"{source}-{target} {backend} offline")
                continue
            assert translation is not None
            translation.reset()
            run = translate_stream(translation, words)
            hyps.append(" ".join(run.target))
            sources.append(src[i])
            trace = run.trace
            # SimulEval's conventions (speech.eval.latency): |Y| is the reference's length; a line
            # with no output has no latency and is counted apart, not averaged as 0.
            if trace.delays and words:
                als.append(average_lagging(trace.delays, len(words), len(ref[i].split())))
                laals.append(length_adaptive_average_lagging(trace.delays, len(words), len(ref[i].split())))
            else:
                empty += 1
            erased += erased_words(trace.displays)
            committed_erased += erased_words(trace.committed)
            final_tokens += len(run.target)
            tokens += run.tokens_per_update
            ms += run.update_ms
            cpu += run.update_cpu_ms
            generated += run.generated
            offline_stream.reset()
            offline.append(" ".join(offline_stream.hypothesis(words, [], complete=True).words))
            if progress:
                progress.update(1, f"{source}-{target} {backend}")
    finally:
        if translation is not None:
            translation.stream.close()
        offline_stream.close()
    if not simultaneous:
        scores = corpus_scores(offline, ref[start : start + len(offline)])
        return {
            "lines": len(offline),
            "start": start,
            "offline_chrf": round(scores.get("chrf", 0.0), 2),
            "offline_bleu": round(scores.get("bleu", 0.0), 2),
            "offline_copy_rate": round(sum(looks_copied(s, h) for s, h in zip(sources, offline)) / max(len(offline), 1), 3),
        }
    scores = corpus_scores(hyps, ref[start : start + len(hyps)])
    offline_scores = corpus_scores(offline, ref[start : start + len(offline)])
    return {
        "lines": len(hyps),
        "start": start,
        "policy": policy + "".join(f" {k}={v}" for k, v in (policy_options or {}).items()),
        "chrf": round(scores.get("chrf", 0.0), 2),
        "offline_chrf": round(offline_scores.get("chrf", 0.0), 2),
        "bleu": round(scores.get("bleu", 0.0), 2),
        "offline_bleu": round(offline_scores.get("bleu", 0.0), 2),
        "al_words": round(statistics.mean(als), 3) if als else None,
        "laal_words": round(statistics.mean(laals), 3) if laals else None,
        "empty_outputs": empty,
        "erasure": round(erased / max(final_tokens, 1), 4),
        "committed_erasure": round(committed_erased / max(final_tokens, 1), 4),
        "tokens_per_update_p50": p50(tokens),
        "update_ms_p50": rounded(p50(ms), 2),
        "update_ms_p90": rounded(percentile(ms, 90), 2),
        "update_cpu_ms_p50": rounded(p50(cpu), 2),
        "update_cpu_ms_mean": round(statistics.mean(cpu), 2) if cpu else 0.0,
        "updates": len(tokens),
        "generated_per_update_mean": round(statistics.mean(generated), 2) if generated else 0.0,
        "loops": translation.loops if translation else 0,
        "copy_rate": round(sum(looks_copied(s, h) for s, h in zip(sources, hyps)) / max(len(hyps), 1), 3),
    }



def backends_for(registry, source: str, target: str, spec: str) -> list[str]:  # noqa: ANN001
    from .backends import default_backend

    if spec == "default":
        return [default_backend(source, target, registry)]
    if spec != "all" and ":" in spec:  # engines and paths (`bergamot:en-pt,apertium:pt-es`), checked here
        from .graph import parse_paths, resolve

        return [resolve(registry, source, target, p[0].engine if len(p) == 1 else ",".join(e.spec for e in p)).backend
                for p in parse_paths(spec, source, target)]
    names = registry.names("translator") if spec == "all" else [b.strip() for b in spec.split(",") if b.strip()]
    out = []
    for name in names:
        if name == "gguf":
            continue  # needs a model path; compare a GGUF through the translate-text CLI
        engine_pairs = _pairs(registry, name)
        if (source, target) in engine_pairs:
            out.append(name)
        elif spec != "all":
            check_pair(source, target, engine_pairs, name)
    return out


def _pairs(registry, name: str) -> tuple[tuple[str, str], ...]:  # noqa: ANN001
    from .backends import engine_pairs

    registry.spec("translator", name)  # unknown name: a clear error
    return engine_pairs(registry, name, {"model": "given"})


def run(args: argparse.Namespace) -> int:
    from speech.backends import default_registry

    if args.lines < 1:
        raise UserError("--lines must be at least 1")
    if not 0 <= args.start < EXAMPLE_LINES.start:
        raise UserError(f"--start must be between 0 and {EXAMPLE_LINES.start - 1} (lines 900-1011 are the few-shot examples)")
    registry = default_registry()
    from .pathbench import PATH_PAIRS, print_paths, run_paths

    pairs = [parse_pair(p) for p in (args.pairs or (PATH_PAIRS if args.paths else DEFAULT_PAIRS)).split(",") if p.strip()]
    for s, t in pairs:
        check_pair(s, t)
    if args.paths:
        if args.max_hops < 1 or args.top < 0 or args.llm_lines < 1:
            raise UserError("--max-hops and --llm-lines must be at least 1, --top at least 0")
        table = run_paths(registry, pairs, args)
        if args.json:
            print(json.dumps({f"{s}-{t}": table["pairs"][f"{s}-{t}"] for s, t in pairs}, indent=2))
        else:
            print_paths(table, pairs, sys.stdout)
        return 0
    plan = [(s, t, b) for s, t in pairs for b in backends_for(registry, s, t, args.backends)]
    options = parse_settings(args.set)
    results: dict[str, dict[str, dict]] = {}
    if args.stream_minutes > 0:
        from .longstream import bench_long_stream

        for s, t, b in plan:
            results.setdefault(f"{s}-{t}", {})[b] = bench_long_stream(
                registry, s, t, b, args.policy, args.stream_minutes, args.data, options
            )
        print(json.dumps(results, indent=2))
        return 0
    with Progress(len(plan) * args.lines, "bench mt") as progress:
        for s, t, b in plan:
            results.setdefault(f"{s}-{t}", {})[b] = bench_pair(
                registry, s, t, b, args.policy, args.lines, args.shots, args.data, progress, options,
                parse_settings(args.policy_set, "--policy-set"), args.start, not args.offline_only,
            )
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results, sys.stdout)
    return 0


def print_table(results: dict[str, dict[str, dict]], out) -> None:  # noqa: ANN001
    cols = ["chrf", "offline_chrf", "bleu", "al_words", "laal_words", "erasure", "committed_erasure",
            "tokens_per_update_p50", "update_ms_p50"]
    out.write(f"{'pair':6} {'backend':12} " + " ".join(f"{c:>10.10}" for c in cols) + "\n")
    for pair, by_backend in results.items():
        for backend, r in by_backend.items():
            out.write(f"{pair:6} {backend:12} " + " ".join(f"{str(r.get(c, '-')):>10}" for c in cols) + "\n")
