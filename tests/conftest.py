"""Shared test fixtures: where the shared data lives, and marks for tests that need real models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(REPO / ".." / "shared").resolve()
DATA = SHARED / "data"
LIBRIVOX = DATA / "speech" / "librivox"
FLEURS = DATA / "speech" / "fleurs"
FLORES = DATA / "text" / "flores101"


def manifest(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def librivox() -> list[dict]:
    if not LIBRIVOX.exists():
        pytest.skip("../shared/data is not beside the repository")
    return manifest(LIBRIVOX)


@pytest.fixture(scope="session")
def fleurs() -> list[dict]:
    if not FLEURS.exists():
        pytest.skip("../shared/data is not beside the repository")
    return manifest(FLEURS)


@pytest.fixture(scope="session")
def registry():
    from speech.backends import default_registry

    return default_registry()
