"""Commit policies, table-driven on scripted hypotheses (no model)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech.asr.policies import LocalAgreement, StableCommit, agreed_prefix
from speech.types import Word


def words(spec: str) -> list[Word]:
    """'a:0.5 b:1.0' -> words ending at those times, probability 0.9 (suffix '?' = 0.2, '~' = 0.4)."""
    out = []
    for item in spec.split():
        text, _, end = item.partition(":")
        p = 0.2 if text.endswith("?") else 0.4 if text.endswith("~") else 0.9
        text = text.rstrip("?~")
        e = float(end) if end else None
        out.append(Word(text, None if e is None else e - 0.2, e, p))
    return out


def texts(ws: list[Word]) -> str:
    return " ".join(w.text for w in ws)


def drive(policy, script: list[tuple[str, float]]) -> list[tuple[str, str]]:
    """Feed (uncommitted hypothesis, now) steps; a step's hypothesis excludes what was committed."""
    out = []
    for spec, now in script:
        committed, tentative = policy.update(words(spec), now)
        out.append((texts(committed), texts(tentative)))
    return out


LA2_CASES = [
    # name, steps [(hypothesis of uncommitted words, now)], expected [(committed, tentative)]
    ("first hypothesis commits nothing", [("hello world", 1.0)], [("", "hello world")]),
    ("agreement commits the common prefix",
     [("hello world", 1.0), ("hello word again", 2.0)], [("", "hello world"), ("hello", "word again")]),
    ("case and punctuation do not block agreement",
     [("Hello, world", 1.0), ("hello world.", 2.0)], [("", "Hello, world"), ("hello world.", "")]),
    ("a changed first word commits nothing",
     [("a b c", 1.0), ("x b c", 2.0)], [("", "a b c"), ("", "x b c")]),
    ("committed words are stripped from the history",
     [("a b", 1.0), ("a b c", 2.0), ("c d", 3.0)], [("", "a b"), ("a b", "c"), ("c", "d")]),
]


@pytest.mark.parametrize("name,script,expected", LA2_CASES, ids=[c[0] for c in LA2_CASES])
def test_local_agreement_2(name, script, expected):
    assert drive(LocalAgreement(2), script) == expected


def test_local_agreement_3_needs_three_votes():
    got = drive(LocalAgreement(3), [("a b", 1.0), ("a b", 2.0), ("a c", 3.0)])
    assert got == [("", "a b"), ("", "a b"), ("a", "c")]


STABLE_CASES = [
    ("a settled confident word commits on first sight",
     [("a:0.3 b:0.9", 1.0)], [("a", "b")]),
    ("a word within the margin waits", [("a:0.6", 1.0)], [("", "a")]),
    ("an unconfident settled word waits", [("a?:0.2 b:0.3", 1.0)], [("", "a b")]),
    ("agreement still commits words inside the margin",
     [("a:0.8", 1.0), ("a:0.8 b:1.9", 2.0)], [("", "a"), ("a", "b")]),
    ("commit stops at the first word that is neither agreed nor settled",
     [("a:0.1 b?:0.2 c:0.3", 1.0)], [("a", "b c")]),
    ("after an early commit the rest is compared with the rest",
     [("a:0.2 b:0.8", 1.0), ("b:0.8 c:1.8", 2.0)], [("a", "b"), ("b", "c")]),
]


@pytest.mark.parametrize("name,script,expected", STABLE_CASES, ids=[c[0] for c in STABLE_CASES])
def test_stable_commit(name, script, expected):
    assert drive(StableCommit(margin_s=0.6, min_probability=0.6, agree_margin_s=0.0), script) == expected


# agree_margin_s: agreement counts only if the word's earlier sighting ended >= 0.2 s before the
# end of the audio then decoded. min_probability 0.95 > 0.9 turns first-sight commits off here.
CONTEXT_CASES = [
    ("agreement on a word first seen with right context commits",
     [("a:0.5", 1.0), ("a:0.5 b:1.9", 2.0)], [("", "a"), ("a", "b")]),
    ("agreement on a word first seen at the buffer edge waits",
     [("a:0.95", 1.0), ("a:0.95 b:1.9", 2.0)], [("", "a"), ("", "a b")]),
    ("it commits once a sighting had right context",
     [("a:0.95", 1.0), ("a:0.95 b:1.9", 2.0), ("a:0.95 b:1.9 c:2.9", 3.0)],
     [("", "a"), ("", "a b"), ("a", "b c")]),
    ("an edge word blocks the words after it",
     [("a:0.5 b:0.95", 1.0), ("a:0.5 b:0.95 c:1.5", 2.0)], [("", "a b"), ("a", "b c")]),
]


@pytest.mark.parametrize("name,script,expected", CONTEXT_CASES, ids=[c[0] for c in CONTEXT_CASES])
def test_stable_commit_agreement_needs_context(name, script, expected):
    policy = StableCommit(margin_s=0.6, min_probability=0.95, agree_margin_s=0.2)
    assert drive(policy, script) == expected


def test_without_agree_margin_an_edge_word_commits_on_agreement():
    """The same script as above with agree_margin_s=0: plain agreement commits."""
    got = drive(StableCommit(margin_s=0.6, min_probability=0.95, agree_margin_s=0.0),
                [("a:0.95", 1.0), ("a:0.95 b:1.9", 2.0)])
    assert got == [("", "a"), ("a", "b")]


