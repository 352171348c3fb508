"""The neural codec-decoder interface (codec tokens -> waveform) for token-based TTS, and an
implementation on EnCodec 24 kHz (the `encodec` package, causal model) with streaming decoding.

No weights can be downloaded here: a decoder loads a user's local EnCodec checkpoint (the state
dict of `EncodecModel.encodec_model_24khz`, e.g. `encodec_24khz-d7cc33bc.th`), or is built with
random weights (tests: shapes, and streaming output equal to batch output).

EnCodec itself decodes a whole sequence at once. `TokenStream` decodes as tokens arrive and gives
exactly the batch output: every layer of the causal decoder is run incrementally with its state
(convolution history, the LSTM's hidden state, the transposed convolutions' overlap); the only
look-ahead is the reflect padding at the very start, which the first convolution waits for.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class NeuralCodecDecoder(Protocol):
    """Codec tokens (n_codebooks, frames) -> waveform."""

    sample_rate: int
    frame_rate: float  # token frames per second
    n_codebooks: int

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Batch: all frames at once."""
        ...

    def stream(self) -> "TokenStreamProtocol":
        """A stateful decoder for one stream of token frames."""
        ...


class TokenStreamProtocol(Protocol):
    def push(self, codes: np.ndarray) -> np.ndarray: ...

    def flush(self) -> np.ndarray: ...


@dataclass(frozen=True)
class EncodecConfig:
    weights: str = ""  # local checkpoint; empty: random weights (tests only)
    bandwidth: float = 6.0  # kbit/s: 1.5, 3, 6, 12 or 24 (2, 4, 8, 16, 32 codebooks)
    threads: int = 1
    seed: int = 0  # random weights only


BANDWIDTHS = {1.5: 2, 3.0: 4, 6.0: 8, 12.0: 16, 24.0: 32}


def _encodec_parts():
    """encodec's modules and quantizer, without `encodec/__init__`, whose utils import torchaudio
    (used there only for file I/O; torchaudio wheels are built for one torch version and fail to
    load against ours)."""
    try:
        import encodec.modules as modules
        import encodec.quantization as quantization
    except ModuleNotFoundError as e:
        if e.name != "torchaudio":
            raise
        spec = importlib.util.find_spec("encodec")
        package = types.ModuleType("encodec")
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        sys.modules["encodec"] = package
        import encodec.modules as modules
        import encodec.quantization as quantization
    return modules, quantization


def build_encodec_24k(config: EncodecConfig):
    """(quantizer, decoder) of the causal 24 kHz EnCodec, with the user's weights or random ones."""
    import torch

    from speech.models.voices import local_weights

    if config.bandwidth not in BANDWIDTHS:
        raise ValueError(f"EnCodec 24 kHz bandwidths are {', '.join(map(str, BANDWIDTHS))} kbit/s, not {config.bandwidth}")
    modules, quantization = _encodec_parts()
    torch.manual_seed(config.seed)
    decoder = modules.SEANetDecoder(channels=1, norm="weight_norm", causal=True)
    quantizer = quantization.ResidualVectorQuantizer(dimension=decoder.dimension, n_q=32, bins=1024)
    if config.weights:
        path = local_weights(config.weights, "EnCodec")
        state = torch.load(str(path), map_location="cpu", weights_only=True)
        for prefix, module in (("decoder.", decoder), ("quantizer.", quantizer)):
            part = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
            if not part:
                raise ValueError(f"{path}: no '{prefix}*' weights; is it an EnCodec 24 kHz checkpoint?")
            missing, unexpected = module.load_state_dict(part, strict=False)
            if missing:
                raise ValueError(f"{path}: not an EnCodec 24 kHz checkpoint (missing {missing[:3]}...)")
    else:
        # Random codebooks (the quantizer initialises them to zeros until trained).
        for layer in quantizer.vq.layers:
            layer._codebook.embed.copy_(torch.randn_like(layer._codebook.embed))
    decoder.eval()
    quantizer.eval()
    return quantizer, decoder


class EncodecTokenDecoder:
    sample_rate = 24000

    def __init__(self, config: EncodecConfig) -> None:
        import torch

        torch.set_num_threads(config.threads)
        self.config = config
        self.n_codebooks = BANDWIDTHS[config.bandwidth]
        self._quantizer, self._decoder = build_encodec_24k(config)
        self.hop = int(np.prod(self._decoder.ratios))
        self.frame_rate = self.sample_rate / self.hop

    def _embed(self, codes: np.ndarray):
        import torch

        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[0] != self.n_codebooks:
            raise ValueError(f"codes must be ({self.n_codebooks}, frames) at {self.config.bandwidth} kbit/s, got {codes.shape}")
        if codes.size and (codes.min() < 0 or codes.max() >= 1024):
            raise ValueError("EnCodec codes are 0-1023")
        return self._quantizer.decode(torch.as_tensor(codes, dtype=torch.long)[:, None, :])  # (1, dim, T)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return self._decoder(self._embed(codes))[0, 0].numpy().copy()

    def stream(self) -> "TokenStream":
        return TokenStream(self)


