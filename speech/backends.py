"""The default registry: each stage folder registers its backends (lazily: no engine imported)."""

from __future__ import annotations

import importlib

from .budget import ThreadBudget
from .registry import Registry

BACKEND_MODULES = (
    "speech.asr.backends",
    "speech.translate.backends",
    "speech.tts.backends",
    "speech.codecs.backends",
)


def default_registry(budget: ThreadBudget | None = None) -> Registry:
    """A new registry with every backend this build knows; call once per process and pass it on.
    `budget`: the process's thread budget (default: this machine's cores, one session)."""
    registry = Registry(budget=budget) if budget is not None else Registry()
    for module in BACKEND_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name == module:
                continue  # that stage folder is not part of this build
            raise
        mod.register(registry)
    return registry
