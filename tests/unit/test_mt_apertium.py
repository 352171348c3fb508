"""The Apertium backend without Apertium: output cleaning, mode discovery, the process wrapper
(a bash stand-in for the pipeline), the shared re-translation stream and the default fallback."""

from __future__ import annotations

import shutil
import subprocess

import time

import pytest

from speech.errors import UserError
from speech.translate import apertium, backends
from speech.translate.apertium import (ApertiumConfig, ApertiumProcess, ApertiumTranslator, clean,
                                       detach_final_stop, discover_modes, escape, missing_pair_error, parse_modes,
                                       reattach_final_stop, retag)
from speech.translate.hypothesis import EngineFailed
from speech.translate.nmt import RetranslationStream


def test_clean_strips_unknown_word_marks_and_blanks():
    raw = "Los investigadores quién formó  dijo *xyzzyq #comer @blorf era malo[][\n] "
    assert clean(raw) == "Los investigadores quién formó dijo xyzzyq comer blorf era malo"
    assert clean(raw, keep_marks=True).split()[5:8] == ["*xyzzyq", "#comer", "@blorf"]


def test_clean_undoes_escapes_but_keeps_escaped_mark_characters():
    # Reserved characters come back escaped; an escaped @ is the text's own, not a mark.
    assert clean(r"El \$5 precio \[x\] \@ana \\ a\/b") == r"El $5 precio [x] @ana \ a/b"


def test_escape_folds_whitespace_and_escapes_reserved_characters():
    assert escape("a\nb\0 c") == "a b c"
    assert escape("$5 [x] {y} <z> ^w a/b @c \\") == r"\$5 \[x\] \{y\} \<z\> \^w a\/b \@c \\"
    assert escape(" \n ") == ""


def _modes(tmp_path, *names):
    folder = tmp_path / "modes"
    folder.mkdir()
    for name in names:
        (folder / f"{name}.mode").write_text("cat\n")
    return tmp_path


def test_discover_modes_maps_both_naming_styles_and_skips_variants(tmp_path):
    data = _modes(tmp_path, "eng-spa", "spa-eng", "spa-eng_US", "es-pt", "es-pt_BR", "pt-es", "fr-es",
                  "eco-es-fr", "eng-spa-tagger", "oci-cat", "es-es")
    assert discover_modes(data) == {("en", "es"): "eng-spa", ("es", "en"): "spa-eng", ("es", "pt"): "es-pt",
                                    ("pt", "es"): "pt-es", ("fr", "es"): "fr-es"}
    assert discover_modes(tmp_path / "nowhere") == {}


def test_translator_prefers_installed_variant_and_takes_overrides(tmp_path):
    data = _modes(tmp_path, "es-pt", "es-pt_BR", "spa-eng", "spa-eng_US")
    t = ApertiumTranslator(ApertiumConfig(datadir=str(data)))
    assert t.modes[("es", "pt")] == "es-pt_BR"  # FLORES' Portuguese is Brazilian
    assert t.modes[("es", "en")] == "spa-eng"
    t = ApertiumTranslator(ApertiumConfig(datadir=str(data), modes="es-en=spa-eng_US, es-pt=es-pt"))
    assert t.modes[("es", "en")] == "spa-eng_US" and t.modes[("es", "pt")] == "es-pt"
    with pytest.raises(UserError, match="es-pt=es-pt_BR"):
        parse_modes("spanish=x")


def test_missing_pair_names_the_debian_package_and_the_installed_pairs(tmp_path):
    t = ApertiumTranslator(ApertiumConfig(datadir=str(_modes(tmp_path, "eng-spa"))))
    with pytest.raises(UserError, match=r"pt-es.*apt-get install apertium-es-pt.*installed: en-es"):
        t.open("pt", "es")
    with pytest.raises(UserError, match="Debian has no Apertium package for en-de"):
        t.open("en", "de")
    assert "installed: none" in str(missing_pair_error("en", "es", {}))


def test_missing_programs_give_a_clear_error(monkeypatch):
    monkeypatch.setattr(apertium.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="apt-get install apertium"):
        apertium.load_apertium(ApertiumConfig(), None)
    assert not apertium.has_pair("en", "es")


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="mask"):
        apertium.load_apertium(ApertiumConfig(mask=-1), None)
    with pytest.raises(ValueError, match="align"):
        apertium.load_apertium(ApertiumConfig(align="x"), None)


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="the stand-in pipelines are bash scripts")
# A stand-in pipeline: answers each NUL-terminated request in upper case, NUL-terminated.
UPPER = r"""while IFS= read -r -d '' x; do printf '%s\0' "${x^^}"; done"""


