"""Piper's noise fixed by position (tts/piper_voice.py `fix_noise`), on a one-node graph."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from speech.tts.piper_voice import NOISE_FRAMES, fix_noise  # noqa: E402


def random_graph(mean: float = 0.0):
    """y = RandomNormalLike(x), x of shape (1, C, T)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, None, None])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None, None])
    node = helper.make_node("RandomNormalLike", ["x"], ["y"], dtype=1, mean=mean)
    return helper.make_model(helper.make_graph([node], "noise", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 15)])


def session(model):
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def run(model, channels: int, frames: int, reuse=None) -> np.ndarray:  # noqa: ANN001
    return (reuse or session(model)).run(None, {"x": np.zeros((1, channels, frames), np.float32)})[0]


def test_noise_is_read_by_position_from_the_seed():
    model = random_graph()
    assert fix_noise(model, seed=3)
    assert not [n for n in model.graph.node if n.op_type == "RandomNormalLike"]
    same = session(model)
    long = run(model, 192, NOISE_FRAMES + 10, same)
    np.testing.assert_array_equal(run(model, 192, NOISE_FRAMES + 10, same), long)  # the same session again
    assert long.shape == (1, 192, NOISE_FRAMES + 10)
    np.testing.assert_array_equal(run(model, 192, 50), long[:, :, :50])  # a shorter call: its prefix
    np.testing.assert_array_equal(long[:, :, NOISE_FRAMES:], long[:, :, :10])  # past the table: again from 0
    np.testing.assert_array_equal(run(model, 2, 50), long[:, :2, :50])  # fewer channels: the first rows
    assert abs(float(long.mean())) < 0.01 and 0.98 < float(long.std()) < 1.02  # standard normal
    other = random_graph()
    fix_noise(other, seed=4)
    assert not np.array_equal(run(other, 192, 50), long[:, :, :50])


def test_unfixed_noise_changes_and_other_distributions_are_left_alone():
    model = random_graph()
    same = session(model)
    assert not np.array_equal(run(model, 4, 64, same), run(model, 4, 64, same))  # what fix_noise replaces
    shifted = random_graph(mean=1.0)
    assert not fix_noise(shifted, seed=0)
    assert [n.op_type for n in shifted.graph.node] == ["RandomNormalLike"]
