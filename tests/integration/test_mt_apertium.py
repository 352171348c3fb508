"""The Apertium backend on Debian's real programs (skipped where `apertium` or a pair is missing)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from speech.backends import default_registry
from speech.errors import UserError
from speech.translate.apertium import discover_modes
from speech.eval.erasure import erased_words as erasure
from speech.translate.policy import LocalAgreement, LocalAgreementConfig
from speech.translate.simulate import translate_stream
from speech.translate.simultaneous import SimultaneousTranslation


def need(source: str, target: str) -> None:
    if shutil.which("apertium-wblank-mode") is None:
        pytest.skip("Debian's apertium is not installed (apt-get install apertium apertium-eng-spa)")
    if (source, target) not in discover_modes():
        pytest.skip(f"no Apertium mode for {source}-{target} installed (see scripts/setup.sh)")


@pytest.fixture(scope="module")
def registry():
    return default_registry()


def test_known_sentence_translates_into_spanish_and_fast(registry):
    need("en", "es")
    t = registry.create("translator", "apertium")
    assert t.translate("The black cat is sleeping in the house.", "en", "es") == "El gato negro está durmiendo en la casa."
    assert t.translate("I want to eat an apple", "en", "es") == "Quiero comer una manzana"
    # Unknown words come back bare (no `*` mark); one persistent pipeline, milliseconds a call.
    out = t.translate("The researchers said xyzzyq was bad", "en", "es")
    assert "xyzzyq" in out.split() and "*" not in out
    proc = t.process("en", "es")
    pid = proc._proc.pid
    start = time.perf_counter()
    for i in range(20):
        t.translate(f"The dog number {i} runs in the park", "en", "es")
    assert (time.perf_counter() - start) / 20 < 0.1  # a pipeline start costs 0.2-0.5 s
    assert proc._proc.pid == pid


def test_a_sentence_ending_on_a_word_that_is_also_an_abbreviation_is_translated(registry):
    # Catalan "dir." is also an abbreviation (director): with the stop glued to it the analyser
    # took it for one, and "she said" reached Spanish untranslated, through en->pt->ca->es too.
    need("ca", "es")
    t = registry.create("translator", "apertium")
    assert t.translate("Ella va dir.", "ca", "es") == "Ella dijo."
    assert t.translate("L'oficina va dir que no.", "ca", "es") == "La oficina dijo que no."


def test_spanish_para_reaches_italian_as_a_preposition(registry):
    # Debian's spa-ita tagger took "para" for "parir" (to give birth): "Partorisca il nord".
    need("es", "it")
    t = registry.create("translator", "apertium")
    assert t.translate("Para el norte.", "es", "it") == "Per il nord."
    assert t.translate("Lo hizo para los niños.", "es", "it") == "Lo fece per i bambini."
    assert "partori" not in t.translate("PARA TODOS, para siempre.", "es", "it").lower()


def test_a_first_word_with_no_translation_does_not_end_the_stream(registry):
    # Spanish "Se" alone has no English words: the pipeline answers nothing and is still alive.
    need("es", "en")
    engine = registry.create("translator", "apertium")
    assert engine.translate("Se", "es", "en") == ""
    proc = engine.process("es", "en")
    pid, restarts = proc.pid, proc.restarts
    tr = SimultaneousTranslation(engine.open("es", "en"), LocalAgreement(LocalAgreementConfig(n=1)), language="en")
    run = translate_stream(tr, "Se dice que el gato negro duerme en la casa.".split())
    assert "cat" in " ".join(run.target) and proc.pid == pid and proc.restarts == restarts


def test_streaming_never_retracts_committed_words(registry):
    need("en", "es")
    engine = registry.create("translator", "apertium", mask=0)
    words = ("On Monday, scientists from the Stanford University School of Medicine announced the "
             "invention of a new diagnostic tool that can sort cells by type.").split()
    tr = SimultaneousTranslation(engine.open("en", "es"), LocalAgreement(LocalAgreementConfig(n=1)), language="es")
    run = translate_stream(tr, words)
    for prev, cur in zip(run.trace.committed, run.trace.committed[1:]):
        assert cur[: len(prev)] == prev
    assert erasure(run.trace.committed) == 0
    text = " ".join(run.target).lower()
    assert "lunes" in text and "científicos" in text
    # Something was committed before the source ended (it is simultaneous, not sentence by sentence).
    assert any(run.trace.committed[i] for i in range(len(words) - 1))


def test_missing_pair_is_a_clear_error(registry):
    need("en", "es")
    engine = registry.create("translator", "apertium")
    with pytest.raises(UserError, match=r"en-de.*installed: .*en-es"):
        engine.open("en", "de")


def test_dead_pipeline_is_restarted(registry):
    need("en", "es")
    t = registry.create("translator", "apertium", timeout_s=5.0)  # its own pipelines (other key)
    proc = t.process("en", "es")
    assert t.translate("The house.", "en", "es") == "La casa."
    os.killpg(proc._proc.pid, 9)
    proc._proc.wait()
    assert t.translate("The house.", "en", "es") == "La casa."
    assert proc.restarts <= 1
    proc.close()
    assert proc._proc is None


def test_translate_text_cli_with_apertium(tmp_path):
    need("en", "es")
    src = tmp_path / "in.txt"
    src.write_text("The house is very old. I want to eat an apple.", encoding="utf-8")
    speech = Path(sys.executable).with_name("speech")
    out = subprocess.run([str(speech), "translate-text", str(src), "--source", "en", "--target", "es",
                          "--backend", "apertium", "--final-only"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    assert out.returncode == 0, out.stderr
    words = out.stdout.lower().split()
    assert {"casa", "vieja.", "comer", "manzana."} <= set(words), out.stdout
