"""Piper (VITS, onnxruntime) with the embedded en-US voice or a user's local voice file.

Piper synthesises a sentence at a time (no streaming inside a sentence). We build the
onnxruntime session ourselves to choose the thread count (the other stages need the other core),
and switch off Piper's per-call peak normalisation so every chunk keeps the same loudness.

The voice's noise (VITS samples its durations and its latent from a normal distribution) is drawn
once from `seed` and read by position: the same text at the same speed is spoken the same way on
every call, in every process, so an evaluation of the output speech (ASR-BLEU, round trip) gives
the same figure when it is run again.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from speech.types import AudioChunk

from .text import clean_text


@dataclass(frozen=True)
class PiperConfig:
    model: str = ""  # a local .onnx voice; empty: the embedded en-US "joe" voice
    threads: int | None = None  # None: the registry's thread budget (speech.budget)
    length_scale: float | None = None  # None: the voice's own speed
    noise_scale: float | None = None  # None: the voice's default; 0: no noise (seeded or not, see `seed`)
    noise_w_scale: float | None = None
    seed: int | None = 0  # the noise's seed (module doc); None: fresh noise on every call
    gain: float = 1.0


def load_voice(model: str, threads: int, seed: int | None = 0):
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig as VoiceConfig

    from speech.models.voices import piper_joe, piper_local

    files = piper_local(model) if model else piper_joe()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(_patched(files.model, seed), sess_options=options,
                                           providers=["CPUExecutionProvider"])
    config = VoiceConfig.from_dict(json.loads(files.config.read_text(encoding="utf-8")))
    voice = PiperVoice(session=session, config=config)
    # onnxruntime's first run allocates and plans (several times a normal call): do it at load,
    # not on the first chunk a listener waits for.
    for _ in voice.synthesize("Hello."):
        pass
    return voice


def _patched(model, seed: int | None) -> str | bytes:  # noqa: ANN001 - a Path
    """The voice model changed in memory: Piper's alignment output added (samples per phoneme,
    which give each word's start; the audio is unchanged) and its noise fixed by `seed`
    (`fix_noise`); its path where `onnx` is missing or neither applies (the words then go by
    character share, the noise is fresh on every call)."""
    try:
        import onnx
    except ImportError:
        return str(model)
    graph = onnx.load(str(model))
    changed = False
    try:
        from piper.patch_voice_with_alignment import add_alignment_output

        add_alignment_output(graph)
        changed = True
    except (ImportError, ValueError):  # already patched, or not a graph Piper knows how to patch
        pass
    if seed is not None:
        changed = fix_noise(graph, seed) or changed
    return graph.SerializeToString() if changed else str(model)


NOISE_FRAMES = 4096  # positions of the noise table along time; longer tensors read it again from the start


def fix_noise(graph, seed: int) -> bool:  # noqa: ANN001 - an onnx.ModelProto
    """Replace each standard-normal `RandomNormalLike` of the graph (rank 3: batch, channels,
    time) with a slice of one table drawn from `seed`: position t of the time axis reads column
    t mod NOISE_FRAMES. Returns whether the graph had such a node."""
    from onnx import helper, numpy_helper

    def attribute(node, name: str, default: float) -> float:  # noqa: ANN001
        return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)

    nodes = [n for n in graph.graph.node if n.op_type == "RandomNormalLike"
             and attribute(n, "mean", 0.0) == 0.0 and attribute(n, "scale", 1.0) == 1.0
             and attribute(n, "dtype", 1) == 1]  # float32
    if not nodes:
        return False
    channels = 256  # more than any VITS voice's latent channels (192)
    table = np.random.default_rng(seed).standard_normal((1, channels, NOISE_FRAMES), dtype=np.float32)
    constants = {"noise_table": table, "noise_zero": np.array(0, np.int64), "noise_one": np.array(1, np.int64),
                 "noise_two": np.array(2, np.int64), "noise_frames": np.array(NOISE_FRAMES, np.int64),
                 "noise_lead": np.array([0, 0], np.int64), "noise_lead_axes": np.array([0, 1], np.int64),
                 "noise_first": np.array([0], np.int64), "noise_second": np.array([2], np.int64)}
    graph.graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in constants.items())
    for k, node in enumerate(nodes):
        p = f"noise{k}_"
        new = [
            helper.make_node("Shape", [node.input[0]], [p + "shape"]),
            helper.make_node("Slice", [p + "shape", "noise_first", "noise_second"], [p + "lead"]),
            helper.make_node("Gather", [p + "shape", "noise_two"], [p + "time"]),
            helper.make_node("Range", ["noise_zero", p + "time", "noise_one"], [p + "range"]),
            helper.make_node("Mod", [p + "range", "noise_frames"], [p + "index"]),
            helper.make_node("Slice", ["noise_table", "noise_lead", p + "lead", "noise_lead_axes"], [p + "rows"]),
            helper.make_node("Gather", [p + "rows", p + "index"], [node.output[0]], axis=2),
        ]
        at = list(graph.graph.node).index(node)
        graph.graph.node.remove(node)
        for i, n in enumerate(new):
            graph.graph.node.insert(at + i, n)
    return True


def word_starts(phonemes: list[str], samples_per_phoneme: list[int]) -> list[int]:
    """The first sample of each word of a sentence Piper spoke: its phonemes come with the
    samples each took, words separated by a space phoneme, "^" first."""
    starts, position, at_word = [], 0, True
    for phoneme, samples in zip(phonemes, samples_per_phoneme):
        if phoneme == " ":
            at_word = True
        elif phoneme not in ("^", "$", "_") and at_word:
            starts.append(position)
            at_word = False
        position += int(samples)
    return starts


def sentence_words(text: str) -> list[int]:
    """Words per sentence of `text`, split where Piper splits (after . ? !)."""
    counts, n = [], 0
    for word in text.split():
        n += 1
        if word.rstrip("\"'”’»)").endswith((".", "?", "!")):
            counts.append(n)
            n = 0
    return counts + [n] if n else counts


class PiperSynthesizer:
    # Piper synthesises a chunk whole before its first sample: shorter chunks start sooner, and a
    # short first piece of a burst hides the synthesis of the next one behind its playback; every
    # longer piece is split into a 3-word lead and the rest for the same reason (`lead_words`).
    chunk_defaults = {"max_words": 8, "first_words": 4, "lead_words": 3}
    supports_speed = True  # `synthesize(text, speed)`: the voice's length_scale divided by speed
    # The duration control's fastest speed for this voice: round trip (Whisper base, 10 FLEURS + 20
    # FLORES references) within 5 points of normal speed: 9.8 % at 1, 11.6 % at 1.4, 13.5 % at 1.6,
    # 15.0 % at 1.8 (`speech bench s2st --text-only --pairs pt-en --limit 10 --more-texts 20 --speed X`).
    max_speed = 1.6

    def __init__(self, config: PiperConfig, voice) -> None:
        from piper.config import SynthesisConfig

        self.config = config
        self._voice = voice
        self.sample_rate = int(voice.config.sample_rate)
        self._syn = SynthesisConfig(
            length_scale=config.length_scale,
            noise_scale=config.noise_scale,
            noise_w_scale=config.noise_w_scale,
            normalize_audio=False,
        )

    def synthesize(self, text: str, speed: float = 1.0) -> Iterator[AudioChunk]:
        text = clean_text(text)
        if not text:
            return
        if not 0.5 <= speed <= 2.5:
            raise ValueError(f"Piper speed must be between 0.5 and 2.5, got {speed:g}")
        syn = self._syn
        if abs(speed - 1.0) > 1e-6:
            base = self.config.length_scale or float(getattr(self._voice.config, "length_scale", 1.0) or 1.0)
            syn = dataclasses.replace(syn, length_scale=base / speed)
        offset = 0
        # Word timing, sentence by sentence, where Piper's sentences and their phoneme words match
        # the text's word for word (a number read as several words does not: those words go by
        # character share between the timed ones).
        counts = sentence_words(text)
        first_word = 0
        for seq, piece in enumerate(self._voice.synthesize(text, syn, include_alignments=True)):
            samples = np.asarray(piece.audio_float_array, dtype=np.float32) * np.float32(self.config.gain)
            marks: tuple[tuple[int, float], ...] = ()
            alignments = piece.phoneme_alignments
            if alignments and seq < len(counts):
                starts = word_starts([a.phoneme for a in alignments], [a.num_samples for a in alignments])
                if len(starts) == counts[seq]:
                    marks = tuple((first_word + i, (offset + s) / self.sample_rate) for i, s in enumerate(starts))
            first_word += counts[seq] if seq < len(counts) else 0
            yield AudioChunk(samples, self.sample_rate, start=offset / self.sample_rate, seq=seq, text=text,
                             word_marks=marks)
            offset += len(samples)


def create(config: PiperConfig, registry) -> PiperSynthesizer:
    threads = registry.threads("onnx", config.threads)
    voice = registry.shared(("piper-voice", config.model, threads, config.seed),
                            lambda: load_voice(config.model, threads, config.seed))
    return PiperSynthesizer(config, voice)