@needs_bash
def test_process_answers_each_request_and_keeps_running(tmp_path):
    proc = ApertiumProcess(tmp_path / "x.mode", script=UPPER)
    try:
        assert proc.translate("hola *mundo") == "HOLA MUNDO"
        pid = proc._proc.pid
        assert proc.translate("dos") == "DOS"
        assert proc._proc.pid == pid and proc.restarts == 0  # one persistent process
        assert proc.translate("  ") == ""
    finally:
        proc.close()
    assert proc._proc is None


@needs_bash
def test_retag_replaces_the_taggers_choice_in_every_case_before_transfer():
    script = retag("lt-proc -z -a x.bin | apertium-tagger -z -g $2 y.prob | apertium-pretransfer -z | cat",
                   (("parir<vblex><prs><p3><sg>", "para<pr>"),))
    stages = script.split(" | ")
    assert stages[1].startswith("apertium-tagger") and stages[2].startswith("sed -u -z") and stages[3].startswith("apertium-pretransfer")
    tagged = ("^Parir<vblex><prs><p3><sg>$ ^el<det><def><m><sg>$ ^PARIR<vblex><prs><p3><sg>$ "
              "^parir<vblex><prs><p3><sg>$ ^parir<vblex><ifi><p3><sg>$ ^reparir<vblex><prs><p3><sg>$\0")
    out = subprocess.run(["bash", "-c", stages[2]], input=tagged.encode(), capture_output=True, check=True).stdout
    assert out.decode() == ("^Para<pr>$ ^el<det><def><m><sg>$ ^PARA<pr>$ "
                            "^para<pr>$ ^parir<vblex><ifi><p3><sg>$ ^reparir<vblex><prs><p3><sg>$\0")
    assert retag("a | apertium-tagger | b", ()) == "a | apertium-tagger | b"
    with pytest.raises(ValueError, match="lemma and its tags"):
        retag("a | apertium-tagger | b", (("x'; rm -rf /; '", "para<pr>"),))
    with pytest.raises(ValueError, match="no tagger"):
        retag("lt-proc -z -a x.bin", (("parir<vblex>", "para<pr>"),))


@needs_bash
def test_a_final_stop_reaches_the_pipeline_set_apart_and_comes_back_on_the_word(tmp_path):
    # The stand-in echoes what it received (plus the trailing blank every request ends with).
    proc = ApertiumProcess(tmp_path / "x.mode", script=r"""while IFS= read -r -d '' x; do printf '%s\0' "$x"; done""")
    try:
        assert proc._call(detach_final_stop(escape("ella va dir."))[0]) == "ella va dir . "
        assert proc.translate("ella va dir.") == "ella va dir."
        assert proc.translate("3.5 km. Dr.") == "3.5 km. Dr."
        assert proc.translate("no stop") == "no stop"
        assert proc.translate("a question?") == "a question?"
    finally:
        proc.close()


def test_final_stop_helpers():
    assert detach_final_stop("ella va dir.") == ("ella va dir .", True)
    assert detach_final_stop("the end...") == ("the end...", False)  # an ellipsis is no full stop
    assert detach_final_stop("fin") == ("fin", False)
    assert reattach_final_stop("ella dijo .", True) == "ella dijo."
    assert reattach_final_stop("ella dijo .", False) == "ella dijo ."
    assert reattach_final_stop("ella dijo", True) == "ella dijo"  # the engine dropped it: left as is


@needs_bash
def test_process_restarts_once_after_dying(tmp_path):
    # Answers one request, then exits: the next call finds it dead and starts a fresh one.
    once = r"""IFS= read -r -d '' x; printf '%s\0' "${x^^}"; exit 0"""
    proc = ApertiumProcess(tmp_path / "x.mode", script=once)
    try:
        assert proc.translate("a") == "A"
        assert proc.translate("b") == "B"
        assert proc.translate("c") == "C"
    finally:
        proc.close()


