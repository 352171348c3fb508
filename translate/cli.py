"""`speech translate-text`: simultaneous translation of plain text or an ASR event log.

Plain text is fed one word per update (at --wpm words per minute, or as fast as it translates);
an event log of `speech transcribe --log` is replayed update by update (records kind="update",
stage="asr"). The committed translation grows on screen with the tentative tail beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import IO, Iterator

from speech.errors import UserError
from speech.types import TextUpdate, Word

from .languages import NAMES


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", nargs="?", default="-", help="text file, ASR event log (.jsonl), or - for stdin")
    parser.add_argument("--source", default="en", help=f"source language ({', '.join(NAMES)}); default en")
    parser.add_argument("--target", default="es", help="target language; default es")
    parser.add_argument("--backend", "--mt-backend", dest="backend", default="default",
                        help="translator (--mt-backend, as `speech translate` names it, is the same): gemma-270m, gguf, bergamot, apertium, a path of engines such as "
                        "bergamot:en-pt,apertium:pt-es, or default (the best measured installed path for the pair)")
    parser.add_argument("--explain", action="store_true",
                        help="print the translation path chosen and why (on standard error) before translating")
    parser.add_argument("--model", help="a GGUF file for --backend gguf (implies it)")
    parser.add_argument("--policy", default="default", help="target commit policy: local-agreement, wait-k, default")
    parser.add_argument("--k", type=int, help="k for --policy wait-k (default 3), or the wait-k floor of local-agreement")
    parser.add_argument("--wpm", type=float, default=0.0, help="feed plain text at this many words a minute (0: no wait)")
    parser.add_argument("--log", type=Path, help="write the mt updates as an event log (JSON lines)")
    parser.add_argument("--final-only", action="store_true", help="print only the finished translation")
    from speech.configuration import add_device_flag

    add_device_flag(parser)


def read_source(path: str, stdin: IO[str] | None = None) -> tuple[str, list[TextUpdate]]:
    """('text', updates of one word each) or ('log', the ASR updates of an event log)."""
    if path == "-":
        text = (stdin or sys.stdin).read()
        where = "standard input"
    else:
        if not path.strip():
            raise UserError("no input named: give a text file, an ASR event log (.jsonl), or - for standard input")
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise UserError(f"cannot read {p}: {e.strerror or e}") from e
        except UnicodeDecodeError:
            raise UserError(f"{p} is not UTF-8 text; pass a text file or an event log") from None
        where = str(p)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.lstrip().startswith("{"):
        updates = list(_asr_updates(text, where))
        if not any(u.committed for u in updates):
            raise UserError(f"{where} holds no committed ASR words (records kind='update', stage='asr')")
        return "log", updates
    words = text.split()
    if not words:
        raise UserError(f"{where} holds no words to translate")
    return "text", [TextUpdate(committed=(Word(w),), source_time=float(i)) for i, w in enumerate(words, 1)]


def _asr_updates(text: str, where: str) -> Iterator[TextUpdate]:
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{where}:{i}: not a JSON event ({e.msg})") from e
        if isinstance(rec, dict) and rec.get("kind") == "update" and rec.get("stage") == "asr":
            yield TextUpdate.from_json(rec)


class Display:
    """The current sentence redrawn in place on a terminal; one line per update otherwise."""

    def __init__(self, out: IO[str], final_only: bool) -> None:
        self.out = out
        self.tty = out.isatty()
        self.final_only = final_only
        self.sentence: list[str] = []
        self.full: list[str] = []

    def show(self, update: TextUpdate) -> None:
        self.sentence += [w.text for w in update.committed]
        self.full += [w.text for w in update.committed]
        tentative = update.tentative_text
        if self.final_only or not (self.sentence or tentative):
            pass
        elif self.tty:
            tail = f" \x1b[2m{tentative}\x1b[0m" if tentative else ""
            self.out.write("\r\x1b[K" + " ".join(self.sentence) + tail)
            if update.final:
                self.out.write("\n")
        else:
            self.out.write(" ".join(self.sentence) + (f"  ‖ {tentative}" if tentative else "") + ("  ⏎" if update.final else "") + "\n")
        if update.final:
            self.sentence = []
        self.out.flush()

    def close(self) -> None:
        if self.final_only:
            self.out.write(" ".join(self.full) + "\n")
            self.out.flush()


def run(args: argparse.Namespace) -> int:
    from speech.backends import default_registry
    from speech.events import EventLog

    from .languages import check_pair
    from .stage import open_translation

    check_pair(args.source, args.target)
    kind, updates = read_source(args.input)
    backend, options = args.backend, {}
    if args.model:
        backend, options = ("gguf" if backend == "default" else backend), {"model": args.model}
    policy_options = {"k": args.k} if args.k is not None else None
    registry = default_registry()
    if args.device != "cpu":  # an LLM translator's layers on the GPU; the others run on the CPU
        from speech.devices import llm_gpu_layers

        from .backends import default_backend

        resolved = default_backend(args.source, args.target) if backend == "default" else backend
        if ("translator", resolved) in registry.specs and "device" in registry.option_names("translator", resolved):
            llm_gpu_layers(args.device, "--device")
            options["device"] = args.device
    if args.explain:
        from .graph import resolve

        print(resolve(registry, args.source, args.target, backend, options).explain(), file=sys.stderr, flush=True)
    translation = open_translation(
        registry, args.source, args.target, backend, args.policy,
        backend_options=options, policy_options=policy_options,
    )
    display = Display(sys.stdout, args.final_only)
    log = EventLog(args.log) if args.log else None
    if log:
        log.meta(source=args.source, target=args.target, backend=backend, policy=args.policy, input=args.input)
    interval = 60.0 / args.wpm if args.wpm > 0 and kind == "text" else 0.0
    t0 = time.monotonic()
    try:
        for i, update in enumerate(updates):
            if interval:
                time.sleep(max(0.0, t0 + i * interval - time.monotonic()))
            for e in translation.step(update):
                _emit(e, display, log, t0)
            if update.end_of_stream:
                break
        for e in translation.finish_steps(updates[-1].source_time if updates else 0.0):
            _emit(e, display, log, t0)
    finally:
        display.close()
        translation.stream.close()
        if log:
            log.close()
    return 0


def _emit(e, display: Display, log, t0: float) -> None:  # noqa: ANN001
    import dataclasses

    update = dataclasses.replace(e.update, wall_time=time.monotonic() - t0)
    display.show(update)
    if log:
        log.update("mt", update, tokens_evaluated=e.stats.tokens_evaluated, update_ms=round(e.stats.ms, 2))
