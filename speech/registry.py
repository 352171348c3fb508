"""Backend registry: engines register by kind and name with a lazy factory and a typed config.

Heavy imports happen only inside a factory, so installing one engine never requires another.
Loaded models are cached per registry (one per process) and shared read-only between sessions;
state that belongs to one stream never lives here.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from .budget import ThreadBudget
from .errors import OptionError


class UnknownBackend(LookupError):
    pass


@dataclass(frozen=True)
class BackendSpec:
    kind: str  # "recognizer", "policy", "translator", "synthesizer", "codec", ...
    name: str
    factory: str  # "module:function", imported on first use
    config_type: str | None = None  # "module:Class" of a dataclass, or None
    description: str = ""
    requires: tuple[str, ...] = ()  # import names the backend needs (to say what to install)


@dataclass
class Registry:
    specs: dict[tuple[str, str], BackendSpec] = field(default_factory=dict)
    # How many threads each engine may use (speech.budget); the owner of the process sets it.
    budget: ThreadBudget = field(default_factory=ThreadBudget.for_machine)
    _cache: dict[Any, Any] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def register(self, spec: BackendSpec) -> None:
        key = (spec.kind, spec.name)
        if key in self.specs:
            raise ValueError(f"{spec.kind} backend {spec.name!r} is registered twice")
        self.specs[key] = spec

    def names(self, kind: str) -> list[str]:
        return sorted(name for k, name in self.specs if k == kind)

    def spec(self, kind: str, name: str) -> BackendSpec:
        try:
            return self.specs[(kind, name)]
        except KeyError:
            known = ", ".join(self.names(kind)) or "none"
            raise UnknownBackend(f"unknown {kind} {name!r}; available: {known}") from None

    def available(self, kind: str, name: str) -> bool:
        """Whether the backend's packages are installed (without importing them)."""
        import importlib.util

        return all(importlib.util.find_spec(m) is not None for m in self.spec(kind, name).requires)

    def config(self, kind: str, name: str, **overrides: Any) -> Any:
        spec = self.spec(kind, name)
        if spec.config_type is None:
            if overrides:
                raise OptionError(f"{kind} {name}", "takes no options",
                                  message=f"{kind} {name!r} takes no options (got {sorted(overrides)})")
            return None
        cls = _resolve(spec.config_type)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(overrides) - known
        if unknown:
            raise OptionError(f"{kind} {name}", f"options: {sorted(known)}",
                              message=f"{kind} {name!r} has no option(s) {sorted(unknown)}; options: {sorted(known)}")
        from .options import from_mapping  # values as their fields' types: "none", "0.5" and bad values named

        return from_mapping(cls, overrides, f"{kind} {name}.")

    def option_names(self, kind: str, name: str) -> set[str]:
        """The fields of a backend's config dataclass (empty when it takes no options)."""
        spec = self.spec(kind, name)
        if spec.config_type is None:
            return set()
        return {f.name for f in dataclasses.fields(_resolve(spec.config_type))}

    def create(self, kind: str, name: str, config: Any = None, **overrides: Any) -> Any:
        spec = self.spec(kind, name)
        if config is None:
            config = self.config(kind, name, **overrides)
        factory = _resolve(spec.factory)
        try:
            return factory(config, self) if spec.config_type else factory(self)
        except ModuleNotFoundError as e:
            raise RuntimeError(
                f"{kind} {name!r} needs the Python package {e.name!r}; install the project's extras "
                f"(see README: .venv/bin/pip install -e '.[all]')"
            ) from e

    def threads(self, engine: str, given: int | None = None) -> int:
        """An engine's thread count: `given` when its config set one, else the budget's."""
        return self.budget.resolve(engine, given)

    def shared(self, key: Any, load: Callable[[], Any]) -> Any:
        """A loaded model, created once per registry and shared read-only."""
        with self._lock:
            if key not in self._cache:
                self._cache[key] = load()
            return self._cache[key]


def _resolve(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)
