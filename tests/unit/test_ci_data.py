"""In CI (`CI=true`) missing shared data fails the run; elsewhere the tests that need it skip."""

from __future__ import annotations

import pytest

from tests import conftest


def outcome(path) -> type | None:
    """What `require_data` raised (a skip must not escape as the test's own outcome)."""
    try:
        conftest.require_data(path)
    except BaseException as e:  # noqa: BLE001 - pytest's skip and fail are BaseExceptions
        return type(e)
    return None


@pytest.mark.parametrize("value", ["true", "1", "TRUE"])
def test_missing_data_fails_a_test_in_ci(monkeypatch, tmp_path, value):
    monkeypatch.setenv("CI", value)
    assert outcome(tmp_path / "absent") is pytest.fail.Exception


def test_missing_data_skips_outside_ci(monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    assert outcome(tmp_path / "absent") is pytest.skip.Exception
    assert outcome(tmp_path) is None  # present: nothing happens


def test_missing_data_stops_a_ci_run_at_its_start(monkeypatch, tmp_path):
    monkeypatch.setattr(conftest, "DATA", tmp_path / "absent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.UsageError, match="shared data"):
        conftest.pytest_sessionstart(None)
    monkeypatch.setenv("CI", "false")
    conftest.pytest_sessionstart(None)
