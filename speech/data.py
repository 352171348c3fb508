"""Where the shared recordings and texts are (benchmark and evaluation defaults).

`$SPEECH_DATA` names the folder (holding `speech/` and `text/`); without it, a source checkout
uses `../shared/data` beside the repository. An installed package has no such neighbour: its
commands then need `$SPEECH_DATA` or an explicit `--manifest`/`--data`, and say so.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "SPEECH_DATA"


def data_root() -> Path:
    """The shared data folder: $SPEECH_DATA, else ../shared/data beside the source checkout."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def data_path(*parts: str) -> Path:
    """A path inside the shared data folder (it may not exist: callers report the missing file)."""
    return data_root().joinpath(*parts)


def describe() -> str:
    """How a help text names the default data folder."""
    return f"${ENV} (now {data_root()})"
