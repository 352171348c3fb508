"""Kokoro's decoder run window by window: a piece's first sample after its first words, not after
the whole piece.

Kokoro's graph is a text encoder and prosody predictor (about 5 % of a call) feeding an iSTFTNet
decoder (the rest). The encoder sees the whole piece, so the piece keeps one prosody; the decoder
is convolutional, so a span of its frames decodes from that span plus a few frames either side.
The model is split where the decoder begins, and the decoder renders the frames in windows that
end at word boundaries (from the predicted alignment), each with `context_frames` decoded either
side and dropped, the first window short and each next one `growth` times longer (a piece too
short for two such windows is rendered whole). Two things
carry across a window's edge: the harmonic source's phase (the decoder's sine generator sums the
F0 curve from its first frame; a graph input adds the sum so far) and a `fade_frames` crossfade
from the previous window's decoded right context into the new window.

What differs from the whole-piece call: the decoder's instance norms see a window instead of the
piece. The log-spectral distance to the whole-piece audio (3.5 dB on a 5.6-s sentence) is close to
that of the same audio with its harmonics' starting phases changed (3.0 dB); without the carried
phase 3.6, with 6 frames of context 4.0 (docs/synthesis.md, "Kokoro window by window").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

SAMPLES_PER_FRAME = 600  # 24 kHz, 40 decoder frames a second; F0 and energy have 2 values a frame
FRAMES_PER_S = 40
# Where Kokoro v1.0's ONNX export (kokoro-onnx's, and the int8 model quantised from it) hands the
# decoder its inputs: the text features aligned to frames, F0 and energy; and the alignment itself.
FEATURES = ("/encoder/MatMul_1_output_0", "/encoder/Reshape_output_0", "/encoder/Reshape_1_output_0")
ALIGNMENT = "/encoder/Cast_4_output_0"
PHASE = "phase0"  # the input added to the sine generator's running sum of F0
SPLIT_VERSION = 1  # of `split_graph`'s output: split models cached under another version are split again


@dataclass(frozen=True)
class WindowConfig:
    first_s: float = 0.6  # the first window at least this long (then to the next word boundary); 0: whole pieces
    growth: float = 1.3  # each next window at least this many times the previous
    context_frames: int = 12  # decoded either side of a window and dropped (25 ms a frame)
    fade_frames: int = 4  # crossfade from the previous window's right context

    def __post_init__(self) -> None:
        if self.first_s < 0 or self.growth < 1 or self.context_frames < 1:
            raise ValueError(f"Kokoro windows need first_s >= 0, growth >= 1 and context_frames >= 1; "
                             f"got {self.first_s}, {self.growth}, {self.context_frames}")
        if not 0 <= self.fade_frames <= self.context_frames:
            raise ValueError(f"Kokoro windows need 0 <= fade_frames <= context_frames, got {self.fade_frames}")


def split_graph(model):  # noqa: ANN001, ANN201
    """(encoder, decoder) ONNX models cut from a whole Kokoro model (an onnx.ModelProto), the
    decoder with the PHASE input and its running sum as a second output; None when the model is not
    Kokoro v1.0's export (other tensor names): such a model is run whole."""
    import onnx
    import onnx.utils
    from onnx import TensorProto, helper

    names = {o for n in model.graph.node for o in n.output}
    if not all(f in names for f in (*FEATURES, ALIGNMENT)):
        return None
    sums = [n for n in model.graph.node if n.op_type == "CumSum" and "l_sin_gen" in n.name]
    if len(sums) != 1:
        return None
    extractor = onnx.utils.Extractor(model)
    encoder = extractor.extract_model(["tokens", "style", "speed"], [*FEATURES, ALIGNMENT])
    decoder = extractor.extract_model([*FEATURES, "style"], ["audio"])
    running = sums[0].output[0]
    shifted = running + "_" + PHASE
    for node in decoder.graph.node:
        for i, name in enumerate(node.input):
            if name == running:
                node.input[i] = shifted
    decoder.graph.node.append(helper.make_node("Add", [running, PHASE], [shifted], name=PHASE + "_add"))
    decoder.graph.input.append(helper.make_tensor_value_info(PHASE, TensorProto.FLOAT, [1, 1, None]))
    decoder.graph.output.append(helper.make_tensor_value_info(running, TensorProto.FLOAT, None))
    return encoder, decoder


def word_frames(alignment: np.ndarray, first_tokens: list[int]) -> list[int]:
    """The frame at which each word begins, from the alignment (tokens x frames, one token a frame)
    and each word's first token."""
    per_frame = token_per_frame(alignment)
    return [int(np.searchsorted(per_frame, t)) for t in first_tokens]


