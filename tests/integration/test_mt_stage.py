"""The "mt" stage built from a PipelineConfig, run in a session on the real default backend."""

from __future__ import annotations

import asyncio
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest

from speech.clock import SimulatedClock
from speech.events import EventLog
from speech.pipeline import PipelineConfig, build_session
from speech.types import TextUpdate, Word

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("target, backend", [("pt", "default"), ("es", "default")])
def test_mt_stage_in_a_session(registry, target, backend):
    config = PipelineConfig(source="en", target=target, stages=("mt",), mt_backend=backend)
    log = EventLog()
    got: list[TextUpdate] = []
    words = "The cat sleeps on the mat. The dog runs".split()

    async def source(out):
        for i, w in enumerate(words):
            await out.put(TextUpdate(committed=(Word(w, i * 0.4, i * 0.4 + 0.3),), tentative=(Word("uh"),),
                                     source_time=i * 0.4 + 0.4, wall_time=i * 0.4 + 0.5))
        await out.put(TextUpdate(final=True, end_of_stream=True, source_time=4.0, wall_time=4.1))

    async def sink(inbox):
        async for u in inbox:
            got.append(u)

    session = build_session(registry, config, source, sink, clock=SimulatedClock(), log=log)
    asyncio.run(session.run())
    assert got[-1].end_of_stream and got[-1].final
    assert all(not u.end_of_stream for u in got[:-1])
    text = " ".join(w.text for u in got for w in u.committed).lower()
    assert ("gato" in text) and len(text.split()) >= 8
    assert sum(u.final for u in got) >= 2
    # Computation-aware time never runs ahead of causality.
    assert all(u.wall_time >= u.source_time for u in got)
    stats = [r for r in log.records if r["kind"] == "stats" and r.get("stage") == "mt"]
    assert stats and stats[0]["compute_s"] > 0
