"""constraints.txt pins every package the set-up asks for, at versions pyproject.toml allows."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def pinned() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_every_requirement_of_the_project_is_pinned_at_a_version_it_allows():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for extra, requirements in project["optional-dependencies"].items():
        if extra != "simuleval":  # installed in a venv of its own, with SimulEval's own pins
            wanted += requirements
    pins = pinned()
    checked = 0
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name == "speech-s2st":
            continue
        assert name in pins, f"{requirement.name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"constraints.txt pins {requirement.name}=={pins[name]}, which pyproject.toml's {text!r} refuses"
        checked += 1
    assert checked > 20


def test_the_set_up_installs_through_the_constraints():
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    installs = [line for line in setup.splitlines() if "pipq " in line and "-e " in line]
    assert installs and all("-c constraints.txt" in line for line in installs)
