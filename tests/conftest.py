"""Shared test fixtures: where the shared data lives, and marks for tests that need real models.

Tests that read ../shared/data skip when it is missing, except in CI (`CI=true`): there a missing
data folder fails the run at its start, so CI can never pass without running them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(REPO / ".." / "shared").resolve()
DATA = SHARED / "data"
LIBRIVOX = DATA / "speech" / "librivox"
FLEURS = DATA / "speech" / "fleurs"
FLORES = DATA / "text" / "flores101"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing_data_message(path: Path) -> str:
    return f"{path} is missing: the shared data must be at ../shared/data beside the repository"


def require_data(path: Path = DATA) -> None:
    """Skip the calling test when `path` is missing; fail it in CI."""
    if path.exists():
        return
    if in_ci():
        pytest.fail(missing_data_message(path) + " (CI=true: tests that need it may not be skipped)", pytrace=False)
    pytest.skip(missing_data_message(path))


def pytest_sessionstart(session: pytest.Session) -> None:
    if in_ci() and not DATA.exists():
        raise pytest.UsageError(missing_data_message(DATA) + " (CI=true: the integration tests would be skipped)")


def manifest(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def librivox() -> list[dict]:
    require_data(LIBRIVOX)
    return manifest(LIBRIVOX)


@pytest.fixture(scope="session")
def fleurs() -> list[dict]:
    require_data(FLEURS)
    return manifest(FLEURS)


@pytest.fixture(scope="session")
def registry():
    from speech.backends import default_registry

    return default_registry()
