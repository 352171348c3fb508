"""Which languages this installation takes and reaches: the source and target pickers of the
browser page (`GET /languages`) and the candidates of a language told by Whisper (`--source
auto`), from the installed translation graph and the recogniser."""

from __future__ import annotations

from typing import Any


def served_languages(registry: Any, base: Any) -> dict[str, list[dict[str, str]]]:
    """Source and target languages a session can take: each language with an installed path out
    of it, and every language such a path reaches (for an operator's fixed path, its two ends; for
    one engine, its own pairs), sources limited to English when the recogniser is English-only.
    Each as {"code", "name"}, in the order of the language table; "pairs" maps each source to
    the targets it reaches; "detect" says whether a session may ask for source "auto"."""
    from speech.asr.stage import recognizer_name
    from speech.translate.graph import MAX_HOPS, installed_edges, is_path_spec, parse_path, reachable
    from speech.translate.languages import NAMES

    backend = base.mt_backend
    if is_path_spec(backend):
        path = parse_path(backend)
        reach = {path[0].source: {path[-1].target}}
    else:
        # one engine asked for translates its own pairs, directly; an engine that does not list
        # its pairs (a model of the user's) is not narrowed down
        one = backend != "default" and ("translator", backend) in registry.specs
        edges = installed_edges(registry, (backend,)) if one else []
        hops = 1 if edges else MAX_HOPS
        edges = edges or installed_edges(registry)
        reach = {s: reachable(edges, s, hops) for s in {e.source for e in edges}}
    model, local = recognizer_name(base.asr_model)
    config = registry.config("recognizer", model, **local) if ("recognizer", model) in registry.specs else None
    if config is not None and getattr(config, "language", "en") == "en":
        reach = {s: t for s, t in reach.items() if s == "en"}  # an English-only recogniser
    targets = set().union(*reach.values()) if reach else set()

    def listed(codes: set[str]) -> list[dict[str, str]]:
        return [{"code": c, "name": NAMES[c]} for c in NAMES if c in codes]

    sources = listed({s for s, t in reach.items() if t})
    # "auto": a multilingual recogniser tells the language among several (speech.auto_source)
    detect = config is not None and getattr(config, "language", "en") is None and len(sources) > 1
    return {"sources": sources, "targets": listed(targets),
            "pairs": {s["code"]: [t["code"] for t in listed(reach[s["code"]])] for s in sources}, "detect": detect}


def source_candidates(registry: Any, config: Any) -> set[str]:
    """The languages an installed path translates into every target of `config` (a PipelineConfig),
    and the targets themselves, so a speaker of a target language is told so by name."""
    pairs = served_languages(registry, config)["pairs"]
    return {s for s, reach in pairs.items() if all(t in reach or t == s for t in config.all_targets)}
