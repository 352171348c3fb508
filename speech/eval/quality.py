"""Quality scores: WER for recognition, BLEU and chrF (sacrebleu) for translation.

WER is the one word error rate of the project (`speech eval`, `speech bench asr`, the synthesis
round trip): jiwer's word alignment on texts normalised by `speech.asr.normalize.normalize` in the
text's language (lower case, no punctuation, numbers spelled out), always called as
`word_errors(reference, hypothesis)`. Translation is scored on the cased, punctuated text against
cased references, as sacrebleu expects.
"""

from __future__ import annotations

from dataclasses import dataclass

from speech.asr.normalize import normalize


@dataclass(frozen=True)
class ErrorCounts:
    """Word errors of one or more utterances; add them up for a corpus WER."""

    errors: int = 0
    words: int = 0  # reference words

    def __add__(self, other: "ErrorCounts") -> "ErrorCounts":
        return ErrorCounts(self.errors + other.errors, self.words + other.words)

    @property
    def wer(self) -> float | None:
        """Errors over reference words; None without reference words (not measurable)."""
        return self.errors / self.words if self.words else None


def word_errors(reference: str, hypothesis: str, language: str = "en") -> ErrorCounts:
    """Substitutions + deletions + insertions turning the normalised reference into the
    normalised hypothesis, and the number of reference words."""
    import jiwer

    ref, hyp = normalize(reference, language), normalize(hypothesis, language)
    if not ref:
        return ErrorCounts(len(hyp.split()), 0)
    if not hyp:
        return ErrorCounts(len(ref.split()), len(ref.split()))
    out = jiwer.process_words(ref, hyp)
    return ErrorCounts(out.substitutions + out.deletions + out.insertions, len(ref.split()))


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
