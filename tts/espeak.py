"""eSpeak NG voices (`tts/espeak_engine.py` holds the C library), streaming through its synthesis
callback: synthesis runs in a producer thread that hands each callback buffer to the consumer
through a queue, so the first audio is available as soon as eSpeak produced it.
"""

from __future__ import annotations

import bisect
import queue
import re
import threading
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from speech.errors import UserError
from speech.types import AudioChunk

from .espeak_engine import EspeakEngine, engine
from .espeak_voice import is_voice_file, parse_attributes
from .respell import respeller
from .text import clean_text

DEFAULT_WORDS_PER_MINUTE = 135  # slower than eSpeak's 175: measured more intelligible (docs/synthesis.md)
# extra pause between words, 10 ms units: 30 ms cut the Whisper round trip from 26 % to 16 % (es)
# and 51 % to 36-37 % (pt) on whole sentences (docs/synthesis.md)
DEFAULT_WORD_GAP = 3


@dataclass(frozen=True)
class VoiceTuning:
    attributes: str = ""  # eSpeak voice-file lines (`espeak_voice.parse_attributes`: sound and `replace`)
    # eSpeak's volume, 0-200 (its default 100): louder consonants raise the speech's RMS, and eSpeak
    # clips at 16 bits inside, so the level comes down there
    volume: int = 100
    words_per_minute: int = DEFAULT_WORDS_PER_MINUTE
    word_gap: int = DEFAULT_WORD_GAP  # 10 ms units


# Voices measured more intelligible with attributes (docs/synthesis.md, "Voice tunings").
# pt-BR: no pitch flutter, consonants 4x eSpeak's default, and every
# r spoken as eSpeak's alveolar "r" without the schwa eSpeak puts after a tap before a consonant.
# Whisper heard eSpeak's velar "x" (rato, carro) as "h" or nothing and its tap (para, literatura) as
# "t"/"d". Round trip on 40 tuning FLORES lines: as shipped 53.3 %, flutter/consonants 49.9 % (3
# draws each), with the r sounds 36.5 % (Opus 36.9 %); on 40 other lines 54.0 -> 38.7 % (Opus
# 38.9 %). Spanish measured no better with flutter/consonants, so not applied there. The volume
# keeps the peaks under full scale after the treble boost, which lifts the louder consonants further.
TUNED_VOICES = {
    "pt-BR": VoiceTuning(
        "flutter 0; consonants 400 400; replace 00 x r; replace 00 * r; replace 00 @- NULL", volume=40
    ),
    # Italian, Catalan, Galician: slower, 50 ms between words; Catalan's tap spoken as its trill.
    # Round trip on 20 tuning FLORES lines (Whisper base, PCM16): it 40.6 (as shipped) -> 33.8 %,
    # ca 74.4 (central voice) -> 48.2 %, gl 57.4 (Spanish voice at 120) -> 49.4 %; on the
    # benchmark's 20 lines it 44.3 -> 37.9 %, ca 76.4 -> 53.8 %, gl 63.5 -> 57.8 %.
    "it": VoiceTuning(words_per_minute=120, word_gap=5),
    "ca-va": VoiceTuning("replace 00 ** R", words_per_minute=105, word_gap=5),
    "gl:es": VoiceTuning(words_per_minute=105, word_gap=5),  # Galician on the Spanish voice
}


def tuned_voice(language: str, voice: str) -> VoiceTuning | None:
    """The tuning of eSpeak voice `voice` ("it+m3": its base name counts) speaking `language`: an
    entry "language:voice" (a voice another language borrows) first, then the voice's own."""
    name = voice.partition("+")[0]
    lang = language.lower().split("-")[0]
    return TUNED_VOICES.get(f"{lang}:{name}") or TUNED_VOICES.get(name)


