"""Table-driven tests of the commit policies' options (clause boundary, wait-k floor) and of the
edit-distance alignment of a re-translation to the committed words."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech.translate.hypothesis import Hypothesis
from speech.eval.erasure import erased_words as erasure
from speech.translate.nmt import RetranslationStream, continuation, continuation_edit
from speech.translate.policy import LocalAgreement, LocalAgreementConfig, WaitK, WaitKConfig
from speech.translate.segment import ends_clause
from speech.translate.simulate import translate_stream
from speech.translate.simultaneous import SimultaneousTranslation


def hyp(text: str, stable: int | None = None) -> Hypothesis:
    words = text.split()
    return Hypothesis(words, len(words) if stable is None else stable)


# (config, [(committed, hypothesis, stable, source words so far)], expected commit after each)
POLICY_CASES = [
    # LA-2: nothing before two hypotheses, then their common prefix.
    (LocalAgreementConfig(), [(0, "A B", 2, "a"), (0, "A C", 2, "a b")], [0, 1]),
    # LA-2 ignores a clause boundary unless boundary_n is set.
    (LocalAgreementConfig(), [(0, "A B", 2, "a,")], [0]),
    # boundary_n=1: at a source comma the stable hypothesis alone is enough ...
    (LocalAgreementConfig(boundary_n=1), [(0, "A B", 2, "a,")], [2]),
    # ... but not elsewhere.
    (LocalAgreementConfig(boundary_n=1), [(0, "A B", 2, "a")], [0]),
    # ... and never beyond the stable words.
    (LocalAgreementConfig(boundary_n=1), [(0, "A B C", 1, "a b;")], [1]),
    # Semicolon and colon (also before a closing quote) are boundaries.
    (LocalAgreementConfig(boundary_n=1), [(0, "A", 1, 'x "a:"')], [1]),
    # A wait-k floor commits source - k + 1 stable words without agreement.
    (LocalAgreementConfig(k=2), [(0, "A B C", 3, "a"), (0, "X Y Z", 3, "a b c")], [0, 2]),
    # The floor never lowers what agreement gives, and never exceeds the stable words.
    (LocalAgreementConfig(k=2), [(0, "A B C D", 4, "a"), (0, "A B C D", 2, "a b c d e f")], [0, 2]),
    # ratio: the floor allows ratio target words per source word past k (2 * 1.5 = 3 here) ...
    (LocalAgreementConfig(k=2, ratio=1.5), [(0, "A B C D E F", 6, "a b c")], [3]),
    (LocalAgreementConfig(k=2), [(0, "A B C D E F", 6, "a b c")], [2]),
    # ... rounded down, still never past the stable words ...
    (LocalAgreementConfig(k=2, ratio=1.2), [(0, "A B C D", 4, "a b c"), (0, "A B C D", 3, "a b c d e f")], [2, 3]),
    # ... and no floor before k source words (ratio never turns a negative allowance positive).
    (LocalAgreementConfig(k=3, ratio=2.0), [(0, "A B", 2, "a")], [0]),
    # Committed words stay committed whatever a policy computes.
    (LocalAgreementConfig(), [(3, "A B C D", 4, "a b"), (3, "A B C E", 4, "a b c")], [3, 3]),
    (WaitKConfig(k=2), [(0, "A B C", 3, "a"), (0, "A B C", 3, "a b c")], [0, 2]),
]


# (config, [(committed, hypothesis, stable, look-ahead hypothesis or None)], expected commit after each)
LOOKAHEAD_CASES = [
    # The look-ahead agrees on "A B C": all but the last shared word are committed at once,
    # without a second hypothesis of the committed source.
    (LocalAgreementConfig(lookahead=True), [(0, "A B C D", 4, "A B C X Y")], [2]),
    # lookahead_hold=0 commits the whole shared prefix, 2 holds two words back.
    (LocalAgreementConfig(lookahead=True, lookahead_hold=0), [(0, "A B C D", 4, "A B C X Y")], [3]),
    (LocalAgreementConfig(lookahead=True, lookahead_hold=2), [(0, "A B C D", 4, "A B C X Y")], [1]),
    # Never past the stable words of the hypothesis itself, nor of the look-ahead.
    (LocalAgreementConfig(lookahead=True, lookahead_hold=0), [(0, "A B C D", 2, "A B C D E")], [2]),
    (LocalAgreementConfig(lookahead=True, lookahead_hold=0), [(0, "A B C D", 4, "A B C D E")], [4]),
    (LocalAgreementConfig(lookahead=True, lookahead_hold=0), [(0, "A B C D", 4, hyp("A B C D E", 1))], [1]),
    # No look-ahead (the recogniser had no tentative words): LA-2 as before.
    (LocalAgreementConfig(lookahead=True), [(0, "A B", 2, None), (0, "A C", 2, None)], [0, 1]),
    # Committed words stand whatever the look-ahead says.
    (LocalAgreementConfig(lookahead=True), [(3, "A B C D", 4, "X Y Z W V")], [3]),
    # Without the option a look-ahead handed in anyway counts for nothing.
    (LocalAgreementConfig(), [(0, "A B C D", 4, "A B C X Y")], [0]),
]


@pytest.mark.parametrize("config,steps,expected", LOOKAHEAD_CASES)
def test_lookahead_table(config, steps, expected):
    policy = LocalAgreement(config)
    got = []
    for committed, text, stable, ahead in steps:
        ahead = hyp(ahead) if isinstance(ahead, str) else ahead
        if not config.lookahead:
            assert policy.lookahead is False
        got.append(policy.commit(committed, hyp(text, stable), 3, source=["a", "b", "c"],
                                 ahead=ahead if config.lookahead else None))
    assert got == expected


def test_lookahead_commits_one_update_sooner_and_never_shows_tentative_words():
    """The translator asks for a look-ahead only when the recogniser has tentative words, cuts it
    at the first sentence end, and commits only words of the committed source's hypothesis."""
    from speech.types import TextUpdate, Word

    seen: list[str] = []

    class Echo:
        def translate(self, text, source, target):
            seen.append(text)
            return text.upper()

    def run(config):
        seen.clear()
        tr = SimultaneousTranslation(RetranslationStream(Echo(), "en", "es", mask=0, boundary_mask=0),
                                     LocalAgreement(config), language="es")
        words = [Word(w, 0.1 * i, 0.1 * i + 0.1) for i, w in enumerate("one two three".split())]
        tentative = tuple(Word(w) for w in "four five. six".split())
        return tr.update(TextUpdate(tuple(words), tentative, source_time=1.0))

    plain = run(LocalAgreementConfig())
    assert plain.committed == () and seen == ["one two three"]
    ahead = run(LocalAgreementConfig(lookahead=True))
    assert [w.text for w in ahead.committed] == ["ONE", "TWO"]
    assert seen == ["one two three", "one two three four five."]  # cut after "five."
    assert all(w.text not in ("FOUR", "FIVE.") for w in ahead.committed + ahead.tentative)


