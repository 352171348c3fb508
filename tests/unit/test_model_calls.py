"""Model calls with a time-out, and the translation stage facing a translator that hangs, raises
or returns garbage: the session ends with a named error, logged as an `error` record."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from speech.calls import ModelCallTimeout, model_call
from speech.clock import SimulatedClock
from speech.events import EventLog
from speech.session import Session, StageError
from speech.translate.hypothesis import BadHypothesis, Hypothesis
from speech.translate.policy import LocalAgreement
from speech.translate.simultaneous import SimultaneousTranslation
from speech.translate.stage import TranslateStage
from speech.types import TextUpdate, Word


def test_a_call_past_its_time_out_is_a_named_error():
    release = threading.Event()
    with pytest.raises(ModelCallTimeout, match="the test model did not return within 0.1 s"):
        asyncio.run(model_call(release.wait, 5, timeout_s=0.1, what="the test model"))
    release.set()
    assert asyncio.run(model_call(lambda x: x + 1, 1, timeout_s=1.0, what="m")) == 2
    assert asyncio.run(model_call(time.sleep, 0.01, timeout_s=None, what="m")) is None


def test_a_call_that_raises_timeout_itself_is_not_renamed():
    def model():
        raise TimeoutError("the engine's own time-out")

    with pytest.raises(TimeoutError, match="engine's own") as info:
        asyncio.run(model_call(model, timeout_s=5.0, what="m"))
    assert not isinstance(info.value, ModelCallTimeout)
    with pytest.raises(ValueError):
        asyncio.run(model_call(model, timeout_s=0, what="m"))


class Translator:
    """Upper-cases the source; `fault` makes it hang, raise, or return garbage on the 2nd call."""

    def __init__(self, fault: str, release: threading.Event) -> None:
        self.fault, self.release, self.calls, self.closed = fault, release, 0, False

    def hypothesis(self, source, committed, complete):
        self.calls += 1
        if self.calls >= 2:
            if self.fault == "hang":
                self.release.wait(2)
            elif self.fault == "raise":
                raise RuntimeError("translator exploded")
            elif self.fault == "garbage" and self.calls >= 3:
                return Hypothesis([None, 3.5], 7)  # not words, and more stable words than words
        out = list(committed) + [w.upper() for w in source][len(committed):]
        return Hypothesis(out, len(out))

    def end_sentence(self, source, target):
        pass

    def reset(self):
        pass

    def close(self):
        self.closed = True


def run_stage(fault: str) -> tuple[BaseException | None, EventLog, Translator]:
    release = threading.Event()
    log = EventLog()
    clock = SimulatedClock()
    translator = Translator(fault, release)
    stage = TranslateStage(SimultaneousTranslation(translator, LocalAgreement(), language="xx"), clock.stage("mt"), log,
                           call_timeout_s=0.3)

    async def source(out):
        for i, w in enumerate("one two three four".split()):
            await out.put(TextUpdate(committed=(Word(w, i, i + 0.5),), source_time=i + 0.5, wall_time=i + 0.5))
        await out.put(TextUpdate(final=True, end_of_stream=True, source_time=5.0, wall_time=5.0))

    async def sink(inbox):
        async for _ in inbox:
            pass

    error = None
    try:
        asyncio.run(Session([stage], source, sink, clock=clock, log=log).run())
    except StageError as e:
        error = e
    finally:
        release.set()
    return error, log, translator


@pytest.mark.parametrize("fault, named", [("hang", ModelCallTimeout), ("raise", RuntimeError)])
def test_a_failing_translator_ends_the_session_with_a_named_error(fault, named):
    error, log, translator = run_stage(fault)
    assert error is not None and error.stage == "mt" and isinstance(error.error, named)
    (record,) = [r for r in log.records if r["kind"] == "error"]
    assert record["stage"] == "mt" and record["error"].startswith(named.__name__)
    assert translator.closed  # the stage released its engine state


def test_garbage_from_a_translator_ends_the_session_and_never_reaches_the_committed_text():
    error, log, _ = run_stage("garbage")
    committed = [w["text"] for r in log.records if r["kind"] == "update" and r["stage"] == "mt" for w in r["committed"]]
    assert committed == ["ONE"]  # what was committed before the garbage, nothing of it
    assert error is not None and error.stage == "mt" and isinstance(error.error, BadHypothesis)
    (record,) = [r for r in log.records if r["kind"] == "error"]
    assert "not text" in record["error"]


@pytest.mark.parametrize("words, stable", [(["a", None], 1), (["a", ""], 1), (["a"], 2), (["a"], -1), (["a"], 0.5)])
def test_a_hypothesis_refuses_garbage(words, stable):
    with pytest.raises(BadHypothesis):
        Hypothesis(words, stable)
