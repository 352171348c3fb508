"""The first SIGINT of `speech translate` and `speech stream` stops reading the input (the pipeline then finishes what was
read); the handlers go with it, so a second signal aborts."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from speech.interrupt import InputStop


def read_with_stop(signal_at: int | None, items: int = 200) -> tuple[InputStop, list[int], object]:
    async def main():
        stop = InputStop()
        stop.install()
        fed: list[int] = []

        async def reading() -> None:
            for i in range(items):
                fed.append(i)
                if i == signal_at:
                    os.kill(os.getpid(), signal.SIGINT)
                await asyncio.sleep(0.005)

        await stop.until_stopped(reading())
        stop.remove()
        return stop, fed

    stop, fed = asyncio.run(main())
    return stop, fed, signal.getsignal(signal.SIGINT)


def test_a_signal_stops_the_reading_where_it_is_and_gives_ctrl_c_back():
    stop, fed, handler = read_with_stop(signal_at=3)
    assert stop.cut == "SIGINT"
    assert 4 <= len(fed) < 20  # stopped within a few items, not read to the end
    assert handler is signal.default_int_handler  # a second Ctrl-C raises KeyboardInterrupt


def test_an_input_read_to_its_end_is_not_marked_stopped():
    stop, fed, handler = read_with_stop(signal_at=None, items=5)
    assert stop.cut == "" and fed == [0, 1, 2, 3, 4]
    assert handler is signal.default_int_handler


def test_reading_errors_still_reach_the_caller():
    async def main():
        stop = InputStop()
        stop.install()

        async def reading() -> None:
            raise ValueError("talk.wav: the file is corrupt")

        try:
            await stop.until_stopped(reading())
        finally:
            stop.remove()

    with pytest.raises(ValueError, match="corrupt"):
        asyncio.run(main())