class TokenStream:
    """Incremental decoding of one token stream; concatenated outputs equal `decode` of all tokens."""

    def __init__(self, owner: EncodecTokenDecoder) -> None:
        self._owner = owner
        self._net = _streaming(owner._decoder.model)

    def push(self, codes: np.ndarray) -> np.ndarray:
        import torch

        if np.asarray(codes).shape[-1] == 0:
            return np.zeros(0, np.float32)
        with torch.inference_mode():
            y = self._net.process(self._owner._embed(codes))
        return np.zeros(0, np.float32) if y is None else y[0, 0].numpy().copy()

    def flush(self) -> np.ndarray:
        import torch

        with torch.inference_mode():
            y = self._net.flush()
        return np.zeros(0, np.float32) if y is None else y[0, 0].numpy().copy()


# --- incremental versions of the decoder's layers -------------------------------------------


def _cat(a, b):
    import torch

    if a is None:
        return b
    if b is None:
        return a
    return torch.cat([a, b], dim=-1)


class _Pointwise:
    def __init__(self, module) -> None:
        self.m = module

    def process(self, x):
        return None if x is None or x.shape[-1] == 0 else self.m(x)

    def flush(self):
        return None


class _Conv:
    """Causal SConv1d, stride 1: keeps the last `pad` inputs; waits for pad+1 at the start (reflect)."""

    def __init__(self, module) -> None:
        conv = module.conv.conv
        assert conv.stride[0] == 1, "streaming supports the decoder's stride-1 convolutions"
        self.m = module
        self.conv = conv
        self.pad = (conv.kernel_size[0] - 1) * conv.dilation[0]
        self.history = None
        self.started = False
        self.waiting = None

    def process(self, x):
        if x is None or x.shape[-1] == 0:
            return None
        if self.pad == 0:
            return self.conv(x)
        if not self.started:
            self.waiting = _cat(self.waiting, x)
            if self.waiting.shape[-1] <= self.pad:
                return None
            x, self.waiting, self.started = self.waiting, None, True
            y = self.m(x)  # the batch path: reflect padding on the left
        else:
            y = self.conv(_cat(self.history, x))
            x = _cat(self.history, x)
        self.history = x[..., -self.pad :]
        return y

    def flush(self):
        if self.waiting is not None:  # a stream shorter than the padding: decode it as a batch
            x, self.waiting = self.waiting, None
            return self.m(x)
        return None


class _ConvTranspose:
    """Causal SConvTranspose1d: overlap-adds each block's output with the previous block's tail;
    the tail still waiting at the end is what the batch path trims."""

    def __init__(self, module) -> None:
        self.convtr = module.convtr.convtr
        self.overlap = self.convtr.kernel_size[0] - self.convtr.stride[0]
        self.tail = None

    def process(self, x):
        if x is None or x.shape[-1] == 0:
            return None
        bias = self.convtr.bias.view(1, -1, 1)
        y = self.convtr(x) - bias
        if self.tail is not None:
            y[..., : self.overlap] += self.tail
        self.tail = y[..., -self.overlap :].clone()
        return y[..., : -self.overlap] + bias

    def flush(self):
        return None


class _Lstm:
    def __init__(self, module) -> None:
        self.m = module
        self.state = None

    def process(self, x):
        if x is None or x.shape[-1] == 0:
            return None
        seq = x.permute(2, 0, 1)
        y, self.state = self.m.lstm(seq, self.state)
        if self.m.skip:
            y = y + seq
        return y.permute(1, 2, 0)

    def flush(self):
        return None


class _Sequence:
    def __init__(self, layers) -> None:
        self.layers = layers

    def process(self, x):
        for layer in self.layers:
            x = layer.process(x)
        return x

    def flush(self):
        y = None
        for layer in self.layers:
            y = _cat(layer.process(y) if y is not None else None, layer.flush())
        return y


class _Residual:
    """shortcut(x) + block(x), the two branches aligned (the block starts later: reflect padding)."""

    def __init__(self, module) -> None:
        self.shortcut = _streaming(module.shortcut)
        self.block = _streaming(module.block)
        self.a = None
        self.b = None

    def _emit(self):
        if self.a is None or self.b is None:
            return None
        n = min(self.a.shape[-1], self.b.shape[-1])
        if n == 0:
            return None
        y = self.a[..., :n] + self.b[..., :n]
        self.a, self.b = self.a[..., n:], self.b[..., n:]
        return y

    def process(self, x):
        self.a = _cat(self.a, self.shortcut.process(x))
        self.b = _cat(self.b, self.block.process(x))
        return self._emit()

    def flush(self):
        self.a = _cat(self.a, self.shortcut.flush())
        self.b = _cat(self.b, self.block.flush())
        return self._emit()


def _streaming(module):
    from torch import nn

    modules, _ = _encodec_parts()
    if isinstance(module, nn.Sequential):
        return _Sequence([_streaming(m) for m in module])
    if isinstance(module, modules.SConv1d):
        return _Conv(module)
    if isinstance(module, modules.SConvTranspose1d):
        return _ConvTranspose(module)
    if isinstance(module, modules.SLSTM):
        return _Lstm(module)
    if isinstance(module, modules.seanet.SEANetResnetBlock):
        return _Residual(module)
    if isinstance(module, (nn.ELU, nn.Identity)):
        return _Pointwise(module)
    raise TypeError(f"no streaming version of {type(module).__name__}")


def create_encodec(config: EncodecConfig, registry) -> EncodecTokenDecoder:
    return EncodecTokenDecoder(config)
