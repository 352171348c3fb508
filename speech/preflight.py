"""A configuration checked against what is installed, before anything loads: a misspelt recogniser,
device, translation path, voice or codec is one line at once, not a failure after minutes of work."""

from __future__ import annotations

from typing import Any


def check_config(config: Any, registry: Any) -> None:
    """Refuses what `config` asks for that is not here, naming it (a UserError or LookupError, one
    line under `speech`); nothing is loaded."""
    from .devices import check_devices
    from .translate.graph import resolve
    from .tts.backends import check_voice

    check_devices(config, registry)  # also refuses an unknown recogniser
    for target in config.all_targets:
        if "mt" in config.stages:
            resolve(registry, config.source, target, config.mt_backend)
        if "tts" in config.stages:
            check_voice(registry, target, config.voice)
    if "codec" in config.stages:
        registry.spec("codec", config.codec)
