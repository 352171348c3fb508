"""`speech mic`'s microphone path with sounddevice's streams replaced by fakes (no sound card here).

The fake input stream calls the capture callback from its own thread, as PortAudio does; the fake
output stream pulls through the player's callback, so both hand-offs are exercised.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import math
import re
import signal
import threading
import time

import numpy as np
import pytest

sd = pytest.importorskip("sounddevice")


class FakeInputStream:
    def __init__(self, samplerate, channels, dtype, blocksize, device, callback):
        self.rate, self.block, self.callback = samplerate, blocksize, callback
        self.thread = threading.Thread(target=self._deliver)

    def _deliver(self):
        t = np.arange(self.block) / self.rate
        for _ in range(25):  # 2.5 s in 100 ms blocks, delivered at twice real time
            time.sleep(0.05)
            self.callback((0.2 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)[:, None], self.block, None, None)
        os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C: what was captured is still translated

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.thread.join()


class FakeOutputStream:
    played: list[np.ndarray] = []

    def __init__(self, samplerate, channels, dtype, device, callback):
        self.callback = callback
        self.rate = samplerate

    def start(self):
        pass

    def stop(self):
        # drain what was queued, as the device would have
        for _ in range(200):
            out = np.zeros((1024, 1), np.float32)
            self.callback(out, 1024, None, None)
            FakeOutputStream.played.append(out[:, 0].copy())

    def close(self):
        pass


def test_mic_capture_and_playback_with_fake_devices(monkeypatch, capsys):
    from speech.demo import mic

    monkeypatch.setattr(sd, "InputStream", FakeInputStream)
    monkeypatch.setattr(sd, "OutputStream", FakeOutputStream)
    monkeypatch.setattr(sd, "query_devices", lambda device=None, kind=None: {"default_samplerate": 48000.0})
    FakeOutputStream.played = []
    args = argparse.Namespace(
        source="en", target="es", input_file=None, output_file=None, no_playback=False, seconds=None,
        input_device=None, output_device=None, list_devices=False, asr_model="whisper-tiny.en",
        mt_backend="default", voice="default", log=None,
        pipeline="tests.unit.test_server_fakes:make_fake_factory")
    assert asyncio.run(asyncio.wait_for(mic._main(args), 30)) == 0
    captured = capsys.readouterr()
    final = captured.out.rsplit("\nheard: ", 1)[1]
    heard = final.split("\n")[0].split()
    # 2.5 s captured at 48 kHz, resampled to 16 kHz; the fake says a word per 0.5 s (a partial one
    # flushed at the stop). Audio the pipeline could not take in time is dropped and reported.
    m = re.search(r"dropped ([\d.]+) s of microphone audio", captured.err)
    kept = 2.5 - (float(m.group(1)) if m else 0.0)
    assert heard == [f"w{i}" for i in range(math.ceil(kept / 0.5 - 1e-6))], (heard, captured.err)
    assert len(heard) >= 3
    played = np.concatenate(FakeOutputStream.played)
    assert np.count_nonzero(np.abs(played) > 0.1) > 2205  # several words' worth of tone reached the speaker