@needs_bash
def test_a_pipeline_that_flushed_out_of_turn_is_restarted(tmp_path):
    # A program killed mid-pipeline: the ones after it flush a NUL at end of file while bash lives
    # on. That NUL must not be read as the next answer (an empty translation).
    broken = r"""IFS= read -r -d '' x; printf '%s\0' "${x^^}"; sleep 0.2; printf '\0'; exec cat >/dev/null"""
    proc = ApertiumProcess(tmp_path / "x.mode", script=broken)
    try:
        assert proc.translate("a") == "A"
        time.sleep(1.0)  # the stray NUL is written
        first = proc.pid
        assert proc.translate("b") == "B" and proc.restarts == 1 and proc.pid != first
    finally:
        proc.close()
    assert proc.pid is None


@needs_bash
def test_an_empty_answer_is_a_failure(tmp_path):
    silent = r"""while IFS= read -r -d '' x; do printf '\0'; done"""
    proc = ApertiumProcess(tmp_path / "x.mode", script=silent)
    with pytest.raises(EngineFailed, match="answered nothing"):
        proc.translate("hello")
    assert proc.restarts == 1


@needs_bash
def test_a_translation_with_no_words_is_not_a_failure(tmp_path):
    # Spanish "Se" alone has no English words: the live pipeline answers nothing, then the probe.
    drops_se = r"""while IFS= read -r -d '' x; do [ "$x" = "se " ] && printf '\0' || printf '%s\0' "${x^^}"; done"""
    proc = ApertiumProcess(tmp_path / "x.mode", script=drops_se)
    try:
        assert proc.translate("se") == ""
        pid = proc._proc.pid
        assert proc.translate("se dice") == "SE DICE"
        assert proc.restarts == 0 and proc._proc.pid == pid
    finally:
        proc.close()


@needs_bash
def test_process_that_keeps_failing_raises_with_its_stderr(tmp_path):
    dead = "echo 'lt-proc: cannot open file' >&2; exit 3"
    proc = ApertiumProcess(tmp_path / "eng-spa.mode", script=dead)
    with pytest.raises(EngineFailed, match="eng-spa.*cannot open file"):  # a named error, after one restart
        proc.translate("hello")
    assert proc.restarts == 1


@needs_bash
def test_process_that_hangs_times_out(tmp_path):
    proc = ApertiumProcess(tmp_path / "x.mode", timeout_s=0.3, script="sleep 30")
    with pytest.raises(RuntimeError, match="no answer"):
        proc.translate("hello")


class Table:
    def __init__(self, table):
        self.table = table
        self.mask, self.boundary_mask, self.align = None, None, "edit"

    def translate(self, text, source, target):
        return self.table[text]


def test_retranslation_stream_serves_any_engine():
    stream = RetranslationStream(Table({"a b": "X Y Z"}), "en", "es", mask=0, boundary_mask=0)
    hyp = stream.hypothesis(["a", "b"], ["X"], complete=False)
    assert hyp.words == ["X", "Y", "Z"] and hyp.stable == 3
    stream.mask = 2
    assert stream.hypothesis(["a", "b"], ["X"], complete=False).stable == 1  # never below committed


def test_apertium_streams_get_the_per_pair_mask(tmp_path, monkeypatch):
    t = ApertiumTranslator(ApertiumConfig(datadir=str(_modes(tmp_path, "eng-spa"))))
    monkeypatch.setattr(t, "process", lambda s, g: None)
    monkeypatch.setitem(apertium.DEFAULT_MASK, ("en", "es"), 2)
    assert t.open("en", "es").mask == 2
    t = ApertiumTranslator(ApertiumConfig(datadir=str(tmp_path), mask=1, boundary_mask=0))
    monkeypatch.setattr(t, "process", lambda s, g: None)
    stream = t.open("en", "es")
    assert (stream.mask, stream.boundary_mask) == (1, 0)


def test_default_backend_falls_back_without_the_debian_pairs(monkeypatch):
    # Without any Apertium mode the measured chains through Apertium are skipped: en-es falls back to
    # the best row left (Gemma), en-pt keeps Bergamot.
    monkeypatch.setattr(apertium, "installed_pairs", lambda name, options: ())
    assert backends.default_backend("en", "es") == "gemma-270m"
    assert backends.default_backend("en", "pt") == "bergamot"  # Bergamot stays for en<->pt
    assert backends.default_policy_options("apertium") == {"boundary_n": 1, "lookahead": True, "lookahead_hold": 0, "k": 5}
