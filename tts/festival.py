"""Festival's voices (Debian main): Catalan through the UPC's HTS voice "ona", 16 kHz.

Festival is a Scheme interpreter; one `festival --pipe` process per voice is kept running and
given one piece at a time: the piece is synthesised into a WAV file of the process's own, each
word's start comes back on stdout, then a marker that the piece is done (flushed by hand:
festival blocks its stdout on a pipe). Starting festival costs 0.2 s (the voice's files), a 6-word
piece 20-40 ms. Sessions speaking the same language share the process, a lock making each piece
atomic; a process that dies or hangs is started again once, and a second failure is a named error.

The voice reads ISO-8859-1 text (its lexicon and letter-to-sound rules are in that encoding);
characters outside it are folded to their nearest Latin-1 form or dropped.
"""

from __future__ import annotations

import os
import select
import subprocess
import tempfile
import threading
import unicodedata
import wave
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from speech.errors import UserError
from speech.models.voices import FestivalVoice, festival_voice
from speech.processes import stop_process
from speech.types import AudioChunk

from .text import clean_text

_FOLD = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "„": '"', "–": "-", "—": "-", "…": "...",
                       "\u00a0": " "})


class FestivalFailed(RuntimeError):
    """Festival died or hung twice on one piece."""


def latin1(text: str) -> str:
    """`text` as the voice can read it: typographic marks folded, other characters outside
    ISO-8859-1 decomposed, and what is still outside it dropped."""
    out = []
    for ch in text.translate(_FOLD):
        if ord(ch) < 256:
            out.append(ch)
        else:  # "ŀ" -> "l·", "č" -> "c"
            out.extend(c for c in unicodedata.normalize("NFKD", ch) if ord(c) < 256)
    return "".join(out)


