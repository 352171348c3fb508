"""The server side of benchmarks/faults.py: a pipeline factory for `speech serve --pipeline
benchmarks.faultkit:make_factory` that builds the real pipeline for ordinary hellos, and a cheap
session with one injected fault for a hello whose target is `pt-FAULT`:

    es -> fake recogniser (a fixed Spanish sentence, one word per 0.5 s) -> the real Apertium
    es->pt translate stage (its own pipeline: no other pair shares it) -> fake synthesis

FAULT is one of
    peer     no fault: a cheap session beside the healthy one (the control)
    hang     the translator's model call hangs from its 3rd call (the stage times it out)
    raise    the translator raises on its 3rd call
    garbage  the translator returns a malformed hypothesis on its 3rd call
    oom      the pipeline runs out of memory while loading
    killonce nothing here: the benchmark kills one program of the es->pt Apertium pipeline once
    kill     nothing here: the benchmark kills every es->pt Apertium pipeline as it starts
    logfull  nothing here: the benchmark points the faulty session's log at /dev/full
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from speech.server.pipelines import RealPipeline  # noqa: E402
from speech.session import Session  # noqa: E402
from speech.translate.hypothesis import Hypothesis  # noqa: E402
from speech.translate.stage import TranslateStage, open_translation  # noqa: E402
from tests.unit.test_server_fakes import FakeAsr, FakeTts  # noqa: E402

FAULTS = ("peer", "hang", "raise", "garbage", "oom", "killonce", "kill", "logfull")
SPANISH = tuple("El perro negro duerme en la casa vieja y el gato corre en el parque".split())
CALL_TIMEOUT_S = 2.0  # the faulty session's translator time-out (the server's default is 60 s)
FAULT_AT_CALL = 3


@dataclass
class FaultyStream:
    """A translation stream that misbehaves from its `FAULT_AT_CALL`-th hypothesis on."""

    inner: Any
    fault: str
    calls: int = 0

    def hypothesis(self, source: list[str], committed: list[str], complete: bool) -> Hypothesis:
        self.calls += 1
        if self.calls >= FAULT_AT_CALL:
            if self.fault == "hang":
                threading.Event().wait(60)  # a stuck binding: holds its worker thread for a minute
            elif self.fault == "raise":
                raise RuntimeError("injected translator failure")
            elif self.fault == "garbage":
                return Hypothesis([None, 3.5], 7)  # type: ignore[list-item]  # refused on construction
        return self.inner.hypothesis(source, committed, complete)

    def end_sentence(self, source: list[str], target: list[str]) -> None:
        self.inner.end_sentence(source, target)

    def reset(self) -> None:
        self.inner.reset()

    def close(self) -> None:
        self.inner.close()


@dataclass
class FaultPipeline:
    real: RealPipeline

    def __call__(self, hello, source, sink, clock, log) -> Session:  # noqa: ANN001
        fault = hello.target.partition("-")[2]
        if not fault:
            return self.real(hello, source, sink, clock, log)
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; faults: {', '.join(FAULTS)}")
        if fault == "oom":
            raise MemoryError("injected: the engine ran out of memory while loading")
        translation = open_translation(self.real.registry, "es", "pt", "apertium")
        if fault in ("hang", "raise", "garbage"):
            translation.stream = FaultyStream(translation.stream, fault)
        mt = TranslateStage(translation, clock.stage("mt"), log, call_timeout_s=CALL_TIMEOUT_S)
        asr = FakeAsr(log, clock, words=SPANISH)
        return Session([asr, mt, FakeTts(log, clock)], source, sink[hello.target], clock=clock, log=log)

    async def warm_up(self, hello) -> None:  # noqa: ANN001
        await self.real.warm_up(hello)


def make_factory(registry, base) -> FaultPipeline:  # noqa: ANN001
    return FaultPipeline(RealPipeline(registry, base))
