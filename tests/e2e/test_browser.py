"""The browser page in a real headless Chromium, its microphone fed from a shared recording.

`speech serve` runs as a subprocess; Chromium opens the page with autostart, captures the fake
microphone through the AudioWorklet, and the test reads the page through the DevTools protocol
(a plain websocket) until the translation and the played audio show up.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import FLEURS, REPO, require_data

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh --test)")


def start_server(extra: list[str], env: dict) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "speech.cli", "serve", "--port", "0", *extra],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"listening on ws://[\d.]+:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise AssertionError(f"speech serve did not start: {proc.stderr.read()[-2000:]}")


def stop_server(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def start_chromium(url: str, wav: Path, profile: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
         f"--use-file-for-fake-audio-capture={wav}", "--autoplay-policy=no-user-gesture-required",
         "--remote-debugging-port=0", "--remote-allow-origins=*", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"DevTools listening on ws://[\d.]+:(\d+)/", line)
        if m:
            return proc, int(m.group(1))
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("chromium did not start its DevTools endpoint")


def devtools_pages(devtools_port: int) -> list[dict]:
    """The pages Chromium has open, from its DevTools endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{devtools_port}/json/list", timeout=5) as r:
        return [t for t in json.loads(r.read()) if t["type"] == "page"]


async def page_state(devtools_port: int, timeout: float) -> dict:
    """Poll the page through DevTools until it says done (or the timeout); return what it shows."""
    from websockets.asyncio.client import connect

    page = (await asyncio.to_thread(devtools_pages, devtools_port))[0]
    expr = """JSON.stringify({
        status: document.getElementById('status').textContent,
        source: document.getElementById('source-committed').textContent,
        target: document.getElementById('target-committed').textContent,
        tentative: document.getElementById('target-tentative').textContent,
        tentativeStyle: getComputedStyle(document.getElementById('target-tentative')).fontStyle,
        frames: +document.getElementById('audio-frames').textContent,
        audioSeconds: +document.getElementById('audio-seconds').textContent,
        sent: +document.getElementById('sent-seconds').textContent,
        lag: document.getElementById('lag').textContent,
        heardLag: document.getElementById('heard-lag').textContent,
        heardLagP50: document.getElementById('heard-lag-p50').textContent,
        relief: +document.getElementById('relief-words').textContent,
        unspoken: +document.getElementById('unspoken-words').textContent,
        micLevel: document.getElementById('mic-level').textContent,
        done: document.body.dataset.done === '1'})"""
    async with connect(page["webSocketDebuggerUrl"], max_size=None) as ws:
        deadline = time.monotonic() + timeout
        state: dict = {}
        n = 0
        while time.monotonic() < deadline:
            n += 1
            await ws.send(json.dumps({"id": n, "method": "Runtime.evaluate", "params": {"expression": expr}}))
            while True:
                reply = json.loads(await ws.recv())
                if reply.get("id") == n:
                    break
            value = reply.get("result", {}).get("result", {}).get("value")
            if value is None:  # the page is still loading
                await asyncio.sleep(0.5)
                continue
            state = json.loads(value)
            if state["done"] or "error" in state["status"]:
                return state
            await asyncio.sleep(0.5)
        return state


def run_page(pipeline_args: list[str], clip: str, seconds: float, timeout: float, target: str = "es") -> tuple[dict, str]:
    import soundfile as sf

    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "mic.wav"
        data, rate = sf.read(str(FLEURS / clip), dtype="float32")
        sf.write(str(wav), data, rate, subtype="PCM_16")  # Chromium's fake capture reads WAV only
        server, port = start_server(pipeline_args, env)
        browser = None
        try:
            url = f"http://127.0.0.1:{port}/?autostart=1&seconds={seconds}&source=en&target={target}"
            browser, devtools = start_chromium(url, wav, Path(tmp) / "profile")
            state = asyncio.run(page_state(devtools, timeout))
        finally:
            if browser is not None:
                browser.kill()
                browser.wait()
            err = stop_server(server)
    return state, err


