"""eSpeak NG's C library in process through ctypes (libespeak-ng from espeakng-loader): one engine
per process, synthesis through its callback, phonemes, and the voice for each language.

The C library keeps one global state per process (voice, parameters, the callback), so there is one
`EspeakEngine` per process (`engine()`), and a lock makes each call (set voice, synthesise or
phonemise) atomic.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Callable

import numpy as np

from speech.errors import UserError

from .espeak_voice import VoiceFiles, is_voice_file

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
# espeak_TextToPhonemes' phonememode: IPA (bit 1), a tie between the letters of one phoneme (bit 7)
# given in bits 8-23
_PHONEMES_IPA_TIED = 0x02 | 0x80 | (ord("^") << 8)
# espeak_PARAMETER: espeakRATE (words per minute), espeakVOLUME (0-200, default 100), espeakPITCH /
# espeakRANGE (0-100, default 50), espeakWORDGAP (extra pause between words, 10 ms units at the default speed)
_RATE, _VOLUME, _PITCH, _RANGE, _WORDGAP = 1, 2, 3, 4, 7
_BUFFER_MS = 20  # callback granularity

# Usual language codes -> the eSpeak NG voice for them (the rest are looked up as given).
# Spanish, Italian, Catalan and Galician speak with eSpeak's "m3" variant (its formants and
# stress), which Whisper heard better in all four (Spanish: 21.5 -> 19.3 % on 1,937 held-out words
# in PCM, the same through Opus, no longer); Catalan with the Valencian voice, whose unstressed
# vowels are not reduced; Galician, which eSpeak NG lacks, with the Spanish voice and its text
# respelt (`tts.respell`). Measurements: docs/synthesis.md, "Voice tunings".
PREFERRED_VOICE = {"en": "en-us", "pt": "pt-br", "zh": "cmn", "nb": "nb", "no": "nb",
                   "es": "es+m3", "it": "it+m3", "ca": "ca-va+m3", "gl": "es+m3"}


class _Voice(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_char_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


class _Event(ctypes.Structure):  # espeak_EVENT
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),  # 1-based, in characters of the UTF-8 text
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),  # ms
        ("sample", ctypes.c_int),  # samples from the start of the synthesis
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_void_p),
    ]


_EVENT_LIST_TERMINATED, _EVENT_WORD = 0, 1
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


class EspeakEngine:
    """The process's libespeak-ng, initialised once for synchronous synthesis with a callback."""

    def __init__(self) -> None:
        from speech.models.voices import espeak_ng

        files = espeak_ng()
        lib = ctypes.CDLL(str(files.library))
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetVoiceByFile.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByFile.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_Voice))
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int]
        rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, _BUFFER_MS, str(files.data).encode(), 0)
        if rate <= 0:
            raise RuntimeError(f"eSpeak NG failed to initialise with data {files.data}")
        self.sample_rate = int(rate)
        self._lib = lib
        self._lock = threading.Lock()
        self._consumer: Callable[[np.ndarray], bool] | None = None
        self._on_word: Callable[[int, int], None] | None = None
        self._callback = _CALLBACK(self._on_audio)  # keep a reference: C holds the pointer
        lib.espeak_SetSynthCallback(self._callback)
        self._identifiers: dict[str, str] = {}  # voice name -> its file under the data folder ("roa/pt-BR")
        self._files = VoiceFiles(files.data)
        self.voices = self._list_voices()

    def _list_voices(self) -> dict[str, str]:
        """language or identifier -> the name SetVoiceByName accepts."""
        out: dict[str, str] = {}
        table = self._lib.espeak_ListVoices(None)
        i = 0
        while table[i]:
            v = table[i].contents
            lang = (v.languages or b"")[1:].decode("utf-8", "replace").lower()  # byte 0 is a priority
            ident = (v.identifier or b"").decode()
            name = ident.rsplit("/", 1)[-1]  # the voice file's name, which SetVoiceByName loads
            for key in (lang, ident.lower(), name.lower()):
                if key and name:
                    out.setdefault(key, name)
            self._identifiers.setdefault(name, ident)
            i += 1
        return out

    def resolve(self, language: str, voice: str = "", attributes: tuple[str, ...] = ()) -> str:
        """What `synth` loads for a language, an explicit voice name ("pt-br+m3") or a voice file's
        path, with `attributes` (voice-file lines, `espeak_voice.parse_attributes`) added; a clear
        error when the voice is unknown."""
        wanted, plus, variant = (voice or PREFERRED_VOICE.get(language.lower(), language)).partition("+")
        if is_voice_file(wanted):  # a user's voice file: loaded from a copy (eSpeak's path limits)
            return self._files.compose(self._files.user_text(wanted), attributes, variant)
        wanted = wanted.lower()  # "es+m3": a voice with a variant; variant files are case-sensitive ("+Henrique")
        for key in (wanted, wanted.replace("_", "-")):
            if key in self.voices:
                name = self.voices[key]
                if attributes:
                    return self._files.compose(self._files.base_text(self._identifiers[name]), attributes, variant)
                return name + plus + variant
        known = ", ".join(sorted({v for v in self.voices.values()}))
        what = f"voice {voice!r}" if voice else f"language {language!r}"
        raise UserError(f"eSpeak NG has no {what}; available: {known}, or a voice file's path")

    def _on_audio(self, wav, n: int, events) -> int:
        # the events describe this buffer's words: handed on before the buffer itself
        if events and self._on_word is not None:
            i = 0
            while (event := events[i]).type != _EVENT_LIST_TERMINATED:
                if event.type == _EVENT_WORD:
                    self._on_word(event.text_position - 1, event.sample)
                i += 1
        if n > 0 and wav and self._consumer is not None:
            stop = self._consumer(np.ctypeslib.as_array(wav, shape=(n,)).astype(np.float32) / 32768.0)
            return 1 if stop else 0
        return 0

    def synth(self, text: str, voice: str, words_per_minute: int, consumer: Callable[[np.ndarray], bool],
              pitch: int = 50, pitch_range: int = 50, word_gap: int = 0, volume: int = 100,
              on_word: Callable[[int, int], None] | None = None) -> None:
        """Synthesise `text`; `consumer(samples)` gets each buffer and returns True to stop early;
        `on_word(character, sample)`, where given, each word's start (its first character's index
        in `text`, the sample where eSpeak begins it). Every parameter is set on every call: the
        library's state is shared by all sessions."""
        data = text.encode("utf-8")
        with self._lock:
            load = self._lib.espeak_SetVoiceByFile if is_voice_file(voice) else self._lib.espeak_SetVoiceByName
            if load(voice.encode()) != 0:
                raise UserError(f"eSpeak NG cannot load voice {voice!r}")
            for param, value in ((_RATE, words_per_minute), (_VOLUME, volume), (_PITCH, pitch), (_RANGE, pitch_range),
                                 (_WORDGAP, word_gap)):
                self._lib.espeak_SetParameter(param, int(value), 0)
            self._consumer, self._on_word = consumer, on_word
            try:
                err = self._lib.espeak_Synth(data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
            finally:
                self._consumer = self._on_word = None
        if err != 0:
            raise RuntimeError(f"eSpeak NG synthesis failed (error {err}) on {text[:40]!r}")

    def phonemes(self, text: str, voice: str) -> list[str]:
        """`text` in IPA as eSpeak NG's `voice` pronounces it, one string per clause (eSpeak drops
        the punctuation between them); the letters of one phoneme tied with "^" ("t^ʃ")."""
        with self._lock:
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise UserError(f"eSpeak NG cannot load voice {voice!r}")
            rest = ctypes.c_char_p(text.encode("utf-8"))
            out = []
            while rest.value:  # eSpeak moves `rest` past each clause it phonemised (NULL at the end)
                clause = self._lib.espeak_TextToPhonemes(ctypes.byref(rest), _CHARS_UTF8, _PHONEMES_IPA_TIED)
                if clause:
                    out.append(clause.decode("utf-8", "replace").strip())
        return [c for c in out if c]


@functools.cache
def engine() -> EspeakEngine:
    """The process's eSpeak NG (the C library has a single global state)."""
    return EspeakEngine()
