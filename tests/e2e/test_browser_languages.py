"""The browser page's language pickers in a real headless Chromium, against `speech serve` with a
fake pipeline that serves a few languages (helpers in test_browser.py)."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request

import pytest

from tests.conftest import REPO
from tests.e2e.test_browser import CHROMIUM, act_between, evaluate, start_chromium, start_server, stop_server

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh --test)")


def test_language_pickers_offer_what_the_server_serves_fake_pipeline(tmp_path):
    """The pickers come from GET /languages: "auto" and two sources, three targets; a target the
    source cannot reach, or the source itself, cannot be chosen; Start without a target says so;
    with "auto" any target can, and the page says which language the server heard."""
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
    server, port = start_server(["--warm-up", "none", "--pipeline",
                                 "tests.unit.test_server_fakes:make_narrow_fake_factory"], env)
    expr = """JSON.stringify({
        sources: [...document.querySelectorAll('#source option')].map((o) => o.value),
        source: document.getElementById('source').value,
        boxes: [...document.querySelectorAll('#targets input')].map((b) => b.value + (b.disabled ? '-' : '')
                                                                       + (b.checked ? '+' : '')),
        target: document.getElementById('target').value,
        language: document.body.dataset.language || '',
        translated: document.getElementById('target-committed').textContent,
        session: document.body.dataset.session || '',
        status: document.getElementById('status').textContent})"""
    pick_spanish = """(() => { const s = document.getElementById('source'); s.value = 'es';
        s.dispatchEvent(new Event('change')); document.getElementById('start').click(); return '{}'; })()"""
    # any language, told by the server: every target can be chosen, and the page says what was heard;
    # Spanish first, then English: the Spanish speaker is translated into English, which the page shows
    pick_auto = """(() => { const s = document.getElementById('source'); s.value = 'auto';
        s.dispatchEvent(new Event('change')); document.querySelector('#targets input[value="es"]').click();
        document.querySelector('#targets input[value="en"]').click();
        document.getElementById('start').click(); return '{}'; })()"""
    import numpy as np
    import soundfile as sf

    tone = tmp_path / "tone.wav"  # the fake recogniser hears words in anything
    sf.write(str(tone), (0.1 * np.sin(np.arange(5 * 16000) * 0.2)).astype(np.float32), 16000)
    browser = None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/languages", timeout=10) as r:
            served = json.loads(r.read())
        browser, devtools = start_chromium(f"http://127.0.0.1:{port}/?source=en&target=pt,es", tone,
                                           tmp_path / "profile")
        first, after = asyncio.run(act_between(devtools, expr, lambda v: v.get("sources") == ["auto", "en", "es"],
                                               pick_spanish, lambda v: "choose" in v.get("status", ""), 30))
        _, told = asyncio.run(act_between(devtools, expr, lambda v: True, pick_auto,
                                          lambda v: v.get("language") == "es" and v.get("translated"), 30))
        # a listener's link: the talk's own source decides, so English stays chosen on an English page
        from urllib.parse import quote

        listen = f"http://127.0.0.1:{port}/?listen=SESSION&target=en"
        request = urllib.request.Request(f"http://127.0.0.1:{devtools}/json/new?{quote(listen, safe='')}", method="PUT")
        page = json.loads(urllib.request.urlopen(request, timeout=10).read())
        listener = asyncio.run(evaluate(page["webSocketDebuggerUrl"], expr, lambda v: len(v.get("boxes", [])) == 3, 30))
        # a listener in the speaker's own language is told there is nothing to translate
        own = f"http://127.0.0.1:{port}/?listen={told['session']}&target=es&autostart=1"
        request = urllib.request.Request(f"http://127.0.0.1:{devtools}/json/new?{quote(own, safe='')}", method="PUT")
        page = json.loads(urllib.request.urlopen(request, timeout=10).read())
        untranslated = asyncio.run(evaluate(page["webSocketDebuggerUrl"], expr,
                                            lambda v: "nothing to translate" in v.get("status", ""), 30))
    finally:
        if browser is not None:
            browser.kill()
            browser.wait()
        err = stop_server(server)
    assert ("speech serve: speech in en, es (or auto: told from the first speech); translated into en, es, pt "
            "(GET /languages)") in err, err[-1500:]
    assert [x["code"] for x in served["sources"]] == ["en", "es"] and served["pairs"]["es"] == ["en"]
    assert served["detect"] is True
    assert first["sources"] == ["auto", "en", "es"] and first["source"] == "en", first
    assert first["boxes"] == ["en-", "es+", "pt+"] and first["target"] == "pt,es", first  # in the order asked
    # Spanish speech reaches English only: Spanish and Portuguese drop out, nothing is chosen
    assert after["boxes"] == ["en", "es-", "pt-"] and after["target"] == "", after
    assert after["status"] == "choose a language to translate into", after
    assert listener["boxes"] == ["en+", "es", "pt"] and listener["target"] == "en", listener
    assert told["source"] == "auto" and told["boxes"] == ["en+", "es+", "pt"] and told["target"] == "es,en", told
    assert told["translated"].split()[0].isupper(), told  # the fake translator's English branch
    assert untranslated["status"] == "the speaker speaks Spanish, the language you chose: nothing to translate"
    assert untranslated["translated"] == "", untranslated
    assert told["status"] == "listening: the speaker speaks Spanish (told from 4 s of speech)", told
