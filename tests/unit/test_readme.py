"""README.md: short, and every command in it is one the `speech` CLI accepts as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from speech.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def commands() -> list[str]:
    lines = [line.split("  #")[0].strip().rstrip("&").strip() for block in fenced("sh") for line in block.splitlines()]
    return [line for line in lines if line]


def test_readme_is_short_and_has_the_two_setup_commands():
    assert len(README.splitlines()) < 150
    assert "./scripts/main.sh" in commands() and "./scripts/test.sh" in commands()


@pytest.mark.parametrize("line", [c for c in commands() if c.startswith(".venv/bin/speech")])
def test_every_speech_command_parses_and_its_files_exist(line):
    argv = shlex.split(line)[1:]
    args = build_parser().parse_args(argv)  # an unknown command or flag exits here
    assert args.command == argv[0]
    for word in argv:
        if word.startswith("../shared/"):
            assert (REPO / word).exists(), f"{line}: {word} does not exist"


def test_the_ci_runs_the_readme_test_command():
    assert "./scripts/test.sh" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_python_example_compiles():
    blocks = fenced("python")
    assert blocks, "README.md shows no Python example"
    for block in blocks:
        assert compile(block, "README.md", "exec") is not None  # a SyntaxError fails here
