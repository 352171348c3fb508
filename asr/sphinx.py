"""PocketSphinx (CMU en-us HMM + trigram LM): true streaming, lowest latency, weak accuracy.

The decoder keeps its own search over the utterance, so a hypothesis costs only the new audio.
Words of the current utterance that the policy committed are skipped in later hypotheses by
position; a pause (VAD) or a long utterance ends the utterance so the search stays small.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from speech.types import AudioChunk, Word

SAMPLE_RATE = 16000
_FILLER = re.compile(r"^(<s>|</s>|<sil>|\[.*\]|\+\+.*\+\+)$")


@dataclass
class PocketSphinxConfig:
    max_utterance_s: float = 20.0  # end the utterance after this long without a pause


class PocketSphinxRecognizer:
    sample_rate = SAMPLE_RATE
    language = "en"

    def __init__(self, config: PocketSphinxConfig) -> None:
        from pocketsphinx import Decoder

        self.config = config
        self._decoder = Decoder(loglevel="FATAL")
        self._frate = int(self._decoder.config["frate"])
        self._in_utt = False
        self.reset()

    def reset(self) -> None:
        if self._in_utt:
            self._decoder.end_utt()
        self._in_utt = False
        self._utt_start = 0.0
        self._utt_samples = 0
        self._committed_in_utt = 0
        self._carry: list[Word] = []  # words of utterances ended by length, not yet committed
        self.decodes = 0

    @property
    def buffer_end(self) -> float:
        return self._utt_start + self._utt_samples / SAMPLE_RATE

    def feed(self, chunk: AudioChunk) -> None:
        if chunk.sample_rate != SAMPLE_RATE:
            raise ValueError(f"PocketSphinx takes {SAMPLE_RATE} Hz audio, got {chunk.sample_rate} Hz")
        if not self._in_utt:
            self._decoder.start_utt()
            self._in_utt = True
            self._utt_start = chunk.start
            self._utt_samples = 0
            self._committed_in_utt = 0
        pcm = (np.clip(chunk.samples, -1.0, 1.0) * 32767).astype(np.int16)
        self._decoder.process_raw(pcm.tobytes(), False, False)
        self._utt_samples += len(pcm)
        if self._utt_samples / SAMPLE_RATE > self.config.max_utterance_s:
            self._end_utterance()

    def _words(self) -> list[Word]:
        if self._decoder.hyp() is None:
            return []
        return [
            Word(re.sub(r"\(\d+\)$", "", seg.word),  # "was(2)": second pronunciation of "was"
                 self._utt_start + seg.start_frame / self._frate,
                 self._utt_start + (seg.end_frame + 1) / self._frate)
            for seg in self._decoder.seg() or ()
            if not _FILLER.match(seg.word)
        ]

    def _end_utterance(self) -> None:
        if self._in_utt:
            self._decoder.end_utt()
            self._carry += self._words()[self._committed_in_utt :]
            self._in_utt = False
            self._committed_in_utt = 0

    def hypothesis(self) -> list[Word]:
        self.decodes += 1
        current = self._words()[self._committed_in_utt :] if self._in_utt else []
        return self._carry + current

    def commit(self, words: list[Word]) -> None:
        from_carry = min(len(words), len(self._carry))
        self._carry = self._carry[from_carry:]
        self._committed_in_utt += len(words) - from_carry

    def close_segment(self) -> list[Word]:
        """The speaker paused: the utterance's final uncommitted words; a new utterance after."""
        self._end_utterance()
        words, self._carry = self._carry, []
        return words

    def finish(self) -> list[Word]:
        return self.close_segment()


def make_pocketsphinx(config: PocketSphinxConfig, registry: Any) -> PocketSphinxRecognizer:
    return PocketSphinxRecognizer(config)
