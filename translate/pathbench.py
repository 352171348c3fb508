"""`speech bench mt --paths`: score the installed translation paths per pair and write the table
the default path comes from (translate/paths.json, graph.py).

For each requested pair, every path of at most `--max-hops` installed edges is translated offline
(whole lines), and the `--top` best by offline chrF are then streamed word by word (simultaneous
chrF, BLEU, LAAL, erasure, update time). Paths with an LLM edge (Gemma-3-270M: 0.2-0.6 s an
update, where an Apertium hop costs a few ms) are restricted to keep the run affordable on two
cores: the direct LLM edge of each pair (always streamed too, so the table shows where the LLM
stands), and two-hop paths with one LLM edge only for pairs that no other path reaches, all on
`--llm-lines` lines; the table says so per row.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from speech.progress import Progress

from .graph import PATHS_FILE, TranslationPath, find_paths, installed_edges, load_table, path_spec, rank

PATH_PAIRS = ("en-es,en-fr,es-en,fr-en,en-pt,pt-en,en-it,en-ca,en-gl,en-de,"
              "es-pt,pt-es,es-fr,fr-es,pt-fr,fr-pt,es-it,pt-it,it-en,ca-en,gl-en,ro-en,"
              "ca-es,gl-es,it-es,ca-pt,gl-pt,it-pt,ca-fr,gl-fr,it-fr,"
              "es-ca,pt-ca,fr-ca,it-ca,gl-ca,es-gl,pt-gl,fr-gl,it-gl,ca-gl,fr-it,ca-it,gl-it,"
              "ro-es,ro-pt,ro-fr,ro-it,ro-ca,ro-gl,"
              "de-en,de-es,de-pt,de-fr,es-de,pt-de,fr-de,de-it,de-ca,de-gl,it-de,ca-de,gl-de,ro-de")


def candidate_paths(edges, source: str, target: str, max_hops: int) -> list[TranslationPath]:  # noqa: ANN001
    """The paths worth scoring: all without an LLM edge; the direct LLM edge; two-hop paths with
    one LLM edge only where no LLM-free path exists."""
    from .backends import LLM_ENGINES

    paths = find_paths(edges, source, target, max_hops)

    def llm_edges(p: TranslationPath) -> int:
        return sum(e.engine in LLM_ENGINES for e in p)

    free = [p for p in paths if not llm_edges(p)]
    return free + [p for p in paths if llm_edges(p) and (len(p) == 1 or (not free and llm_edges(p) == 1 and len(p) <= 2))]


def command_line(source: str, target: str, args) -> str:  # noqa: ANN001
    return (f"speech bench mt --paths --pairs {source}-{target} --lines {args.lines} --llm-lines {args.llm_lines} "
            f"--top {args.top} --max-hops {args.max_hops}")


def score_pair(registry, source: str, target: str, args, progress_label: str = "") -> dict:  # noqa: ANN001
    """One pair's entry of the table: {"command", "date", "rows"}, rows best first."""
    from .backends import LLM_ENGINES
    from .bench import bench_pair

    edges = installed_edges(registry)
    paths = candidate_paths(edges, source, target, args.max_hops)
    rows: list[dict] = []
    with Progress(sum(args.llm_lines if _llm(p, LLM_ENGINES) else args.lines for p in paths),
                  f"paths {source}-{target} offline") as bar:
        for p in paths:
            lines = args.llm_lines if _llm(p, LLM_ENGINES) else args.lines
            r = bench_pair(registry, source, target, path_spec(p), args.policy, lines, args.shots, args.data,
                           bar, {}, None, args.start, simultaneous=False)
            row = {"path": path_spec(p), "hops": len(p), "lines": r["lines"],
                   "offline_chrf": r["offline_chrf"], "offline_bleu": r["offline_bleu"]}
            if _llm(p, LLM_ENGINES):
                row["note"] = f"LLM edge: {r['lines']} lines only"
            rows.append(row)
    by_offline = sorted(rows, key=lambda r: -r["offline_chrf"])
    chosen = by_offline[: args.top]
    chosen += [r for r in rows if "note" in r and r["hops"] == 1 and r not in chosen]  # where the LLM stands
    with Progress(sum(r["lines"] for r in chosen), f"paths {source}-{target} simultaneous") as bar:
        for row in chosen:
            r = bench_pair(registry, source, target, row["path"], args.policy, row["lines"], args.shots, args.data,
                           bar, {}, None, args.start, simultaneous=True)
            row.update({k: r[k] for k in ("chrf", "bleu", "al_words", "laal_words", "erasure", "committed_erasure",
                                          "update_ms_p50", "update_ms_p90", "update_cpu_ms_p50", "policy")})
            row["offline_chrf"], row["offline_bleu"] = r["offline_chrf"], r["offline_bleu"]
            row["simultaneous_lines"] = r["lines"]
    entry = {"command": command_line(source, target, args),
             "date": datetime.date.today().isoformat(),
             "data": f"FLORES-101 devtest lines {args.start + 1}-{args.start + args.lines}",
             "rows": rank(rows)}
    return entry


def _llm(path: TranslationPath, llm_engines: tuple[str, ...]) -> bool:
    return any(e.engine in llm_engines for e in path)


def run_paths(registry, pairs: list[tuple[str, str]], args) -> dict:  # noqa: ANN001
    """Score `pairs` and merge them into the table at args.paths_out (other pairs are kept)."""
    out = Path(args.paths_out)
    table = load_table(out)
    table.setdefault("pairs", {})
    table["about"] = ("Translation paths per pair, scored by `speech bench mt --paths` (each pair's command "
                      "and date beside it). Every installed path of at most 3 hops is translated offline; the best "
                      "by offline chrF, and the direct LLM edge, are also streamed word by word (chrf, bleu, "
                      "laal_words, update_ms_p50: simultaneous). LLM paths run on fewer lines (their note).")
    for source, target in pairs:
        table["pairs"][f"{source}-{target}"] = score_pair(registry, source, target, args)
        out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return table


def print_paths(table: dict, pairs: list[tuple[str, str]], out) -> None:  # noqa: ANN001
    cols = ["chrf", "offline_chrf", "bleu", "laal_words", "committed_erasure", "update_ms_p50", "lines"]
    out.write(f"{'pair':6} {'path':58} " + " ".join(f"{c:>10.10}" for c in cols) + "\n")
    for s, t in pairs:
        for r in table["pairs"].get(f"{s}-{t}", {}).get("rows", []):
            out.write(f"{s}-{t:3} {r['path']:58} " + " ".join(f"{r.get(c, '-'):>10}" for c in cols) + "\n")
