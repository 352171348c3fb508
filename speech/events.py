"""EventLog: every stage records what it emitted and when, as JSON lines.

The evaluation computes every latency figure from this log alone, so each record carries both
clocks: `source_time` (computation-unaware) and `wall_time` (computation-aware).

Record kinds (field `kind`):
- `meta`: the session's configuration (first line).
- `input`: a source audio chunk was consumed (`start`, `end`).
- `update`: a stage emitted a TextUpdate (`stage` is "asr" or "mt"; words with timings).
- `audio`: a synthesised chunk (`start` on the listener timeline, `duration`, `text`).
- `stats`: per-stage figures at the end (compute seconds, counts).
- `error`: a stage failed.
- `end`: the session ended (`source_duration`).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from .types import AudioChunk, TextUpdate


class EventLogError(OSError):
    """The event log's file could not be written (a full disk, an I/O error)."""


class EventLog:
    """Appends JSON lines to a file (or only keeps them in memory when `path` is None).

    A write that fails raises `EventLogError` once (it ends the session that wrote it) and the
    file is dropped; the record still reaches memory and `on_record` (the client), and so do the
    records after it, so a full disk loses no committed word that can still be delivered."""

    def __init__(self, path: str | Path | None = None, keep: bool = True,
                 on_record: Callable[[dict], None] | None = None) -> None:
        self.path = Path(path) if path else None
        self.on_record = on_record  # observer (live display); called from the writer's thread
        self.records: list[dict] = []
        self._keep = keep
        self._lock = threading.Lock()  # stages may log from worker threads
        self._fh: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("w", encoding="utf-8")

    def write(self, kind: str, **fields: Any) -> dict:
        rec = {"kind": kind, **fields}
        with self._lock:
            if self._keep:
                self.records.append(rec)
            failed: OSError | None = None
            if self._fh is not None:
                try:
                    self._fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    self._fh.flush()
                except OSError as e:
                    failed = e
                    self._drop_file()
            if self.on_record is not None:
                self.on_record(rec)
        if failed is not None:
            raise EventLogError(f"cannot write the event log {self.path}: {failed}") from failed
        return rec

    def _drop_file(self) -> None:
        fh, self._fh = self._fh, None
        try:
            fh.close()  # type: ignore[union-attr]
        except OSError:
            pass  # the unwritten buffer is lost with the file; the records are in memory

    def meta(self, **config: Any) -> dict:
        return self.write("meta", **config)

    def update(self, stage: str, update: TextUpdate, **extra: Any) -> dict:
        return self.write("update", stage=stage, **update.to_json(), **extra)

    def audio(self, stage: str, chunk: AudioChunk, **extra: Any) -> dict:
        return self.write(
            "audio",
            stage=stage,
            start=round(chunk.start, 4),
            duration=round(chunk.duration, 4),
            wall_time=round(chunk.wall_time, 4),
            text=chunk.text,
            seq=chunk.seq,
            **extra,
        )

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(path: str | Path) -> list[dict]:
    """Read an event log; names the file and the line on a malformed record."""
    out = []
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ValueError(f"cannot read event log {p}: {e.strerror or e}") from e
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{p}:{i}: not a JSON event ({e.msg})") from e
        if not isinstance(rec, dict) or "kind" not in rec:
            raise ValueError(f"{p}:{i}: an event needs a 'kind' field")
        out.append(rec)
    return out


def updates(records: list[dict], stage: str) -> Iterator[TextUpdate]:
    """The TextUpdates one stage emitted, in order."""
    for rec in records:
        if rec.get("kind") == "update" and rec.get("stage") == stage:
            yield TextUpdate.from_json(rec)


# Record fields every writer uses (the evaluation reads exactly these):
# input:  start, end (source seconds of the chunk), wall_time
# update: stage ("asr" | "mt"), committed [{text, start?, end?, p?}], tentative [...], final,
#         end_of_stream, source_time, wall_time, language; optional extras (tokens_evaluated, update_ms)
# audio:  stage "tts", wall_time (computation-aware emission of the first sample), source_time
#         (source seconds consumed when its text was committed), duration, text, seq, sample_rate
# stats:  stage, compute_s (seconds of model work), plus stage-specific counts
# end:    source_duration, wall_time