@dataclass(frozen=True)
class EspeakConfig:
    language: str = "en"
    voice: str = ""  # an eSpeak voice name ("pt-br", "en-gb"); empty: the language's default
    words_per_minute: int = 0  # 0: the voice's (TUNED_VOICES), else DEFAULT_WORDS_PER_MINUTE
    gain: float = 0.7  # one fixed level for the voice, close to Piper's (never per chunk)
    pitch: int = 50  # eSpeak's base pitch, 0-100
    pitch_range: int = 50  # intonation range, 0 (monotone) - 100
    word_gap: int = -1  # extra pause between words, 10 ms units; -1: the voice's, else DEFAULT_WORD_GAP
    # A treble boost after synthesis: 0 dB below 1 kHz, +6 dB per octave above, at most this much.
    # eSpeak's formants are dull above 1 kHz; Whisper base heard pt better with the consonants
    # lifted: round trip 59.3 -> 52.7 % on 40 held-out FLORES lines (docs/synthesis.md). 0: off.
    treble_db: float = 12.0
    treble_level: float = 0.703  # one fixed level: the 12 dB boost raises speech RMS ~1.42x
    # eSpeak voice-file lines added to the voice, ";"-separated (`espeak_voice.parse_attributes`),
    # e.g. "consonants 400 400; replace 00 x r"; "default": the voice's entry in TUNED_VOICES; "":
    # the voice as shipped
    attributes: str = "default"
    volume: int = 0  # eSpeak's volume, 1-200; 0: the tuned voice's (TUNED_VOICES), else eSpeak's 100