def token_per_frame(alignment: np.ndarray) -> np.ndarray:
    """The token each frame speaks, never decreasing, from the alignment (tokens x frames)."""
    return np.maximum.accumulate(np.asarray(alignment).reshape(np.shape(alignment)[-2], -1).argmax(axis=0))


def speech_span(alignment: np.ndarray, spoken_rows: list[int], edge_frames: int | None) -> tuple[int, int]:
    """The frames [lo, hi) worth decoding: from `edge_frames` before the first spoken token's first
    frame to `edge_frames` after the last one's last frame (`spoken_rows`: the rows of the
    alignment, tokens x frames, that are phonemes, not padding or punctuation). The padding tokens
    and a piece's final punctuation take 15-25 frames of silence that the TTS stage trims anyway,
    and the decoder's time is linear in frames; `edge_frames` of that silence stay as the
    convolutions' context. None, or no spoken row: every frame."""
    frames = int(np.shape(alignment)[-1])
    if edge_frames is None or not spoken_rows:
        return 0, frames
    per_frame = token_per_frame(alignment)
    first = int(np.searchsorted(per_frame, min(spoken_rows)))
    last = int(np.searchsorted(per_frame, max(spoken_rows), side="right"))
    if last <= first:
        return 0, frames
    return max(0, first - edge_frames), min(frames, last + edge_frames)


def plan(frames: int, starts: list[int], config: WindowConfig) -> list[tuple[int, int, int]]:
    """Windows (a, b, j) over `frames` frames: frames [a, b), speaking the words before word j;
    cut only where a word begins (`starts`, a frame per word), the first at least config.first_s
    long, each next at least `growth` times the one before; a last window shorter than the one
    before it joins that one (its few words cost a window's context for little).
    config.first_s = 0: one window."""
    if not config.first_s or not starts:
        return [(0, frames, len(starts))]
    want = max(1, round(config.first_s * FRAMES_PER_S))
    windows, a = [], 0
    for w, f in enumerate(starts[1:], start=1):
        if f - a >= want and f < frames:
            windows.append((a, f, w))
            want = max(1, round((f - a) * config.growth))
            a = f
    windows.append((a, frames, len(starts)))
    if len(windows) > 1 and windows[-1][1] - windows[-1][0] < windows[-2][1] - windows[-2][0]:
        windows[-2:] = [(windows[-2][0], frames, len(starts))]
    return windows


@dataclass
class WindowedDecoder:
    """The decoder session of `split_graph`, run over a piece's windows in order."""

    session: object  # onnxruntime.InferenceSession of the decoder
    config: WindowConfig

    def render(self, features: tuple[np.ndarray, np.ndarray, np.ndarray], style: np.ndarray,
               windows: list[tuple[int, int, int]]) -> Iterator[tuple[np.ndarray, int]]:
        """Samples of each window in order (together the piece), each with the number of frames
        decoded for it (the window and its context)."""
        text, f0, energy = features
        frames = text.shape[2]
        context, fade = self.config.context_frames, self.config.fade_frames * SAMPLES_PER_FRAME
        sums: np.ndarray | None = None  # the sine generator's running sum, per F0 value, from frame 0
        tail: np.ndarray | None = None  # the previous window's decode of the frames after it
        for a, b, _ in windows:  # in order from frame 0: a window that starts later finds `sums` filled
            s, e = max(0, a - context), min(frames, b + context)
            phase = np.zeros((1, 1, 1), np.float32)
            if s > 0:
                phase = (sums[2 * s - 1] % 1.0).reshape(1, 1, -1).astype(np.float32)
            audio, running = self.session.run(None, {
                FEATURES[0]: text[:, :, s:e], FEATURES[1]: f0[:, 2 * s:2 * e], FEATURES[2]: energy[:, 2 * s:2 * e],
                "style": style, PHASE: phase})
            audio = np.asarray(audio, np.float32).ravel()
            running = np.asarray(running, np.float64).reshape(2 * (e - s), -1) + phase.reshape(1, -1)
            if sums is None:
                sums = np.zeros((2 * frames, running.shape[1]))
            sums[2 * s:2 * e] = running
            lo, hi = (a - s) * SAMPLES_PER_FRAME, (b - s) * SAMPLES_PER_FRAME
            out = audio[lo:hi].copy()
            if tail is not None and len(tail):
                k = min(len(tail), len(out))
                ramp = np.linspace(0.0, 1.0, k, dtype=np.float32)
                out[:k] = out[:k] * ramp + tail[:k] * (1.0 - ramp)
            tail = audio[hi:hi + fade]
            yield out, e - s