@pytest.mark.parametrize("config,steps,expected", POLICY_CASES)
def test_policy_table(config, steps, expected):
    policy = LocalAgreement(config) if isinstance(config, LocalAgreementConfig) else WaitK(config)
    got = []
    for committed, text, stable, source in steps:
        src = source.split()
        got.append(policy.commit(committed, hyp(text, stable), len(src), source=src))
    assert got == expected


@pytest.mark.parametrize("word,boundary", [
    ("word,", True), ("word;", True), ("word:", True), ('said,"', True), ("word", False),
    ("end.", False), ("3,5", False),
])
def test_ends_clause(word, boundary):
    assert ends_clause(word) is boundary


# (committed, fresh translation, continuation by edit distance)
ALIGN_CASES = [
    ("", "The cat sleeps.", "The cat sleeps."),
    ("The cat", "The cat sleeps.", "sleeps."),
    # Case and punctuation do not matter for matching.
    ("the cat,", "The cat sleeps.", "sleeps."),
    # A reworded first word: the content it stood for follows rather than being dropped.
    ("The", "Researchers who formed it.", "Researchers who formed it."),
    ("At the beginning of", "Earlier this week, a police helicopter crashed.", "Earlier this week, a police helicopter crashed."),
    # An inserted word inside the committed span: a tie, resolved to the earliest cut (a repeated
    # word rather than a lost one).
    ("The hospital followed the protocol", "The hospital followed the infection protocol for all.", "infection protocol for all."),
    ("The hospital followed the protocol", "The hospital followed the protocol strictly.", "strictly."),
    # A committed word the new translation dropped.
    ("He said that the", "He said the minister resigned.", "minister resigned."),
]


@pytest.mark.parametrize("committed,out,expected", ALIGN_CASES)
def test_continuation_edit_table(committed, out, expected):
    assert continuation_edit(committed.split(), out.split()) == expected.split()


def test_edit_alignment_keeps_content_the_anchor_alignment_drops():
    committed, out = ["The"], "Researchers who formed it.".split()
    assert "Researchers" not in continuation(committed, out)  # by position: dropped
    assert continuation_edit(committed, out)[0] == "Researchers"


