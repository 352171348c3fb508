"""A GGUF copy whose vocabulary keeps only the tokens our languages can use (Latin script).

Why: Gemma-3-270M's output layer is its 262,144-token embedding matrix (tied), and for one
generated token it costs more than the 18 transformer blocks together; our languages (en, es, pt,
de, fr) never need its CJK, Cyrillic, Arabic or Indic tokens. The copy keeps every token whose
text is Latin letters, digits, punctuation, symbols or whitespace, plus the control tokens the
runtime needs (not Gemma's thousands of `<unusedN>`), and the matching rows of the embedding
matrix (and of a separate output matrix, if the model has one).

Exactness: SentencePiece merging only ever builds a token from pieces of the same text, so for
Latin-script text every intermediate piece is Latin too and kept: the copy tokenises such text into
the same token strings as the original, and its logits over the kept tokens are the original's.
Only the argmax can differ, when the original's best token was one that was dropped. BPE
vocabularies (merge lists) cannot be cut this way, so only SentencePiece models ("llama"
tokenizer) are accepted.

The copy is written once, atomically, into the cache beside the original (`latin_vocab_path`).
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from pathlib import Path

from .cache import atomic_target, cache_dir

TRIMMED_TENSORS = ("token_embd.weight", "output.weight")
_UNUSED = re.compile(r"<unused\d+>")
NORMAL, CONTROL = 1, 3  # llama.cpp token types


def is_latin_piece(piece: str) -> bool:
    """Text made of Latin letters, digits, punctuation, symbols and whitespace only."""
    return all(not c.isalpha() or "LATIN" in unicodedata.name(c, "") for c in piece)


def latin_token_ids(pieces: list[str], types: list[int]) -> list[int]:
    """The token ids to keep, in their original order (so ids below the first dropped one stay)."""
    keep = []
    for i, (piece, kind) in enumerate(zip(pieces, types)):
        if kind == NORMAL:
            ok = is_latin_piece(piece)
        elif kind == CONTROL:
            ok = not _UNUSED.fullmatch(piece)
        else:  # byte fallback and user-defined tokens: few, and the tokenizer relies on them
            ok = True
        if ok:
            keep.append(i)
    return keep


def trim_vocab(source: Path, target: Path, keep_ids=latin_token_ids) -> int:  # noqa: ANN001
    """Write `target`: `source` with only the tokens `keep_ids(pieces, types)` selects.

    Returns the new vocabulary size. Raises ValueError for a model this cannot cut.
    """
    import numpy as np
    from gguf import GGUFReader, GGUFValueType, GGUFWriter

    reader = GGUFReader(source, "r")

    def field(name: str):  # noqa: ANN202
        f = reader.get_field(name)
        return f.contents() if f is not None else None

    if field("tokenizer.ggml.model") != "llama":
        raise NotTrimmable(f"{source}: only SentencePiece ('llama' tokenizer) vocabularies can be trimmed")
    pieces, types = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type")
    keep = keep_ids(pieces, types)
    new_id = {old: new for new, old in enumerate(keep)}
    remap = {}
    for name in ("bos", "eos", "unknown", "padding", "seperator", "mask", "eot", "eom"):
        key = f"tokenizer.ggml.{name}_token_id"
        old = field(key)
        if old is not None:
            if old not in new_id:
                raise ValueError(f"{source}: the trimmed vocabulary would lose {key} ({pieces[old]!r})")
            remap[key] = new_id[old]
    per_token = {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}

    writer = GGUFWriter(target, field("general.architecture"))
    for f in reader.fields.values():
        if f.name == "general.architecture" or f.name.startswith("GGUF."):
            continue  # written by GGUFWriter itself
        kind = f.types[0]
        sub = f.types[-1] if kind == GGUFValueType.ARRAY else None
        value = f.contents()
        if f.name in per_token:
            value = [value[i] for i in keep]
        elif f.name in remap:
            value = remap[f.name]
        writer.add_key_value(f.name, value, kind, sub_type=sub)
    rows = np.asarray(keep)
    tensors = []
    for t in reader.tensors:
        data = t.data
        if t.name in TRIMMED_TENSORS:
            if data.shape[0] != len(pieces):
                raise ValueError(f"{source}: {t.name} has {data.shape[0]} rows for {len(pieces)} tokens")
            data = np.ascontiguousarray(data[rows])  # quantised blocks never cross a row
        tensors.append(data)
        writer.add_tensor_info(t.name, data.shape, data.dtype, data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for data in tensors:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()
    return len(keep)


def _copy_name(source: Path) -> Path:
    stat = source.stat()
    # Named after the source, its size and time: a changed source gets a new copy.
    return cache_dir("gguf") / f"{source.stem}.latin-{stat.st_size:x}-{int(stat.st_mtime):x}.gguf"


class NotTrimmable(ValueError):
    """A model whose vocabulary trim_vocab cannot cut (not SentencePiece)."""


def latin_vocab_path(source: Path) -> Path:
    """The Latin-vocabulary copy of `source` in the cache, written on first use (~15 s for Gemma).

    Raises NotTrimmable for a model that cannot be cut (remembered, so the next call is quick).
    """
    target = _copy_name(source)
    if target.exists():
        return target
    refused = target.with_suffix(".not-trimmable")
    if refused.exists():
        raise NotTrimmable(refused.read_text(encoding="utf-8"))
    print(f"speech: writing a Latin-vocabulary copy of {source.name} (once, about 15 s)", file=sys.stderr)
    tmp = atomic_target(target)
    try:
        trim_vocab(source, tmp)
        os.replace(tmp, target)
    except NotTrimmable as e:
        refused.write_text(str(e), encoding="utf-8")
        raise
    finally:
        if tmp.exists():
            tmp.unlink()
    return target