def treble_fir(rate: int, max_db: float, taps: int = 65, corner_hz: float = 1000.0) -> np.ndarray:
    """Linear-phase FIR (32 samples, 1.5 ms, of delay): 0 dB below `corner_hz`, +6 dB per octave
    above it, capped at `max_db`."""
    f = np.fft.rfftfreq(1024, 1 / rate)
    h = np.fft.irfft(np.clip(f / corner_hz, 1.0, 10 ** (max_db / 20)), 1024)
    return (np.roll(h, taps // 2)[:taps] * np.hanning(taps + 2)[1:-1]).astype(np.float32)


class EspeakSynthesizer:
    """Text in, AudioChunks out as eSpeak produces them (~20 ms buffers)."""

    # Pieces of at most 6 words: a translator that commits a word or two per update (Apertium,
    # Bergamot) otherwise leaves short runs waiting for the chunker's 0.8 s time-out. FLEURS en->es
    # end to end (`speech bench s2st --pairs en-es --limit 10`): time to first audio p50 801 -> 3 ms,
    # round trip 27.5 -> 22.7 %; en->pt 39.0 -> 41.1 % (one sentence of noise). 4 words: 2 ms, 23.1 %.
    # While the listener hears nothing, 3 committed words are spoken at once instead of waiting
    # for a break or the time-out. FLEURS, two runs each (`speech eval`, 10 clips): en->es first
    # audio 3.35 -> 3.10 s, listener lag p50 4.89 -> 4.65 s; en->pt 3.55 -> 3.30 s, 5.00 -> 4.69 s;
    # ASR-BLEU en->es 8.6 -> 7.0-7.7, en->pt 4.0 -> 5.6-6.3 (ten clips of eSpeak speech swing by
    # up to 3 points from run to run).
    # Piper's voice is not given it: pt->en gained 0.25 s and lost 1.5-1.9 ASR-BLEU.
    chunk_defaults = {"max_words": 6, "idle_words": 3}
    supports_speed = True  # `synthesize(text, speed)`: eSpeak's own rate, word gap scaled with it
    # The duration control's fastest speed for this voice: round trip (Whisper base, 10 FLEURS + 20
    # FLORES references) within 5 points of normal speed. es 23.1 -> 27.0 % at 1.25, 31.0 % at 1.4;
    # pt 36.8 -> 41.0 % at 1.25; it 37.9 -> 40.2, ca 53.8 -> 55.7, gl 57.8 -> 57.6 % at 1.25
    # (`speech bench s2st --text-only --pairs en-es --limit 10 --more-texts 20 --speed 1.25`).
    max_speed = 1.25

    def __init__(self, config: EspeakConfig, engine_: EspeakEngine) -> None:
        self.config = config
        self._engine = engine_
        # a user's voice file is never tuned, and resolving it here would write one more copy
        plain = "" if is_voice_file(config.voice) else engine_.resolve(config.language, config.voice)
        tuning = tuned_voice(config.language, plain)
        self._respell = respeller(config.language, plain) if plain else None
        attributes = config.attributes
        if attributes == "default":
            attributes = tuning.attributes if tuning else ""
        self._volume = config.volume or (tuning.volume if tuning and config.attributes == "default" else 100)
        # the pace, like the sound, is the tuned voice's unless given
        pace = tuning or VoiceTuning()
        self.words_per_minute = config.words_per_minute or pace.words_per_minute
        self.word_gap = pace.word_gap if config.word_gap < 0 else config.word_gap
        if not 80 <= self.words_per_minute <= 450:
            raise UserError(f"eSpeak words_per_minute {config.words_per_minute} is out of range: give 80-450")
        if not 1 <= self._volume <= 200:
            raise UserError(f"eSpeak volume {config.volume} is out of range: give 1-200 (100 is eSpeak's default)")
        self.voice = engine_.resolve(config.language, config.voice, parse_attributes(attributes))
        self.sample_rate = engine_.sample_rate
        self._fir = treble_fir(self.sample_rate, config.treble_db) if config.treble_db > 0 else None

    def synthesize(self, text: str, speed: float = 1.0) -> Iterator[AudioChunk]:
        text = clean_text(text)
        if not text:
            return
        spoken = self._respell(text) if self._respell else text  # the chunks carry the text as written
        if not 0.5 <= speed <= 2.5:
            raise ValueError(f"eSpeak speed must be between 0.5 and 2.5, got {speed:g}")
        words_per_minute = round(self.words_per_minute * speed)
        word_gap = round(self.word_gap / speed)
        buffers: queue.SimpleQueue = queue.SimpleQueue()
        stop = threading.Event()
        done = object()
        word_of = _word_index(spoken, text)
        marks: list[tuple[int, int]] = []  # (word of `text`, sample) since the last buffer

        def produce() -> None:
            def consume(samples: np.ndarray) -> bool:
                buffers.put((samples, tuple(marks)))
                marks.clear()
                return stop.is_set()

            def on_word(character: int, sample: int) -> None:
                if word_of is not None:
                    marks.append((word_of(character), sample))

            try:
                self._engine.synth(
                    spoken, self.voice, words_per_minute, consume,
                    pitch=self.config.pitch, pitch_range=self.config.pitch_range, word_gap=word_gap,
                    volume=self._volume, on_word=on_word,
                )
            except BaseException as e:  # noqa: BLE001 - handed to the consumer
                buffers.put(e)
            finally:
                buffers.put(done)

        worker = threading.Thread(target=produce, name="espeak-synth", daemon=True)
        worker.start()
        seq = 0
        offset = 0
        marked: set[int] = set()
        history = np.zeros(len(self._fir) - 1 if self._fir is not None else 0, np.float32)
        try:
            while (item := buffers.get()) is not done:
                if isinstance(item, BaseException):
                    raise item
                samples, buffer_marks = item
                samples = samples * np.float32(self.config.gain)
                if self._fir is not None:  # filtered buffer by buffer: the same as the whole piece at once
                    buf = np.concatenate([history, samples])
                    history = buf[len(samples):]
                    samples = np.convolve(buf, self._fir, mode="valid").astype(np.float32) * np.float32(self.config.treble_level)
                word_marks = []
                for w, sample in buffer_marks:  # a word eSpeak splits ("23") keeps its first start
                    if w not in marked:
                        marked.add(w)
                        word_marks.append((w, sample / self.sample_rate))
                yield AudioChunk(samples, self.sample_rate, start=offset / self.sample_rate, seq=seq, text=text,
                                 word_marks=tuple(word_marks))
                seq += 1
                offset += len(samples)
        finally:
            stop.set()
            worker.join()


def _word_index(spoken: str, text: str) -> Callable[[int], int] | None:
    """Maps a character of `spoken` to the index of its word, which is also the index of a word
    of `text` when the respelling kept the words one for one; else None (no word timing)."""
    starts = [m.start() for m in re.finditer(r"\S+", spoken)]
    if len(starts) != len(text.split()):
        return None
    return lambda character: max(0, bisect.bisect_right(starts, character) - 1)


def create(config: EspeakConfig, registry) -> EspeakSynthesizer:
    return EspeakSynthesizer(config, engine())
