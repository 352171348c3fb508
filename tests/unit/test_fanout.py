"""The session tree: one trunk feeds one branch per target; a slow branch holds back only itself."""

import asyncio

import pytest

from speech.channel import Channel
from speech.events import EventLog
from speech.pipeline import BranchLog, PipelineConfig, parse_targets
from speech.session import Backlog, Branch, Session, merge_updates
from speech.stage import StageError
from speech.types import TextUpdate, Word


def run(coro, timeout=20):
    return asyncio.run(asyncio.wait_for(coro, timeout))


class Words:
    """Trunk stage: turns each source item (an int) into a TextUpdate committing word `w<i>`."""

    name = "asr"

    def __init__(self, times: list | None = None):
        self.times = times

    async def run(self, inbox, outbox):
        loop = asyncio.get_running_loop()
        async for i in inbox:
            await outbox.put(TextUpdate((Word(f"w{i}"),), (Word("t"),), source_time=float(i)))
            if self.times is not None:
                self.times.append(loop.time())
        await outbox.put(TextUpdate((), (), final=True, end_of_stream=True))


class Upper:
    """Branch stage: logs and forwards committed words, upper-cased, after `delay` seconds each."""

    name = "mt"

    def __init__(self, log, delay=0.0, boom=False):
        self.log, self.delay, self.boom = log, delay, boom

    async def run(self, inbox, outbox):
        async for update in inbox:
            if self.boom:
                raise RuntimeError("branch exploded")
            if self.delay:
                await asyncio.sleep(self.delay)
            out = TextUpdate(tuple(Word(w.text.upper()) for w in update.committed), (), update.final)
            self.log.update("mt", out)
            await outbox.put(out)


def collector(store, key):
    async def sink(inbox: Channel):
        async for update in inbox:
            store.setdefault(key, []).extend(w.text for w in update.committed)
    return sink


def source_of(n):
    async def source(outbox):
        for i in range(n):
            await outbox.put(i)
    return source


def tree(n, delays, log, store, times=None, backlog_items=1024, boom=()):
    branches = [Branch(t, [Upper(BranchLog(log, t), d, boom=t in boom)], collector(store, t)) for t, d in delays.items()]
    return Session([Words(times)], source_of(n), None, log=log, branches=branches, backlog_items=backlog_items)


def test_every_branch_gets_every_committed_word_in_order_and_logs_its_target():
    async def main():
        log, store = EventLog(), {}
        await tree(50, {"es": 0.0, "pt": 0.0, "fr": 0.0}, log, store).run()
        return log, store

    log, store = run(main())
    expected = [f"W{i}" for i in range(50)]
    assert store == {"es": expected, "pt": expected, "fr": expected}
    for target in ("es", "pt", "fr"):
        logged = [w["text"] for r in log.records if r["kind"] == "update" and r.get("target") == target
                  for w in r["committed"]]
        assert logged == expected


def test_a_slow_branch_holds_back_only_itself():
    """The slow branch needs 50 x 20 ms; the trunk and the fast branch finish long before it."""
    async def main():
        log, store, times = EventLog(), {}, []
        loop = asyncio.get_running_loop()
        fast_done = []

        session = tree(50, {"es": 0.0, "pt": 0.02}, log, store, times=times)
        fast_sink = session.branches[0].sink

        async def timed(inbox):
            await fast_sink(inbox)
            fast_done.append(loop.time())
        session.branches[0].sink = timed
        t0 = loop.time()
        await session.run()
        return times[-1] - t0, fast_done[0] - t0, loop.time() - t0, store, session.branches[1].backlog.high_water

    trunk_s, fast_s, total_s, store, high_water = run(main())
    assert total_s >= 0.9  # the slow branch: 50 updates x 20 ms
    assert trunk_s < 0.3 and fast_s < 0.3, (trunk_s, fast_s)
    assert store["pt"] == store["es"] == [f"W{i}" for i in range(50)]
    assert high_water > 32  # it fell behind beyond its bounded link, into its backlog


def test_backlog_merges_beyond_its_bound_without_losing_a_word():
    async def main():
        log, store = EventLog(), {}
        session = tree(200, {"es": 0.0, "pt": 0.005}, log, store, backlog_items=8)
        await session.run()
        return store, session.branches[1].backlog

    store, backlog = run(main())
    assert store["pt"] == store["es"] == [f"W{i}" for i in range(200)]
    assert backlog.merged > 0 and backlog.high_water <= 9


def test_merge_keeps_committed_words_and_the_newer_tail():
    a = TextUpdate((Word("a"),), (Word("x"),), source_time=1.0, language="en")
    b = TextUpdate((Word("b"), Word("c")), (Word("y"),), final=True, source_time=2.0)
    m = merge_updates(a, b)
    assert [w.text for w in m.committed] == ["a", "b", "c"] and [w.text for w in m.tentative] == ["y"]
    assert m.final and m.source_time == 2.0 and m.language == "en"
    backlog = Backlog(items=1)
    backlog.push(a)
    backlog.push(b)  # merged into a
    backlog.push(TextUpdate((Word("d"),)))  # b was final: not merged
    assert len(backlog) == 2 and backlog.merged == 1


def test_a_failing_branch_tears_the_session_down_and_names_its_stage():
    async def main():
        log, store = EventLog(), {}
        await tree(20, {"es": 0.0, "pt": 0.0}, log, store, boom=("pt",)).run()

    with pytest.raises(StageError) as info:
        run(main())
    assert info.value.stage == "pt:mt" and "exploded" in str(info.value)


def test_targets_config():
    assert PipelineConfig(target="de").all_targets == ("de",)
    config = PipelineConfig(target="es", targets=("es", "pt", "es"))
    assert config.all_targets == ("es", "pt")
    assert config.for_target("pt").all_targets == ("pt",) and config.for_target("pt").target == "pt"
    assert parse_targets(" es, PT,es ") == ("es", "pt")
    with pytest.raises(ValueError):
        parse_targets(" , ")


def test_bergamot_translators_of_one_registry_call_the_engine_from_one_thread():
    """Two targets (or two sessions) translate through one native engine: one call at a time, and
    always from the same thread, whichever translator object and whichever thread asks (called from
    any thread under a lock, the engine crashed the process now and then)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from speech.translate.nmt import BergamotConfig, load_bergamot

    calls: list[int] = []
    busy = threading.Lock()

    class Engine:
        def translate(self, text, direction):
            assert busy.acquire(blocking=False), "two calls at once"
            try:
                calls.append(threading.get_ident())
                return text.upper()
            finally:
                busy.release()

    class Registry:
        def __init__(self):
            self.cache = {}

        def shared(self, key, load):
            if key not in self.cache:
                self.cache[key] = Engine() if key[0] == "bergamot" else load()
            return self.cache[key]

    registry = Registry()
    one, two = load_bergamot(BergamotConfig(), registry), load_bergamot(BergamotConfig(), registry)
    assert one.engine is two.engine
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda i: (one, two)[i % 2].translate(f"w{i}", "en", "pt"), range(40)))
    assert outs == [f"W{i}" for i in range(40)]
    assert len(calls) == 40 and len(set(calls)) == 1 and calls[0] != threading.get_ident()
