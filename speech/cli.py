"""The `speech` command. Subcommands live beside the code they drive and are imported lazily, so
`speech --help` stays fast and a missing engine only affects the commands that need it.

Each command module exposes `configure(parser)` and `run(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import UserError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "transcribe": ("speech.asr.cli", "live-simulated streaming transcription of an audio file"),
    "translate-text": ("speech.translate.cli", "simultaneous translation of text or an ASR event log"),
    "translate": ("speech.translate_cmd", "speech in, translated speech out (the main job)"),
    "eval": ("speech.eval.cli", "offline latency and quality evaluation over a manifest"),
    "serve": ("speech.server.cli", "websocket audio API and browser page"),
    "stream": ("speech.server.client_cli", "stream a file to a running server and print events"),
    "mic": ("speech.demo.mic", "live microphone demo in the terminal"),
    "bench": ("speech.bench", "benchmarks: asr, mt, s2st"),
    "config": ("speech.config_cmd", "show the effective configuration of a command (defaults, file, flags)"),
    "doctor": ("speech.doctor", "check what is installed and usable, and how to install what is missing"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="speech",
        description="Real-time speech-to-speech translation on a plain CPU.",
    )
    parser.add_argument("--version", action="version", version=f"speech {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        try:
            importlib.import_module(module).configure(p)
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith("speech"):
                p.set_defaults(_missing=str(e))
            else:
                raise
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("speech-s2st")
    except Exception:  # noqa: BLE001 - running from a source tree
        return "0+unknown"


def main(argv: list[str] | None = None) -> int:
    # Thread budget: OpenMP runtimes (llama.cpp, CTranslate2, onnxruntime) collapse when another
    # stage keeps a core busy unless waiting threads sleep. Must be set before those imports.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if getattr(args, "_missing", None):
        print(f"speech {args.command}: not available in this build ({args._missing})", file=sys.stderr)
        return 2
    module = importlib.import_module(args._module)
    args._given = _given(parser, args.command, sys.argv[1:] if argv is None else argv)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except (UserError, ValueError, LookupError, RuntimeError) as e:
        from speech.translate.hypothesis import EngineFailed

        from .stage import StageError  # here, not at import: `speech --help` loads no numpy

        cause = e.error if isinstance(e, StageError) else e  # a bad option met inside a stage
        if not isinstance(cause, (UserError, ValueError, LookupError, EngineFailed)):
            raise
        if not isinstance(cause, UserError) and os.environ.get("SPEECH_DEBUG"):
            raise
        print(f"speech {args.command}: error: {e}", file=sys.stderr)
        return 1 if isinstance(cause, EngineFailed) else 2  # an engine that died, not a bad input


def _given(parser: argparse.ArgumentParser, command: str, argv: list[str]) -> set[str]:
    """The flags given explicitly to COMMAND (they win over a --config file; defaults do not)."""
    from .configuration import given_dests

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    rest = argv[argv.index(command) + 1:] if command in argv else []
    return given_dests(sub, rest)


if __name__ == "__main__":
    sys.exit(main())
