"""A backend module for the registry test: imported only when the registry creates it."""

from dataclasses import dataclass


@dataclass
class FakeConfig:
    size: int = 1


def make(config: FakeConfig, registry):
    return ("made", config.size)