def scheme_string(text: str) -> str:
    """`text` as a Scheme string literal: a quote or backslash in the text cannot end it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


class FestivalProcess:
    """One running `festival --pipe` with one voice selected; `synth` is one piece at a time."""

    def __init__(self, voice: FestivalVoice, timeout_s: float = 20.0) -> None:
        self.voice = voice
        self.timeout_s = timeout_s
        self.restarts = 0
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._folder = tempfile.TemporaryDirectory(prefix="speech-festival-")
        self._calls = 0
        self._finalizer = weakref.finalize(self, stop_process, [None])

    def _start(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: warnings never block festival
        self._proc = subprocess.Popen([str(self.voice.program), "--pipe"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, stop_process, [self._proc])
        # the voice's own engine options, kept so that each piece can add its speed to them
        self._send(f"(voice_{self.voice.name})\n(set! speech::params hts_engine_params)\n")
        if self._read_until_done() is None:
            raise EOFError(f"festival could not select the voice {self.voice.name}")

    def synth(self, text: str, speed: float = 1.0) -> tuple[np.ndarray, int, list[float | None]]:
        """`text` spoken: samples (float32), the sample rate, and each whitespace token's start in
        seconds (None for a token with no spoken word)."""
        with self._lock:
            try:
                return self._call(text, speed)
            except (OSError, TimeoutError, EOFError):
                self._kill()
                self.restarts += 1
                try:
                    return self._call(text, speed)
                except (OSError, TimeoutError, EOFError) as e:
                    said = self._stderr_tail()
                    self._kill()
                    raise FestivalFailed(f"festival ({self.voice.name}) failed on {text[:40]!r}: "
                                         f"{e or type(e).__name__}{': ' + said if said else ''}") from e

    def _call(self, text: str, speed: float) -> tuple[np.ndarray, int, list[float | None]]:
        if self._proc is not None and self._proc.poll() is not None:  # died since the last piece
            self._kill()
            self.restarts += 1
        if self._proc is None:
            self._start()
        self._calls += 1
        wav = Path(self._folder.name, "piece.wav")
        wav.unlink(missing_ok=True)
        # each top-level token's first segment start ("-": a token festival says nothing for)
        self._send(
            f'(set! hts_engine_params (append speech::params (list (list "-r" {speed:.3f}))))\n'
            f"(set! speech::utt (utt.synth (Utterance Text {scheme_string(latin1(text))})))\n"
            f"(utt.save.wave speech::utt {scheme_string(str(wav))} 'riff)\n"
            "(mapcar (lambda (tok) (if (not (item.parent tok)) (if (item.daughter1 tok) (format t \"@w %s\\n\" "
            "(item.feat tok \"daughter1.R:SylStructure.daughter1.daughter1.segment_start\")) "
            "(format t \"@w -\\n\")))) (utt.relation.items speech::utt 'Token))\n"
        )
        lines = self._read_until_done()
        if lines is None or not wav.is_file():
            raise EOFError("festival wrote no speech for the piece")
        with wave.open(str(wav)) as w:
            rate = w.getframerate()
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
        starts = [None if s == "-" else float(s) for s in (line[3:] for line in lines if line.startswith("@w "))]
        return samples, rate, starts

    def _send(self, commands: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        done = f'(format t "@done {self._calls}\\n")\n(fflush nil)\n'
        self._proc.stdin.write((commands + done).encode("latin-1", "replace"))
        self._proc.stdin.flush()

    def _read_until_done(self) -> list[str] | None:
        """Lines festival printed before this call's marker; None when it exited first."""
        assert self._proc is not None and self._proc.stdout is not None
        fd, marker, buf = self._proc.stdout.fileno(), f"@done {self._calls}".encode(), b""
        while True:
            lines = buf.split(b"\n")
            if marker in lines[:-1]:
                return [line.decode("latin-1") for line in lines[:lines.index(marker)]]
            ready, _, _ = select.select([fd], [], [], self.timeout_s)
            if not ready:
                raise TimeoutError(f"no answer in {self.timeout_s} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            buf += chunk

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("latin-1").strip()[-300:]

    def _kill(self) -> None:
        self._finalizer()
        self._proc = None

    def close(self) -> None:
        with self._lock:
            self._kill()
            self._folder.cleanup()


@dataclass(frozen=True)
class FestivalConfig:
    language: str = "ca"
    # one fixed level for the voice (never per chunk): ona speaks at RMS 0.13, brought to Piper's 0.085
    gain: float = 0.67
    timeout_s: float = 20.0  # a piece festival has not finished by then restarts it


class FestivalSynthesizer:
    """Text in, one AudioChunk per piece, with each word's start (festival's segment timing)."""

    # The same pieces as Pico's and eSpeak NG's (the translators behind them commit a word or two
    # per update); 3 words are spoken at once while the listener hears nothing.
    chunk_defaults = {"max_words": 6, "idle_words": 3}
    supports_speed = True  # `synthesize(text, speed)`: the HTS engine's own speech rate (-r)
    # The duration control's fastest speed: round trip within 5 points of normal speed: 25.0 % at
    # 1, 26.0 % at 1.25, 24.6 % at 1.4, 25.0 % at 1.5, 27.2 % at 1.6, 30.9 % at 1.8 (20 FLORES lines,
    # `speech bench s2st --text-only --pairs en-ca --limit 10 --more-texts 20 --speed X`)
    max_speed = 1.6

    def __init__(self, config: FestivalConfig, process: FestivalProcess) -> None:
        if config.timeout_s <= 0:
            raise UserError(f"festival timeout_s must be > 0, got {config.timeout_s:g}")
        self.config = config
        self._process = process
        self.sample_rate = 16000

    def synthesize(self, text: str, speed: float = 1.0) -> Iterator[AudioChunk]:
        text = clean_text(text)
        if not text:
            return
        if not 0.5 <= speed <= 2.5:
            raise ValueError(f"Festival speed must be between 0.5 and 2.5, got {speed:g}")
        samples, rate, starts = self._process.synth(text, speed)
        self.sample_rate = rate
        # festival's tokens are the text's whitespace tokens; where they differ, no word timing
        marks = tuple((i, s) for i, s in enumerate(starts) if s is not None) if len(starts) == len(text.split()) else ()
        yield AudioChunk(samples * np.float32(self.config.gain), rate, start=0.0, seq=0, text=text, word_marks=marks)


def create(config: FestivalConfig, registry) -> FestivalSynthesizer:
    voice = festival_voice(config.language)
    process = registry.shared(("festival", voice, config.timeout_s), lambda: FestivalProcess(voice, config.timeout_s))
    return FestivalSynthesizer(config, process)
