"""Evaluation manifests: JSON lines naming a recording, its transcript and reference translations.

One line: `{"file": "a.ogg", "transcript": "...", "ref_es": "...", "lang": "en"}`. `file` is
relative to the manifest's folder (or absolute); `transcript_normalized` is accepted for
`transcript` (FLEURS); `lang`, when present, must be the source language or the line is left out.
A line without `lang` is taken to be in the source language, except in the shared LibriVox
manifest (`unmarked_language`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError

# ISO 639-1 codes: the recogniser, translators and voices are all chosen by these.
ISO_639_1 = frozenset(
    """aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy
    da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy
    hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li
    ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa
    pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th
    ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu""".split()
)


def check_language(code: str, what: str) -> str:
    code = code.strip().lower()
    if code not in ISO_639_1:
        raise UserError(f"unknown {what} language code {code!r}; give an ISO 639-1 code such as en, es, pt, de, fr")
    return code


@dataclass(frozen=True)
class Item:
    """One recording to evaluate."""

    id: str
    path: Path
    transcript: str | None
    reference: str | None  # in the target language
    duration: float | None = None
    line: int = 0
    fields: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass
class Manifest:
    items: list[Item]
    skipped: list[dict]  # {"line", "file", "reason"}: reported, the run goes on
    path: Path


def unmarked_language(manifest: str | Path, default: str) -> str:
    """The language of a manifest line without `lang`: English in the shared data's LibriVox
    manifest (`speech/librivox/manifest.jsonl`), whose read-only lines carry none, else `default`
    (a manifest of the user's own)."""
    path = Path(manifest)
    return "en" if (path.parent.name, path.name) == ("librivox", "manifest.jsonl") else default


def _item_id(file: str, taken: set[str]) -> str:
    base = re.sub(r"[^\w.-]+", "_", Path(file).stem) or "item"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def read_manifest(path: str | Path, source: str, target: str, limit: int | None = None) -> Manifest:
    """Reads and checks a manifest; lines that cannot be used are skipped with a reason.

    Missing or unreadable audio files are skipped here (checked by opening them), so the run
    never starts on a line it cannot finish.
    """
    from ..audio import AudioInputError, read_audio

    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such manifest; give a JSON-lines file with one recording a line")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{p}: cannot read the manifest ({e})") from None
    items: list[Item] = []
    skipped: list[dict] = []
    taken: set[str] = set()
    unmarked = unmarked_language(p, source)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            skipped.append({"line": n, "file": "", "reason": f"not JSON ({e.msg})"})
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("file"), str):
            skipped.append({"line": n, "file": "", "reason": "no 'file' field"})
            continue
        lang = rec.get("lang") or unmarked
        if str(lang).lower() != source:
            continue  # a recording in another language: not part of this source's evaluation
        file = rec["file"]
        audio = Path(file) if Path(file).is_absolute() else p.parent / file
        try:
            _, _, info = read_audio(audio)
        except AudioInputError as e:
            skipped.append({"line": n, "file": file, "reason": str(e)})
            continue
        transcript = rec.get("transcript", rec.get("transcript_normalized"))
        reference = rec.get(f"ref_{target}")
        items.append(
            Item(_item_id(file, taken), audio, transcript, reference, info.duration, n, rec)
        )
        if limit is not None and len(items) >= limit:
            break
    if not items:
        why = f"; {len(skipped)} line(s) skipped: {skipped[0]['reason']}" if skipped else ""
        raise UserError(
            f"{p}: no usable recording for source language {source!r}{why}; "
            "each line needs a 'file' (and 'lang' equal to --source when given)"
        )
    return Manifest(items, skipped, p)
