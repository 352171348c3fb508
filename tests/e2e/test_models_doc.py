"""The commands of docs/models.md run as written: with the files they name absent, each fails with
one line naming the path; with an installed voice, it translates."""

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO

DOC = REPO / "docs" / "models.md"
CLIP = DATA / "speech" / "leopard" / "test.wav"
SPEECH = REPO / ".venv" / "bin" / "speech"


def fenced_lines(text: str) -> list[tuple[str, str]]:
    """(language, line) for every line inside a fenced block."""
    out, language = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            language = line[3:].strip() if language is None else None
        elif language is not None:
            out.append((language, line))
    return out


COMMANDS = [line for language, line in fenced_lines(DOC.read_text()) if language == "" and line.startswith("speech ")]
pytestmark = pytest.mark.slow


def test_the_page_has_commands_for_each_kind_of_model():
    joined = "\n".join(COMMANDS)
    for flag in ("--asr-model /", "--mt-backend /", "--voice /", "--voice espeak:/"):
        assert flag in joined


@pytest.mark.parametrize("command", COMMANDS)
def test_command(command, tmp_path):
    if not CLIP.exists() or not SPEECH.exists():
        pytest.skip("needs ../shared/data and .venv")
    argv = shlex.split(command)
    argv = [str(SPEECH)] + [str(CLIP) if a == "talk.wav" else a for a in argv[1:]] + ["--quiet", "-o", "out.wav"]
    r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=600,
                       env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    missing = [a.removeprefix("espeak:") for a in argv if a.startswith(("/", "espeak:/")) and a != str(CLIP)]
    missing = [m for m in missing if not Path(m).exists()]
    if missing:
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("\n") == 1 and missing[0] in r.stderr, r.stderr
    else:
        assert r.returncode == 0, r.stderr[-2000:]
        assert (tmp_path / "out.wav").stat().st_size > 10_000


def test_the_configuration_file_example_loads(tmp_path):
    import speech

    toml = "\n".join(line for language, line in fenced_lines(DOC.read_text()) if language == "toml")
    (tmp_path / "llm.toml").write_text(toml)
    config = speech.load_config(tmp_path / "llm.toml")
    assert config.mt_backend == "gguf" and config.mt_options.device == "auto"
    assert config.mt_options.engine["model"].endswith(".gguf")
