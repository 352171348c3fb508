"""SVOX Pico in process through ctypes (Debian's libttspico0 and libttspico-data): English,
German, Spanish, French and Italian, 16 kHz; Catalan, Galician and Portuguese on its Spanish voice.

Pico is a small HMM-based synthesiser, far more intelligible than eSpeak NG's formant
voices for the languages it has (round trip through Whisper base, docs/synthesis.md "Voices"), and
as fast (a 6-word piece in ~5 ms). Its API is pull-based: text in with `pico_putTextUtf8`, samples
out with `pico_getData` until the engine is idle. A Pico system (its 2.5 MB work memory, the two
resource files and one engine) serves one voice; sessions that speak the same language share it,
a lock making each piece's synthesis atomic. Pico gives no word timing: a piece's words go by
character share on the listener's timeline.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from speech.errors import UserError
from speech.models.voices import PicoFiles, svox_pico
from speech.types import AudioChunk

from .text import clean_text, ends_clause, ends_sentence

SAMPLE_RATE = 16000
_MEMORY = 2_500_000  # the work memory pico2wave gives one system
_STEP_IDLE, _STEP_BUSY = 200, 201
_RESET_SOFT = 0x10
_NAME_SIZE = 200  # pico_Retstring
_PULL_BYTES = 4096  # per pico_getData call (it returns at most this many bytes)
_VOICE = b"speech"


class PicoFailed(RuntimeError):
    """Pico refused or failed to synthesise a text."""


class PicoEngine:
    """One Pico system with one voice loaded; `synth` is serialised by a lock."""

    def __init__(self, files: PicoFiles) -> None:
        lib = ctypes.CDLL(str(files.library))
        for name in ("pico_initialize", "pico_loadResource", "pico_getResourceName", "pico_createVoiceDefinition",
                     "pico_addResourceToVoiceDefinition", "pico_newEngine", "pico_putTextUtf8", "pico_getData",
                     "pico_resetEngine", "pico_getSystemStatusMessage"):
            getattr(lib, name).restype = ctypes.c_int
        self._lib = lib
        self._memory = ctypes.create_string_buffer(_MEMORY)  # owned here: Pico never frees it
        self._system = ctypes.c_void_p()
        self._check(lib.pico_initialize(self._memory, ctypes.c_uint(_MEMORY), ctypes.byref(self._system)), "initialise")
        names = []
        for path in (files.text_analysis, files.signal):
            resource = ctypes.c_void_p()
            self._check(lib.pico_loadResource(self._system, str(path).encode(), ctypes.byref(resource)), f"load {path}")
            name = ctypes.create_string_buffer(_NAME_SIZE)
            self._check(lib.pico_getResourceName(self._system, resource, name), "name a resource")
            names.append(name.value)
        self._check(lib.pico_createVoiceDefinition(self._system, _VOICE), "define the voice")
        for name in names:
            self._check(lib.pico_addResourceToVoiceDefinition(self._system, _VOICE, name), "define the voice")
        self._engine = ctypes.c_void_p()
        self._check(lib.pico_newEngine(self._system, _VOICE, ctypes.byref(self._engine)), "start the engine")
        self._lock = threading.Lock()

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            message = ctypes.create_string_buffer(_NAME_SIZE)
            self._lib.pico_getSystemStatusMessage(self._system, status, message)
            raise RuntimeError(f"SVOX Pico could not {what}: {message.value.decode(errors='replace')} ({status})")

    def synth(self, text: str) -> np.ndarray:
        """`text` (Pico's markup allowed) spoken whole: 16 kHz float32 samples."""
        data = text.encode("utf-8") + b"\0"  # the terminating zero makes Pico speak what it holds
        out = bytearray()
        buffer = ctypes.create_string_buffer(_PULL_BYTES)
        put, received, kind = ctypes.c_short(), ctypes.c_short(), ctypes.c_short()
        with self._lock:
            try:
                while data:
                    # at most 32767 bytes per call (a 16-bit size); Pico takes what fits its input buffer
                    status = self._lib.pico_putTextUtf8(self._engine, data, ctypes.c_short(min(len(data), 32767)),
                                                        ctypes.byref(put))
                    if status != 0:
                        raise PicoFailed(f"SVOX Pico refused the text {text[:40]!r} ({status})")
                    data = data[put.value:]
                    while True:
                        status = self._lib.pico_getData(self._engine, buffer, ctypes.c_short(_PULL_BYTES),
                                                        ctypes.byref(received), ctypes.byref(kind))
                        out += buffer.raw[:received.value]
                        if status == _STEP_IDLE:
                            break
                        if status != _STEP_BUSY:
                            raise PicoFailed(f"SVOX Pico synthesis failed on {text[:40]!r} ({status})")
            except BaseException:
                self._lib.pico_resetEngine(self._engine, _RESET_SOFT)  # the next piece starts clean
                raise
        return np.frombuffer(bytes(out), dtype="<i2").astype(np.float32) / 32768.0


@dataclass(frozen=True)
class PicoConfig:
    language: str = "en"  # en (US), en-gb, de, es, fr, it; ca, gl and pt on the Spanish voice
    lang_dir: str = "/usr/share/pico/lang"  # where libttspico-data puts the voices
    # one fixed level for the voice (never per chunk): Pico speaks at twice the RMS of Piper and
    # eSpeak NG (speech 0.20 against 0.085 and 0.09, for peaks alike), brought to theirs
    gain: float = 0.45
    # Pico's speed level in percent (its <speed> markup, 20-500): the voice's own pace at 100
    speed_percent: int = 100


class PicoSynthesizer:
    """Text in, one AudioChunk per piece (Pico speaks a 6-word piece in ~5 ms)."""

    # The same pieces as eSpeak NG's (`tts.espeak`): the translators behind both commit a word or
    # two per update, and 3 words are spoken at once while the listener hears nothing.
    chunk_defaults = {"max_words": 6, "idle_words": 3}
    supports_speed = True  # `synthesize(text, speed)`: Pico's own <speed> markup
    # The duration control's fastest speed for this voice: round trip (Whisper base, 10 FLEURS + 20
    # FLORES references) within 5 points of normal speed: es 7.7 % at 1, 9.6 % at 1.25, 10.5 % at
    # 1.4, 10.7 % at 1.5, 13.4 % at 1.6; it 19.9 % at 1, 21.9 % at 1.4, 21.2 % at 1.5; pt on the
    # Spanish voice 31.9 % at 1, 33.5 % at 1.5
    # (`speech bench s2st --text-only --pairs en-es --limit 10 --more-texts 20 --speed X`).
    max_speed = 1.5

    def __init__(self, config: PicoConfig, engine_: PicoEngine) -> None:
        if not 50 <= config.speed_percent <= 250:
            raise UserError(f"Pico speed_percent {config.speed_percent} is out of range: give 50-250 (100: the voice's pace)")
        self.config = config
        self._engine = engine_
        self.sample_rate = SAMPLE_RATE

    def synthesize(self, text: str, speed: float = 1.0) -> Iterator[AudioChunk]:
        text = clean_text(text)  # no "<" is left: the markup below is the only markup Pico sees
        if not text:
            return
        if not 0.5 <= speed <= 2.5:
            raise ValueError(f"Pico speed must be between 0.5 and 2.5, got {speed:g}")
        samples = self._speak(text, round(self.config.speed_percent * speed)) * np.float32(self.config.gain)
        yield AudioChunk(samples, self.sample_rate, start=0.0, seq=0, text=text)

    def _speak(self, text: str, level: int) -> np.ndarray:
        try:
            return self._engine.synth(text if level == 100 else f'<speed level="{level}">{text}</speed>')
        except PicoFailed:
            # Pico fails on some long sentences (38 words of Italian, 270 characters, where 37 pass):
            # spoken in two halves, cut at the clause boundary nearest the middle
            words = text.split()
            if len(words) < 8:
                raise
            cut = halfway(words)
            return np.concatenate([self._speak(" ".join(words[:cut]), level), self._speak(" ".join(words[cut:]), level)])


def halfway(words: list[str]) -> int:
    """Where to cut a run of words in two: after the clause or sentence end nearest the middle
    (within its middle half), else in the middle."""
    middle = len(words) // 2
    ends = [i + 1 for i, w in enumerate(words[:-1]) if ends_clause(w) or ends_sentence(w)]
    near = [i for i in ends if abs(i - middle) <= len(words) // 4]
    return min(near, key=lambda i: abs(i - middle)) if near else middle


def create(config: PicoConfig, registry) -> PicoSynthesizer:
    files = svox_pico(config.language, config.lang_dir)  # languages that share a voice share its engine
    engine_ = registry.shared(("pico", files), lambda: PicoEngine(files))
    return PicoSynthesizer(config, engine_)
