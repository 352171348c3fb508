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
    # 20 ms frames; the last block holds only the chunk's 240 samples (no padding played)
    assert len(packets) == 26 and [p.samples for p in packets] == [480] * 25 + [240]
    assert packets[0].start == 2.0 and packets[1].start == pytest.approx(2.02) and packets[-1].wall_time == 2.5
    assert len(y) == len(x) and np.max(np.abs(y - x)) < 1e-4


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


@pytest.mark.parametrize("codec", ["pcm16", "opus"])
def test_frame_padding_is_not_heard_between_chunks(registry, codec):
    """A chunk's last partial frame padded to 20 ms would be played: up to 20 ms of zeros at
    every join. PCM16 sends a short last block; Opus ends a chunk with shorter Opus frames
    (10/5/2.5 ms), padding less than 2.5 ms, and each packet stays decodable on its own frame size."""
    from speech.tts.joins import JoinConfig, measure_joins, shape_edges
    from speech.tts.sink import SpeechSink

    rate = 24000
    pair = registry.create("codec", codec, CodecConfig(sample_rate=rate))
    # 12132 samples: 25 whole 20 ms frames and 132 samples (5.5 ms) left for the last one
    chunks = [shape_edges(voiced(rate, 0.6)[:12132], rate, 8), shape_edges(voiced(rate, 0.3), rate, 8)]
    packets = []
    for i, x in enumerate(chunks):
        packets += [*pair.encoder.encode(AudioChunk(x, rate, start=i, wall_time=i, text=str(i))), *pair.encoder.flush()]
    tail = [p.samples for p in packets if p.wall_time == 0][25:]
    assert tail == ([132] if codec == "pcm16" else [120, 60])
    if codec == "opus":  # a client decodes each packet with its announced `samples` as the frame size
        client = opuslib.Decoder(rate, 1)
        assert all(len(client.decode(p.data, p.samples)) == 2 * p.samples for p in packets)
    sink = SpeechSink(decoder=pair.decoder, compact=True, sample_rate=rate)
    for p in packets:
        sink.add(pair.decoder.decode(p))
    overlap = int(rate * JoinConfig.fade_ms / 1000)
    extra = len(sink.render()) - (sum(len(x) for x in chunks) - overlap)
    assert extra == (0 if codec == "pcm16" else 60 - 12)  # Opus: the last 2.5 ms frame held 12 samples
    [join] = measure_joins(sink.render(), rate, sink.boundaries())
    assert join.gap_ms == 0  # the faded edges cross-fade: no silent 5 ms frame at the join
    # nothing of the first chunk was cut
    y = sink.render()[: len(chunks[0]) - overlap]
    assert np.sqrt(np.mean(y**2)) == pytest.approx(np.sqrt(np.mean(chunks[0][:-overlap] ** 2)), rel=0.1)


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
