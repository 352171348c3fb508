"""PCM16 and Opus behind one interface: round trips, framing, loss, corruption, bad rates."""

from __future__ import annotations

import numpy as np
import pytest

from speech.codecs.frames import CodecConfig
from speech.registry import UnknownBackend
from speech.types import AudioChunk, EncodedPacket

opuslib = pytest.importorskip("opuslib")


def voiced(rate: int, seconds: float = 1.0) -> np.ndarray:
    """A harmonic tone with a speech-like envelope (Opus is a speech/music codec, not a waveform copier)."""
    t = np.arange(int(rate * seconds)) / rate
    f0 = 140 + 30 * np.sin(2 * np.pi * 2 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    x = sum(np.sin(k * phase) / k for k in range(1, 12))
    return (0.15 * x * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def roundtrip(pair, x, rate, drop=()):
    packets = [*pair.encoder.encode(AudioChunk(x, rate, start=2.0, wall_time=2.5)), *pair.encoder.flush()]
    out = [pair.decoder.decode(None if i in drop else p) for i, p in enumerate(packets)]
    return packets, np.concatenate([c.samples for c in out])


def spectral_distance_db(a: np.ndarray, b: np.ndarray, rate: int) -> float:
    """Mean absolute difference of band energies (dB) in 16 bands of 100-4000 Hz."""

    def bands(x):
        frames = x[: len(x) // 512 * 512].reshape(-1, 512) * np.hanning(512)
        power = np.mean(np.abs(np.fft.rfft(frames, axis=1)) ** 2, axis=0)
        freqs = np.fft.rfftfreq(512, 1 / rate)
        edges = np.linspace(100, 4000, 17)
        return np.array([10 * np.log10(power[(freqs >= lo) & (freqs < hi)].sum() + 1e-10)
                         for lo, hi in zip(edges[:-1], edges[1:])])

    ea, eb = bands(a), bands(b)
    floor = ea.max() - 40  # bands the input hardly uses only count down to 40 dB below its loudest
    return float(np.mean(np.abs(np.maximum(ea, floor) - np.maximum(eb, floor))))


def test_pcm16_is_lossless_to_16_bits_and_keeps_timing(registry):
    pair = registry.create("codec", "pcm16", CodecConfig(sample_rate=24000))
    x = voiced(24000, 0.51)
    packets, y = roundtrip(pair, x, 24000)
    assert len(packets) == 26 and all(p.samples == 480 for p in packets)  # 20 ms frames, last padded
    assert packets[0].start == 2.0 and packets[1].start == pytest.approx(2.02) and packets[-1].wall_time == 2.5
    assert np.max(np.abs(y[: len(x)] - x)) < 1e-4 and not np.any(y[len(x):])


@pytest.mark.parametrize("rate", [48000, 24000, 16000])
def test_opus_round_trip_keeps_the_spectrum_at_24_kbit(registry, rate):
    pair = registry.create("codec", "opus", CodecConfig(sample_rate=rate, bitrate=24000))
    x = voiced(rate)
    packets, y = roundtrip(pair, x, rate)
    assert all(p.samples == rate // 50 for p in packets)
    kbit = sum(len(p.data) for p in packets) * 8 / (len(packets) * 0.02) / 1000
    assert 15 < kbit < 32
    assert spectral_distance_db(x, y[: len(x)], rate) < 1.5  # measured 0.07-0.09 dB (lowdelay), 0.14-0.21 (voip)
    # the measure can fail: the same tone at half the level, or noise of the same power
    assert spectral_distance_db(x, x * 0.5, rate) > 2.5
    noise = np.random.default_rng(0).normal(0, float(np.std(x)), len(x)).astype(np.float32)
    assert spectral_distance_db(x, noise, rate) > 10


def test_opus_conceals_lost_and_corrupt_packets(registry):
    rate = 24000
    pair = registry.create("codec", "opus", CodecConfig(sample_rate=rate))
    x = voiced(rate)
    packets, _ = roundtrip(pair, x, rate)
    dec = registry.create("codec", "opus", CodecConfig(sample_rate=rate)).decoder
    out = []
    for i, p in enumerate(packets):
        if i == 10:
            p = None  # lost
        elif i == 20:
            p = EncodedPacket(b"\xff" * 3, "opus", rate, 480)  # corrupt
        out.append(dec.decode(p).samples)
    y = np.concatenate(out)
    assert len(y) == len(packets) * 480 and np.all(np.isfinite(y))
    assert dec.concealed == 2
    # concealment continues the voice instead of dropping to silence
    assert np.sqrt(np.mean(y[10 * 480 : 11 * 480] ** 2)) > 0.01


def test_unsupported_rates_and_unknown_codecs_give_clear_errors(registry):
    with pytest.raises(ValueError, match="Opus does not support 22050 Hz; use one of 8000, 12000, 16000, 24000, 48000"):
        registry.create("codec", "opus", CodecConfig(sample_rate=22050))
    with pytest.raises(UnknownBackend, match="available: .*opus.*pcm16"):
        registry.create("codec", "mp3")
    enc = registry.create("codec", "opus", CodecConfig(sample_rate=24000)).encoder
    with pytest.raises(ValueError, match="resample first"):
        enc.encode(AudioChunk(np.zeros(100, np.float32), 22050))


def test_codec_stage_resamples_synthesised_chunks(registry):
    import asyncio

    from speech.channel import Channel
    from speech.codecs.stage import CodecStage
    from speech.events import EventLog

    async def main():
        stage = CodecStage(registry.create("codec", "opus", CodecConfig(sample_rate=24000)), EventLog())
        inbox, outbox = Channel(8), Channel(256)
        await inbox.put(AudioChunk(voiced(22050, 0.5), 22050, start=1.0, wall_time=1.0, text="x"))
        await inbox.put(AudioChunk(voiced(22050, 0.3), 22050, start=3.0, wall_time=3.0, text="y"))
        inbox.close()
        await stage.run(inbox, outbox)
        outbox.close()
        return [p async for p in outbox]

    packets = asyncio.run(main())
    assert {p.sample_rate for p in packets} == {24000}
    assert [p.wall_time for p in packets].count(1.0) == 25 and [p.wall_time for p in packets].count(3.0) == 15
    assert [p.seq for p in packets] == list(range(40))
