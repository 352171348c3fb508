"""`speech config show [COMMAND] [--config FILE] [flags]`: the configuration a command would run with.

Prints TOML (a file `--config` accepts), each value followed by where it came from: `default`,
`speech COMMAND` (the command's own default), the configuration file, or the flag.
"""

from __future__ import annotations

import argparse
import importlib
import json

COMMANDS_WITH_CONFIG = {
    "translate": ("speech.translate_cmd", {"stages": ("asr", "mt", "tts", "codec")}),
    "serve": ("speech.server.cli", {}),
    "mic": ("speech.demo.mic", {}),
    "eval": ("speech.eval.cli", {}),
}


USAGE = "speech config show [COMMAND] [--json] [COMMAND's flags, --config FILE among them]"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "show: print the effective configuration of COMMAND (translate, serve, mic or eval; default translate) "
        "as TOML, each value with where it comes from: defaults < the command's defaults < --config FILE < flags. "
        "The flags are COMMAND's own, e.g. `speech config show serve --config my.toml --port 9000`. "
        "--json prints key -> {value, origin}."
    )
    parser.usage = USAGE
    parser.add_argument("words", nargs=argparse.REMAINDER, metavar="show ...", help="show [COMMAND] [--json] [flags]")


def command_parser(command: str) -> argparse.ArgumentParser:
    """COMMAND's own parser, its positional inputs made optional (no input file is read here)."""
    module, _ = COMMANDS_WITH_CONFIG[command]
    parser = argparse.ArgumentParser(prog=f"speech config show {command}",
                                     description=f"The flags of speech {command} whose effect on the configuration is shown.")
    importlib.import_module(module).configure(parser)
    for action in parser._actions:
        if not action.option_strings:
            action.required = False
            if action.nargs is None:
                action.nargs = "?"
        elif action.required:
            action.required = False
    return parser


def effective_for(command: str, flags: list[str]):
    """The Effective configuration `speech COMMAND FLAGS` would run with."""
    from .configuration import given_dests, resolve

    parser = command_parser(command)
    args = parser.parse_args(flags)
    args._given = given_dests(parser, flags)
    return resolve(command, args, fixed=COMMANDS_WITH_CONFIG[command][1])


def run(args: argparse.Namespace) -> int:
    from .configuration import TABLES, render_toml
    from .errors import UserError

    words = list(args.words)
    if not words or words[0] != "show":
        raise UserError(f"usage: {USAGE}")
    words.pop(0)
    if words and not words[0].startswith("-") and words[0] not in COMMANDS_WITH_CONFIG:
        raise UserError(f"no configuration for a command {words[0]!r}: give one of {', '.join(COMMANDS_WITH_CONFIG)} "
                        f"(default translate), then its flags")
    command = words.pop(0) if words and words[0] in COMMANDS_WITH_CONFIG else "translate"
    as_json = "--json" in words
    words = [w for w in words if w != "--json"]
    effective = effective_for(command, words)
    if as_json:
        print(json.dumps({k: {"value": v, "origin": o} for k, v, o in effective.items()}, indent=1, ensure_ascii=False))
        return 0
    tables = TABLES if command == "serve" else tuple(t for t in TABLES if t != "server")
    print(f"# speech {command}: defaults < speech {command} < --config file < flags")
    print(render_toml(effective, tables), end="")
    return 0
