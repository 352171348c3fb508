"""The Latin-vocabulary copy of Gemma-3-270M (models/gguf_vocab.py): same tokens for our
languages' text, the original's logits over the kept tokens, a smaller output layer."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest

from speech.models.gguf import gemma_270m_path, smollm2_path
from speech.models.gguf_vocab import latin_token_ids, is_latin_piece
from speech.translate.llama import LlamaModel
from speech.translate.llm import model_file

pytestmark = pytest.mark.slow

TEXTS = (
    "Translate English to Spanish.\n\nEnglish: The Sphinx of Giza, 4,500 years old, is in Egypt.\nSpanish:",
    " El señor Müller compró 25 kilos de azúcar, ¿verdad? «Sí», dijo él.",
    " Die Straße in Göteborg ist 3 km lang; l'été à Orléans, não é?",
)


@pytest.fixture(scope="module")
def models() -> tuple[LlamaModel, LlamaModel]:
    full = gemma_270m_path()
    return LlamaModel(full), LlamaModel(model_file(full, "latin"))


def test_default_vocab_is_the_latin_copy_and_it_is_smaller(models):
    full, latin = models
    assert model_file(gemma_270m_path(), "auto") == latin.path
    assert model_file(gemma_270m_path(), "full") == full.path
    assert 0.5 * full.vocab.n_vocab < latin.vocab.n_vocab < 0.7 * full.vocab.n_vocab
    assert latin.path.stat().st_size < 0.8 * full.path.stat().st_size


@pytest.mark.parametrize("text", TEXTS)
def test_latin_text_tokenises_into_the_same_pieces(models, text):
    full, latin = models
    a = [full.piece(t) for t in full.tokenize(text, bos=True)]
    b = [latin.piece(t) for t in latin.tokenize(text, bos=True)]
    assert a == b and len(a) > 10


def test_logits_over_kept_tokens_are_the_originals(models):
    full, latin = models
    ids: dict[str, list[int]] = {}
    for i in range(full.vocab.n_vocab):
        ids.setdefault(full.piece(i), []).append(i)
    unique = {p: i[0] for p, i in ids.items() if len(i) == 1 and p}  # control tokens print as ""
    caches = []
    for m in models:
        c = m.new_cache()
        c.sync(m.tokenize(TEXTS[0], bos=True))
        caches.append(c)
    want, got = caches[0].logits(), caches[1].logits()
    # Map the copy's ids to the original's through the token text.
    pairs = [(want[unique[p]], got[j]) for j in range(0, latin.vocab.n_vocab, 37) if (p := latin.piece(j)) in unique]
    assert len(pairs) > 3000
    assert max(abs(a - b) for a, b in pairs) < 1e-3
    best = max(range(len(got)), key=got.__getitem__)
    assert latin.piece(best) == full.piece(max(range(len(want)), key=want.__getitem__))
    gens = [c.generate(12, stop=lambda t: False).tokens for c in caches]
    assert [full.piece(t) for t in gens[0]] == [latin.piece(t) for t in gens[1]]
    for c in caches:
        c.close()


def test_latin_selection_rules():
    assert is_latin_piece("▁Müller") and is_latin_piece("¿") and is_latin_piece("25,")
    assert not is_latin_piece("東京") and not is_latin_piece("▁Москва")
    pieces = ["<pad>", "<unused3>", "<0x41>", "▁casa", "東", "!!", "<start_of_turn>"]
    types = [3, 3, 6, 1, 1, 1, 3]
    assert latin_token_ids(pieces, types) == [0, 2, 3, 5, 6]


def test_a_bpe_model_keeps_its_vocabulary_unless_forced():
    try:
        path = smollm2_path()
    except Exception as e:  # noqa: BLE001 - the package is a test extra
        pytest.skip(str(e))
    assert model_file(path, "auto") == path
    with pytest.raises(ValueError, match="vocab=full"):
        model_file(path, "latin")