def test_page_shows_translation_and_plays_audio_fake_pipeline():
    require_data(FLEURS)
    state, err = run_page(["--pipeline", "tests.unit.test_server_fakes:make_fake_factory", "--warm-up", "none"],
                          "fleurs-en-001.ogg", seconds=3, timeout=40)
    assert state.get("done"), f"page never finished: {state} / server: {err[-1500:]}"
    # the fake recogniser commits one word per 0.5 s; its translator upper-cases
    words = state["target"].split()
    assert len(words) >= 5 and words[:3] == ["W0", "W1", "W2"], state
    assert state["frames"] == len(words) and state["audioSeconds"] > 0.4
    assert state["tentativeStyle"] == "italic"
    assert 2.5 <= state["sent"] <= 4.0
    assert -20 <= float(state["micLevel"]) <= 0, state  # the clip peaks at -7 dBFS
    # the listener timeline: each fake word is heard after its source word was said
    assert 0.0 < float(state["heardLagP50"]) < 3.0 and state["heardLag"] != "-", state


@pytest.mark.parametrize("behind", ["relief", "unspoken"])
def test_page_counts_the_words_a_voice_too_far_behind_could_not_say_fake_pipeline(behind):
    """The fake voice has every other word spoken by the relief voice, or leaves it unspoken."""
    require_data(FLEURS)
    state, err = run_page(["--pipeline", "tests.unit.test_server_fakes:make_fake_factory", "--warm-up", "none"],
                          "fleurs-en-001.ogg", seconds=3, timeout=40, target=f"es-{behind}")
    assert state.get("done"), f"page never finished: {state} / server: {err[-1500:]}"
    words = state["target"].split()
    assert len(words) >= 5 and state[behind] == len(words) // 2, state
    assert state["relief" if behind == "unspoken" else "unspoken"] == 0
    assert state["frames"] == (len(words) if behind == "relief" else len(words) - len(words) // 2)


@pytest.mark.slow
def test_page_shows_real_translation_and_plays_audio():
    require_data(FLEURS)
    # "All nouns, alongside the word Sie for you, always begin with a capital letter ..." (8.8 s)
    state, err = run_page(["--asr-model", "whisper-tiny.en", "--warm-up", "en:es"], "fleurs-en-001.ogg",
                          seconds=6, timeout=150)
    assert state.get("done"), f"page never finished: {state} / server: {err[-1500:]}"
    heard = state["source"].lower()
    assert sum(w in heard for w in ("nouns", "word", "always", "begin")) >= 2, state
    said = state["target"].split()
    assert len(said) >= 3 and state["target"].lower() != heard, state
    assert state["frames"] >= 1 and state["audioSeconds"] > 0.5, state
    assert state["lag"] != "-" and float(state["heardLag"]) > 0.0, state
    print(state)


def test_stream_cli_and_server_shutdown_flush(tmp_path):
    """`speech stream` against `speech serve`; SIGINT to the server mid-stream still ends in `done`."""
    require_data(FLEURS)
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    server, port = start_server(["--pipeline", "tests.unit.test_server_fakes:make_fake_factory",
                                 "--warm-up", "none"], env)
    clip = str(FLEURS / "fleurs-en-000.ogg")  # 10.6 s
    url = f"ws://127.0.0.1:{port}/ws"
    try:
        fast = subprocess.run([sys.executable, "-m", "speech.cli", "stream", clip, "--url", url, "--speed", "0",
                               "--output", str(tmp_path / "out.wav"), "--json"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        live = subprocess.Popen([sys.executable, "-m", "speech.cli", "stream", clip, "--url", url],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(4.0)  # about 2 s streamed once the client has started
    finally:
        err = stop_server(server)
    out, _ = live.communicate(timeout=60)
    assert fast.returncode == 0, fast.stderr
    events = [json.loads(line) for line in fast.stdout.splitlines()]
    assert events[0]["type"] == "ready" and events[-1]["type"] == "done"
    assert events[-1]["summary"]["recognized_words"] == 22  # 10.56 s / 0.5 s, the last word flushed
    assert (tmp_path / "out.wav").stat().st_size > 22 * 2205 * 2
    # the shutdown flushed the live session: it got its words and `done`, cut short of the clip
    assert live.returncode == 0, (out, err)
    done = [line for line in out.splitlines() if line.startswith("done: ")]
    assert done, out
    heard = float(done[0].split()[1])
    assert 0.5 < heard < 9.0


async def evaluate(page_ws: str, expr: str, until, timeout: float) -> dict:
    """Evaluate `expr` (a JSON string) on a page until `until(value)` or the timeout; the last value."""
    from websockets.asyncio.client import connect

    value: dict = {}
    async with connect(page_ws, max_size=None) as ws:
        deadline = time.monotonic() + timeout
        n = 0
        while time.monotonic() < deadline:
            n += 1
            await ws.send(json.dumps({"id": n, "method": "Runtime.evaluate", "params": {"expression": expr}}))
            while True:
                reply = json.loads(await ws.recv())
                if reply.get("id") == n:
                    break
            raw = reply.get("result", {}).get("result", {}).get("value")
            if raw is not None:
                value = json.loads(raw)
                if until(value):
                    return value
            await asyncio.sleep(0.3)
    return value


async def act_between(devtools_port: int, expr: str, ready, action: str, done, timeout: float) -> tuple[dict, dict]:
    """On the first page: `expr` once `ready(value)`, then run `action`, then `expr` once `done(value)`."""
    page = (await asyncio.to_thread(devtools_pages, devtools_port))[0]["webSocketDebuggerUrl"]
    before = await evaluate(page, expr, ready, timeout)
    await evaluate(page, action, lambda v: True, 5)
    return before, await evaluate(page, expr, done, timeout)


def test_listener_page_hears_a_speaker_page_fake_pipeline():
    """A speaker page (fake microphone) speaks es and pt; a second page listens to pt."""
    require_data(FLEURS)
    import soundfile as sf

    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    expr = """JSON.stringify({session: document.body.dataset.session || '',
        status: document.getElementById('status').textContent,
        target: document.getElementById('target-committed').textContent,
        frames: +document.getElementById('audio-frames').textContent,
        links: document.getElementById('listen-links').textContent,
        reason: document.body.dataset.reason || '', done: document.body.dataset.done === '1'})"""
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "mic.wav"
        data, rate = sf.read(str(FLEURS / "fleurs-en-000.ogg"), dtype="float32")
        sf.write(str(wav), data, rate, subtype="PCM_16")
        server, port = start_server(["--pipeline", "tests.unit.test_server_fakes:make_fake_factory",
                                     "--warm-up", "none"], env)
        browser = None
        try:
            url = f"http://127.0.0.1:{port}/?autostart=1&seconds=6&source=en&target=es,pt"
            browser, devtools = start_chromium(url, wav, Path(tmp) / "profile")


            async def main():
                speaker = (await asyncio.to_thread(devtools_pages, devtools))[0]
                ready = await evaluate(speaker["webSocketDebuggerUrl"], expr, lambda v: v["session"], 40)
                assert ready.get("session"), ready
                listen = f"http://127.0.0.1:{port}/?listen={ready['session']}&target=pt&autostart=1"
                from urllib.parse import quote

                request = urllib.request.Request(f"http://127.0.0.1:{devtools}/json/new?{quote(listen, safe='')}",
                                                 method="PUT")
                page = json.loads(await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=10).read()))
                heard = await evaluate(page["webSocketDebuggerUrl"], expr, lambda v: v["done"] or "error" in v["status"], 40)
                heard["url"] = page.get("url")
                spoke = await evaluate(speaker["webSocketDebuggerUrl"], expr, lambda v: v["done"], 20)
                return ready, heard, spoke

            ready, heard, spoke = asyncio.run(main())
        finally:
            if browser is not None:
                browser.kill()
                browser.wait()
            err = stop_server(server)
    assert "listen in es" in ready["links"] and "listen in pt" in ready["links"]
    assert heard["done"] and heard["reason"] == "speaker_ended", (heard, err[-1500:])
    words = heard["target"].split()
    said = spoke["target"].split()  # the speaker page shows its first target, es: the same fake words
    assert words and words == said[len(said) - len(words):], (heard, spoke)
    assert heard["frames"] == len(words)  # one fake audio frame per word, played


def test_speaker_page_resumes_its_session_fake_pipeline():
    """Mid-talk the page's connection is replaced by a resumed one (as after a network drop):
    the words go on from where they were, none twice, none missing, and the session ends with done."""
    require_data(FLEURS)
    import soundfile as sf

    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    expr = """JSON.stringify({session: document.body.dataset.session || '',
        resumes: +(document.body.dataset.resumes || 0), status: document.getElementById('status').textContent,
        source: document.getElementById('source-committed').textContent,
        target: document.getElementById('target-committed').textContent,
        frames: +document.getElementById('audio-frames').textContent,
        sent: +document.getElementById('sent-seconds').textContent,
        summary: document.getElementById('summary').textContent,
        done: document.body.dataset.done === '1'})"""
    # what a dropped connection leaves behind: a socket the page no longer uses, and a resume 1 s later
    drop = ("(() => { const old = state.ws; old.onclose = null; state.streaming = false; old.close(); "
            "setTimeout(() => connect(true), 1000); return '{}'; })()")
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "mic.wav"
        data, rate = sf.read(str(FLEURS / "fleurs-en-000.ogg"), dtype="float32")
        sf.write(str(wav), data, rate, subtype="PCM_16")
        server, port = start_server(["--pipeline", "tests.unit.test_server_fakes:make_fake_factory",
                                     "--warm-up", "none"], env)
        browser = None
        try:
            url = f"http://127.0.0.1:{port}/?autostart=1&seconds=4&source=en&target=es"
            browser, devtools = start_chromium(url, wav, Path(tmp) / "profile")


            before, after = asyncio.run(act_between(devtools, expr, lambda v: len(v["source"].split()) >= 3, drop,
                                                    lambda v: v["done"] or "error" in v["status"], 40))
        finally:
            if browser is not None:
                browser.kill()
                browser.wait()
            err = stop_server(server)
    assert after["done"] and after["resumes"] == 1 and after["session"] == before["session"], (after, err[-1500:])
    words = after["source"].split()
    assert words == [f"w{i}" for i in range(len(words))] and len(words) >= 7, after  # about 4 s: w0..w7
    assert after["target"].split() == [w.upper() for w in words] and after["frames"] == len(words)
    # every frame the microphone produced reached the server, those around the drop included
    assert abs(json.loads(after["summary"])["audio_in_s"] - after["sent"]) < 0.11, after


def test_page_screenshot_shows_the_page(tmp_path):
    """The page as a user first sees it, rendered by Chromium: a real picture, not a blank one."""
    from matplotlib.image import imread

    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    server, port = start_server(["--warm-up", "none", "--pipeline", "tests.unit.test_server_fakes:make_fake_factory"], env)
    shot = tmp_path / "page.png"
    try:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1100,800",
                        f"--screenshot={shot}", f"http://127.0.0.1:{port}/"],
                       capture_output=True, timeout=120, check=False)
    finally:
        stop_server(server)
    assert shot.is_file(), "chromium wrote no screenshot"
    pixels = imread(str(shot))
    assert pixels.shape[:2] == (800, 1100)
    # text and controls: many distinct shades, and a good share of the page is not background
    grey = pixels[..., :3].mean(axis=2)
    assert len(set((grey * 255).astype(int).ravel().tolist())) > 20
    assert (abs(grey - float(grey.mean())) > 0.05).mean() > 0.01
