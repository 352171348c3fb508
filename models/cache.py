"""Where prepared model files live: a writable cache folder (never inside site-packages).

`$SPEECH_CACHE` overrides the default `~/.cache/speech`. Files are written atomically (write to a
temporary name, then rename) so an interrupted preparation never leaves a half file behind.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    root = Path(os.environ.get("SPEECH_CACHE") or Path.home() / ".cache" / "speech")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_file(path: str | Path, block: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(block):
            h.update(chunk)
    return h.hexdigest()


def atomic_target(path: Path) -> Path:
    """A temporary sibling to write to before `os.replace(tmp, path)`."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")
