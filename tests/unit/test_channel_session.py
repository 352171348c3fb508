import asyncio

import numpy as np
import pytest

from speech.channel import Channel, ChannelClosed, EndOfStream, Overflow
from speech.clock import SimulatedClock
from speech.session import Session
from speech.stage import StageError


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def test_channel_delivers_in_order_then_ends():
    async def main():
        ch: Channel[int] = Channel(2)
        out = []

        async def produce():
            for i in range(5):
                await ch.put(i)
            ch.close()

        async def consume():
            async for x in ch:
                out.append(x)

        await asyncio.gather(produce(), consume())
        return out

    assert run(main()) == [0, 1, 2, 3, 4]


def test_channel_blocks_when_full():
    async def main():
        ch: Channel[int] = Channel(1)
        await ch.put(1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(ch.put(2), 0.05)
        assert await ch.get() == 1

    run(main())


@pytest.mark.parametrize(
    "policy,expected,dropped",
    [(Overflow.DROP_OLDEST, [3, 4], 3), (Overflow.DROP_NEWEST, [0, 1], 3)],
)
def test_channel_drop_policies_count(policy, expected, dropped):
    async def main():
        ch: Channel[int] = Channel(2, policy)
        for i in range(5):
            await ch.put(i)
        ch.close()
        return [x async for x in ch], ch.dropped

    items, n = run(main())
    assert items == expected and n == dropped


def test_closed_channel_refuses_put_and_ends_get():
    async def main():
        ch: Channel[int] = Channel(2)
        ch.close()
        with pytest.raises(ChannelClosed):
            await ch.put(1)
        with pytest.raises(EndOfStream):
            await ch.get()

    run(main())


class Doubler:
    name = "double"

    async def run(self, inbox, outbox):
        async for x in inbox:
            await outbox.put(x * 2)
        await outbox.put("flushed")


class Boom:
    name = "boom"

    def __init__(self, after: int):
        self.after = after

    async def run(self, inbox, outbox):
        n = 0
        async for x in inbox:
            n += 1
            if n > self.after:
                raise ValueError("model exploded")
            await outbox.put(x)


def make_source(n):
    async def source(outbox):
        for i in range(n):
            await outbox.put(i)

    return source


def test_session_end_of_stream_flushes_every_stage():
    got = []

    async def sink(inbox):
        async for x in inbox:
            got.append(x)

    run(Session([Doubler(), Doubler()], make_source(3), sink).run())
    # The first stage's flush marker passes through the second stage (doubled as a string).
    assert got == [0, 4, 8, "flushedflushed", "flushed"]


def test_session_error_names_stage_and_does_not_hang():
    async def sink(inbox):
        async for _ in inbox:
            await asyncio.sleep(0)

    async def forever_source(outbox):
        i = 0
        while True:
            await outbox.put(i)
            i += 1

    s = Session([Doubler(), Boom(after=5), Doubler()], forever_source, sink)
    with pytest.raises(StageError) as info:
        run(s.run())
    assert info.value.stage == "boom"
    assert "model exploded" in str(info.value)
    assert any(r["kind"] == "error" and r["stage"] == "boom" for r in s.log.records)


def test_session_cancel_tears_every_stage_down():
    started = asyncio.Event

    async def main():
        cancelled = []

        class Slow:
            name = "slow"

            async def run(self, inbox, outbox):
                try:
                    async for x in inbox:
                        await asyncio.sleep(3600)
                finally:
                    cancelled.append(self.name)

        async def sink(inbox):
            try:
                async for _ in inbox:
                    pass
            finally:
                cancelled.append("sink")

        task = asyncio.create_task(Session([Slow()], make_source(3), sink, clock=SimulatedClock()).run())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled

    assert sorted(run(main())) == ["sink", "slow"]
