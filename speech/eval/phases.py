"""Decode phases: every recording evaluated again after a fraction of a second of leading silence.

The recogniser decodes on a fixed step (1 s), so where its decodes fall in the speech is an
accident of where the recording starts; a quarter second of silence before the same ten clips
moves their BLEU by up to 3 points (docs/evaluation.md). `--phases K` runs each recording K times,
after 0, 1/K, 2/K, ... of a second of silence, and every figure is then taken over all K runs:
an average over the decode's phase instead of one draw of it. Latencies count from where the
recording starts (`utterance_metrics(origin=...)`): the silence is not the system's delay.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

MAX_PHASES = 10
INPUT = "input.wav"  # the recording with its leading silence, kept in the item's folder


def phase_leads(phases: int) -> list[float]:
    """Seconds of leading silence of each phase: 0, 1/K, ... (K phases over one second)."""
    return [round(k / phases, 3) for k in range(phases)]


def phase_id(item_id: str, lead: float) -> str:
    """The item id of one phase: the recording's own for the first, `ID+250ms` for the others."""
    return item_id if lead == 0 else f"{item_id}+{round(lead * 1000)}ms"


def phased_input(recording: Path, lead: float, folder: Path) -> Path:
    """The recording preceded by `lead` seconds of silence, written once into `folder`."""
    if lead == 0:
        return recording
    path = folder / INPUT
    if not path.is_file():
        from ..audio import read_audio, write_wav

        samples, rate, _ = read_audio(recording)
        silence = np.zeros(int(round(lead * rate)), np.float32)
        # Written whole, then renamed: never half a file. The name keeps its .wav ending (soundfile
        # takes the format from it), which models.cache.atomic_target's `.tmp` name would not.
        tmp = folder / f".{os.getpid()}.{INPUT}"
        write_wav(tmp, np.concatenate([silence, samples.astype(np.float32)]), rate)
        os.replace(tmp, path)
    return path