# deep_margin_s: a word of middling probability (0.4 here) commits once 1 s of audio follows it.
DEEP_CASES = [
    ("a middling word with a second of right context commits", [("a~:0.5 b:1.9", 2.0)], [("a", "b")]),
    ("a middling word with less context waits", [("a~:1.2", 2.0)], [("", "a")]),
    ("an unconfident word waits however deep", [("a?:0.5 b:1.2", 2.0)], [("", "a b")]),
    ("the commit stops at the first word that is neither",
     [("a~:0.3 b:0.6 c~:1.3", 2.0)], [("a b", "c")]),
]


@pytest.mark.parametrize("name,script,expected", DEEP_CASES, ids=[c[0] for c in DEEP_CASES])
def test_stable_commit_deep_context(name, script, expected):
    policy = StableCommit(margin_s=0.3, min_probability=0.6, agree_margin_s=0.2, deep_margin_s=1.0,
                          deep_min_probability=0.3)
    assert drive(policy, script) == expected


def test_without_deep_margin_a_middling_word_waits_for_agreement():
    got = drive(StableCommit(margin_s=0.3, min_probability=0.6, agree_margin_s=0.2, deep_margin_s=None),
                [("a~:0.5 b:1.2", 2.0)])
    assert got == [("", "a b")]


def test_a_reworded_unconfident_first_word_stops_holding_the_words_behind_it_once_stale():
    # A segment opening on a fragment: each decode rewords its first word at low probability, so
    # neither agreement nor confidence settles it, and the confident words behind it wait.
    script = [("eis?:1.2 recentes:1.8 do:2.0", 2.5), ("eitos?:1.2 recentes:1.8 do:2.0 seu:2.4", 3.0),
              ("centros?:1.2 recentes:1.8 do:2.0 seu:2.4 trabalho:3.3", 3.5)]
    stale = drive(StableCommit(stale_s=2.0), script)
    assert stale[:2] == [("", "eis recentes do"), ("", "eitos recentes do seu")]
    assert stale[2] == ("centros recentes do seu", "trabalho")
    for off in (None, 0):
        never = drive(StableCommit(stale_s=off), script)
        assert [committed for committed, _ in never] == ["", "", ""]


@pytest.mark.parametrize("policy", [LocalAgreement(2), StableCommit()])
def test_flush_commits_everything_and_forgets(policy):
    policy.update(words("a:0.5 b:0.9"), 1.0)
    assert texts(policy.flush(words("a:0.5 b:0.9 c:1.0"))) == "a b c"
    committed, tentative = policy.update(words("z:3.0"), 3.1)
    assert texts(committed) == "" and texts(tentative) == "z"


def test_agreed_prefix():
    assert agreed_prefix([words("a b c"), words("A b. x")]) == 2
    assert agreed_prefix([]) == 0
    assert agreed_prefix([words("a"), []]) == 0


VOCAB = st.sampled_from(["a", "b", "c", "d"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(VOCAB, max_size=6), min_size=1, max_size=8), st.sampled_from(["la2", "stable", "context"]))
def test_commits_are_a_prefix_of_the_hypothesis(hyps, kind):
    """Whatever the hypotheses, a policy commits a prefix and the tentative tail is the rest."""
    policy = {"la2": LocalAgreement(2), "stable": StableCommit(agree_margin_s=0.0),
              "context": StableCommit(agree_margin_s=0.3)}[kind]
    for i, h in enumerate(hyps):
        hyp = [Word(t, i + j * 0.1, i + j * 0.1 + 0.1, 0.9) for j, t in enumerate(h)]
        committed, tentative = policy.update(hyp, float(i) + 0.5)
        assert committed + tentative == hyp


def test_the_default_policy_takes_the_measured_settings_of_the_source_language():
    from speech.asr.stage import create_policy
    from speech.backends import default_registry

    registry = default_registry()
    portuguese = create_policy(registry, "whisper-base", "default", "pt")
    assert isinstance(portuguese, StableCommit) and portuguese.deep_margin_s == 1.0
    assert create_policy(registry, "whisper-base", "default", "en").deep_margin_s == 1.5
    assert create_policy(registry, "whisper-base", "default", "es").deep_margin_s is None
    assert create_policy(registry, "whisper-tiny.en", "default", "pt").deep_margin_s is None
    # options after "default:" override the measured ones; a named policy takes none of them
    assert create_policy(registry, "whisper-base", "default:deep_margin_s=1.5", "pt").deep_margin_s == 1.5
    assert create_policy(registry, "whisper-base", "stable", "pt").deep_margin_s is None


def test_a_users_own_whisper_model_takes_no_per_language_settings():
    from types import SimpleNamespace

    from speech.asr.stage import tuned_language

    assert tuned_language(SimpleNamespace(model="base"), "pt") == "pt"
    assert tuned_language(SimpleNamespace(model="/models/whisper-large-v3-ct2"), "pt") == ""
    assert tuned_language(SimpleNamespace(), "pt") == "pt"  # a recogniser without weights to choose


@pytest.mark.parametrize("policy,expected", [
    (LocalAgreement(2), "a b"),
    # b ended at the very edge of the observed decode: its agreement does not count yet
    (StableCommit(min_probability=0.95, agree_margin_s=0.2), "a"),
])
def test_an_observed_warm_up_hypothesis_counts_for_agreement_and_commits_nothing(policy, expected):
    # min_probability above 0.9: nothing settles at first sight, only agreement commits
    assert policy.observe(words("a:0.5 b:0.95"), 1.0) is None
    committed, _ = policy.update(words("a:0.5 b:0.95 c:1.4"), 1.5)
    assert texts(committed) == expected
    fresh = type(policy)() if isinstance(policy, LocalAgreement) else StableCommit(min_probability=0.95)
    assert texts(fresh.update(words("a:0.5 b:0.95 c:1.4"), 1.5)[0]) == ""  # without it: nothing to agree with
