"""`--set KEY=VALUE` options of the benchmarks, typed: numbers, booleans and null as JSON reads
them ("false" must switch an option off, not be truthy text), anything else as text."""

from __future__ import annotations

import json

from .errors import UserError


def parse_settings(items: list[str], flag: str = "--set") -> dict:
    settings: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} {item!r}: expected KEY=VALUE, e.g. {flag} max_words=6")
        value = value.strip()
        if value.lower() in ("true", "false"):
            value = value.lower()
        try:
            settings[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            settings[key.strip()] = value
    return settings
