"""The neural codec decoder (EnCodec 24 kHz) with random weights: shapes, streaming equals batch,
and loading a user's local weights file."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("einops")
if __import__("importlib").util.find_spec("encodec") is None:
    pytest.skip("encodec is not installed (pip install --no-deps encodec==0.1.1)", allow_module_level=True)

from speech.codecs.neural import EncodecConfig, EncodecTokenDecoder, NeuralCodecDecoder  # noqa: E402
from speech.errors import UserError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@pytest.fixture(scope="module")
def decoder() -> EncodecTokenDecoder:
    return EncodecTokenDecoder(EncodecConfig(bandwidth=6.0, seed=3))


def codes(frames: int, seed: int = 1, n_q: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1024, (n_q, frames))


def test_shapes(decoder):
    assert isinstance(decoder, NeuralCodecDecoder)
    assert decoder.n_codebooks == 8 and decoder.frame_rate == 75.0
    y = decoder.decode(codes(30))
    assert y.shape == (30 * 320,) and y.dtype == np.float32 and np.all(np.isfinite(y)) and np.std(y) > 0
    with pytest.raises(ValueError, match=r"codes must be \(8, frames\)"):
        decoder.decode(codes(5, n_q=4))
    with pytest.raises(ValueError, match="0-1023"):
        decoder.decode(np.full((8, 3), 2000))


@pytest.mark.parametrize("blocks", [[1] * 24, [1, 2, 3, 7, 11], [5, 19], [24]])
def test_streaming_output_equals_batch_output(decoder, blocks):
    c = codes(24, seed=7)
    batch = decoder.decode(c)
    stream = decoder.stream()
    parts, i = [], 0
    for n in blocks:
        parts.append(stream.push(c[:, i : i + n]))
        i += n
    parts.append(stream.flush())
    out = np.concatenate(parts)
    assert out.shape == batch.shape
    np.testing.assert_allclose(out, batch, atol=1e-6 * max(1.0, float(np.abs(batch).max())))
    # audio comes out before the end of the stream (streaming, not buffered to the end)
    if len(blocks) > 2:
        assert sum(len(p) for p in parts[:-2]) > 0


def test_different_tokens_give_different_audio(decoder):
    assert not np.allclose(decoder.decode(codes(10, seed=1)), decoder.decode(codes(10, seed=2)))


def test_loads_a_local_weights_file(tmp_path, decoder):
    import torch

    from speech.codecs.neural import build_encodec_24k

    quantizer, dec = build_encodec_24k(EncodecConfig(seed=3))
    state = {f"decoder.{k}": v for k, v in dec.state_dict().items()}
    state.update({f"quantizer.{k}": v for k, v in quantizer.state_dict().items()})
    path = tmp_path / "encodec_24khz.th"
    torch.save(state, path)
    loaded = EncodecTokenDecoder(EncodecConfig(weights=str(path), seed=99))  # seed ignored: weights win
    c = codes(12)
    np.testing.assert_allclose(loaded.decode(c), decoder.decode(c), atol=1e-6)
    with pytest.raises(UserError, match="no such EnCodec weights file"):
        EncodecTokenDecoder(EncodecConfig(weights=str(tmp_path / "missing.th")))
    torch.save({"something.else": torch.zeros(1)}, tmp_path / "wrong.th")
    with pytest.raises(ValueError, match="no 'decoder"):
        EncodecTokenDecoder(EncodecConfig(weights=str(tmp_path / "wrong.th")))


def test_registered_as_a_codec_decoder(registry):
    assert "encodec" in registry.names("codec-decoder")
    d = registry.create("codec-decoder", "encodec", bandwidth=1.5)
    assert d.n_codebooks == 2 and d.decode(codes(4, n_q=2)).shape == (4 * 320,)
