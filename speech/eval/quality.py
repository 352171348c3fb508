"""Quality scores: WER for recognition, BLEU and chrF (sacrebleu) for translation.

Recognition is scored on normalised text (lower case, no punctuation) because the references
(FLEURS, LibriVox) are written that way; translation is scored on the cased, punctuated text
against cased references, as sacrebleu expects.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_PUNCT = re.compile(r"[^\w\s']|_", re.UNICODE)


def normalize(text: str) -> str:
    """Lower case, punctuation removed (apostrophes inside words kept), spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _PUNCT.sub(" ", text)
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class ErrorCounts:
    """Word errors of one or more utterances; add them up for a corpus WER."""

    errors: int = 0
    words: int = 0

    def __add__(self, other: "ErrorCounts") -> "ErrorCounts":
        return ErrorCounts(self.errors + other.errors, self.words + other.words)

    @property
    def wer(self) -> float | None:
        return self.errors / self.words if self.words else None


def word_errors(hypothesis: str, reference: str) -> ErrorCounts:
    """Levenshtein word errors of normalised texts (substitutions + deletions + insertions)."""
    hyp, ref = normalize(hypothesis).split(), normalize(reference).split()
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return ErrorCounts(prev[-1], len(ref))


def sentence_scores(hypothesis: str, reference: str) -> dict[str, float]:
    import sacrebleu

    return {
        "bleu": sacrebleu.sentence_bleu(hypothesis, [reference]).score,
        "chrf": sacrebleu.sentence_chrf(hypothesis, [reference]).score,
    }


def corpus_scores(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """Corpus BLEU and chrF (sacrebleu defaults: 13a tokenisation, chrF n=6, beta=2)."""
    import sacrebleu

    if not hypotheses:
        return {}
    return {
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
    }
