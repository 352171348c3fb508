"""What `GET /languages` says a session can take: the installed translation graph, narrowed by
the operator's fixed path or engine and by an English-only recogniser."""

from __future__ import annotations

import pytest

from speech.pipeline import PipelineConfig
from speech.languages import served_languages
from speech.translate.graph import Edge, reachable


def codes(listed):
    return [x["code"] for x in listed]


def test_reachable_follows_paths_of_at_most_the_hops_given():
    edges = [Edge("x", "en", "pt"), Edge("y", "pt", "es"), Edge("y", "es", "ca"), Edge("y", "ca", "gl"),
             Edge("y", "es", "en")]
    assert reachable(edges, "en") == {"pt", "es", "ca"}  # gl is 4 hops away
    assert reachable(edges, "en", max_hops=1) == {"pt"}
    assert reachable(edges, "es") == {"ca", "gl", "en", "pt"} and reachable(edges, "ro") == set()


@pytest.fixture(scope="module")
def registry():
    from speech.backends import default_registry

    return default_registry()


def needs_engines(registry):
    from speech.translate.graph import installed_edges

    engines = {e.engine for e in installed_edges(registry)}
    if not {"apertium", "bergamot"} <= engines:
        pytest.skip("Apertium and Bergamot are not installed (scripts/setup.sh)")


def test_the_default_graph_serves_every_source_and_target_and_each_sources_own_targets(registry):
    needs_engines(registry)
    served = served_languages(registry, PipelineConfig())
    assert codes(served["sources"])[:3] == ["en", "es", "pt"] and "ro" in codes(served["sources"])
    assert "ro" not in codes(served["targets"])  # Debian has ro->es only
    assert {"es", "pt", "fr", "it", "ca", "gl"} <= set(served["pairs"]["en"]) and "en" not in served["pairs"]["en"]
    assert served["pairs"]["ro"] and all(x["name"] for x in served["sources"] + served["targets"])
    assert served["detect"] is True  # whisper-base can tell the language: a session may ask for "auto"


def test_an_english_only_recogniser_serves_english_speech_only(registry):
    needs_engines(registry)
    served = served_languages(registry, PipelineConfig(asr_model="whisper-tiny.en"))
    assert codes(served["sources"]) == ["en"] and list(served["pairs"]) == ["en"] and served["detect"] is False
    assert "it" in codes(served["targets"])  # through pivots, as for any recogniser


def test_a_fixed_path_or_engine_serves_its_own_pairs(registry):
    needs_engines(registry)
    path = served_languages(registry, PipelineConfig(mt_backend="bergamot:en-pt,apertium:pt-es"))
    assert path["pairs"] == {"en": ["es"]} and path["detect"] is False  # one source: nothing to tell
    engine = served_languages(registry, PipelineConfig(mt_backend="bergamot"))
    assert engine["pairs"] == {"en": ["pt"], "pt": ["en"]}