class ScriptedEngine:
    """Stands in for the Bergamot engine: a fixed translation per source prefix."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    def translate(self, text: str, source: str, target: str) -> str:
        return self.table[text]


def test_bergamot_boundary_mask_applies_only_after_a_clause_end():
    engine = ScriptedEngine({"a b,": "A B,", "a b": "A B."})
    stream = RetranslationStream(engine, "pt", "en", mask=2, boundary_mask=0)
    assert stream.hypothesis(["a", "b,"], [], complete=False).stable == 2
    assert stream.hypothesis(["a", "b"], [], complete=False).stable == 0
    assert stream.hypothesis(["a", "b"], [], complete=True).stable == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c,", "d;", "e"]), min_size=1, max_size=30),
       st.sampled_from([LocalAgreementConfig(boundary_n=1), LocalAgreementConfig(k=2),
                        LocalAgreementConfig(n=1, boundary_n=1, k=3),
                        LocalAgreementConfig(boundary_n=1, k=2, ratio=1.3)]),
       st.lists(st.sampled_from(["P", "Q Q", "R S T"]), min_size=1, max_size=3))
def test_new_policy_options_never_retract_committed_words(words, config, flaps):
    """Re-translation whose guesses flap, aligned by edit distance: commits only ever grow."""
    calls = {"n": 0}

    class Flapping:
        def translate(self, text, source, target):
            calls["n"] += 1
            return text.upper() + " " + flaps[calls["n"] % len(flaps)]

    stream = RetranslationStream(Flapping(), "pt", "en", mask=1, boundary_mask=0)
    tr = SimultaneousTranslation(stream, LocalAgreement(config), language="en")
    run = translate_stream(tr, words)
    for prev, cur in zip(run.trace.committed, run.trace.committed[1:]):
        assert cur[: len(prev)] == prev
    assert erasure(run.trace.committed) == 0
    assert all(run.target[: len(c)] == c for c in run.trace.committed)


def test_default_policy_gets_the_backends_measured_options(monkeypatch):
    from speech.backends import default_registry
    from speech.translate import backends
    from speech.translate.stage import open_translation

    # The re-translation engines look ahead by default, the LLM does not (each look-ahead re-decodes).
    assert open_translation(default_registry(), "en", "pt", "bergamot", "default").policy.config.lookahead
    assert open_translation(default_registry(), "en", "es", "apertium", "default").policy.config.lookahead
    assert not backends.default_policy_options("gemma-270m").get("lookahead")
    monkeypatch.setitem(backends.DEFAULT_POLICY_OPTIONS, "bergamot", {"boundary_n": 1, "k": 5})
    tr = open_translation(default_registry(), "en", "pt", "bergamot", "default")
    assert tr.policy.config == LocalAgreementConfig(n=2, boundary_n=1, k=5)
    # An explicit option overrides the measured default; a named policy gets only its own defaults.
    tr = open_translation(default_registry(), "en", "pt", "bergamot", "default", policy_options={"k": 0})
    assert tr.policy.config.k == 0 and tr.policy.config.boundary_n == 1
    tr = open_translation(default_registry(), "en", "pt", "bergamot", "local-agreement")
    assert tr.policy.config == LocalAgreementConfig()


def test_apertium_default_floor_commits_through_a_reworded_sentence_start():
    """A translation whose first word changes on every update (para / en / para ...): agreement
    alone commits nothing before the sentence ends; Apertium's measured wait-5 floor commits once
    five source words are read, and never retracts."""
    from speech.translate import backends

    calls = {"n": 0}

    class Rewording:
        def translate(self, text, source, target):
            calls["n"] += 1
            return ("PARA " if calls["n"] % 2 else "EN ") + text.upper()

    def committed_before_the_end(options):
        calls["n"] = 0
        stream = RetranslationStream(Rewording(), "en", "es", mask=0, boundary_mask=0)
        tr = SimultaneousTranslation(stream, LocalAgreement(LocalAgreementConfig(**options)), language="es")
        run = translate_stream(tr, "to foreigners after a glowing account of its splendour".split())
        for prev, cur in zip(run.trace.committed, run.trace.committed[1:]):
            assert cur[: len(prev)] == prev
        return max((len(c) for c in run.trace.committed[:-1]), default=0)

    options = backends.default_policy_options("apertium")
    assert options["k"] == 5
    assert committed_before_the_end({**options, "k": 0}) == 0
    assert committed_before_the_end(options) >= 3


@pytest.mark.parametrize("options", [{"ratio": 0.0}, {"ratio": -1.0}, {"k": -1}, {"n": 0}, {"lookahead_hold": -1}])
def test_local_agreement_rejects_bad_options(options):
    from speech.backends import default_registry

    with pytest.raises(ValueError):
        default_registry().create("mt-policy", "local-agreement", **options)
