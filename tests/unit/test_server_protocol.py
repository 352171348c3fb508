import json

import numpy as np
import pytest

from speech.server import protocol as P
from speech.server.audio_input import ArrivalTimes, InputAudio, Pcm16Decoder
from speech.stats import percentile


def hello(**over):
    msg = {"type": "hello", "version": 1, "source": "en", "target": "es", "sample_rate": 48000,
           "codec": "pcm16", "output_codec": "pcm16", "token": "t"}
    msg.update(over)
    return msg


def test_hello_round_trips():
    h = P.parse_hello(hello())
    assert (h.source, h.target, h.sample_rate, h.codec, h.token) == ("en", "es", 48000, "pcm16", "t")
    assert P.parse_hello(P.parse_message(json.dumps(h.to_json()))) == h


@pytest.mark.parametrize("over,code", [
    ({"sample_rate": 4000}, "bad_sample_rate"),
    ({"sample_rate": 10 ** 9}, "bad_sample_rate"),
    ({"sample_rate": "16000"}, "bad_sample_rate"),
    ({"sample_rate": True}, "bad_sample_rate"),
    ({"sample_rate": 44100, "codec": "opus"}, "bad_sample_rate"),
    ({"codec": "mp3"}, "unknown_codec"),
    ({"output_codec": "flac"}, "unknown_codec"),
    ({"source": 5}, "bad_hello"),
    ({"source": "en;rm -rf"}, "bad_language"),
    ({"version": 3}, "bad_version"),
    ({"targets": []}, "bad_hello"),
    ({"targets": ["es", "en"]}, "bad_language"),
    ({"targets": ["es", 5]}, "bad_hello"),
    ({"targets": ["pt", "fr"]}, "bad_hello"),
    ({"resume": {"session": "x", "token": "t", "last_seq": -1}}, "bad_resume"),
    ({"resume": "abc"}, "bad_resume"),
    ({"type": "end"}, "hello_expected"),
    ({"token": ["x"]}, "bad_hello"),
])
def test_bad_hellos_name_the_problem(over, code):
    with pytest.raises(P.ProtocolError) as info:
        P.parse_hello(hello(**over))
    assert info.value.code == code
    assert info.value.message


@pytest.mark.parametrize("raw,code", [
    ("{not json", "bad_json"),
    ("[1, 2]", "bad_message"),
    ('{"type": 3}', "bad_message"),
    (b"\x00\x01", "unexpected_binary"),
    ("{" * 100000, "message_too_big"),
    ("[" * 3000 + "]" * 3000, "bad_json"),  # too deep for the parser
    ("[[[]]]", "bad_message"),
])
def test_bad_messages(raw, code):
    with pytest.raises(P.ProtocolError) as info:
        P.parse_message(raw)
    assert info.value.code == code


def test_pcm16_decoder_keeps_split_samples():
    samples = (np.arange(-5, 5, dtype=np.int16) * 1000).astype("<i2").tobytes()
    dec = Pcm16Decoder(16000)
    out = np.concatenate([dec.decode(samples[:3]), dec.decode(samples[3:])])
    assert np.allclose(out * 32768, np.arange(-5, 5) * 1000)


def test_input_audio_resamples_to_16k_and_records_arrivals():
    audio = InputAudio("pcm16", 48000)
    tone = (np.sin(np.arange(48000) / 10) * 10000).astype("<i2")
    chunks = [audio.frame(tone[i:i + 4800].tobytes(), wall=0.1 * (k + 1)) for k, i in enumerate(range(0, 48000, 4800))]
    tail = audio.finish(wall=1.05)
    total = sum(len(c.samples) for c in chunks + [tail] if c is not None)
    assert total == 16000
    assert all(c.sample_rate == 16000 for c in chunks if c)
    # starts are contiguous on the source timeline
    starts = [c.start for c in chunks if c]
    assert starts == sorted(starts) and starts[0] == 0.0
    # arrival of 0.5 s of audio: the chunk that held it arrived at ~0.5-0.7 s wall
    assert 0.45 <= audio.arrivals.arrival(0.5) <= 0.75


@pytest.mark.parametrize("rate", [8000, 44100, 48000])
def test_full_scale_input_is_clipped_after_resampling(rate):
    # Full-scale noise of random signs rings in the resampler's filter (1.8-2.5x full scale).
    audio = InputAudio("pcm16", rate)
    signs = np.where(np.random.default_rng(0).standard_normal(rate) > 0, 32767, -32768).astype("<i2")
    chunks = [audio.frame(signs[i:i + 960].tobytes(), wall=0.0) for i in range(0, len(signs), 960)]
    samples = np.concatenate([c.samples for c in chunks + [audio.finish(wall=1.0)] if c is not None])
    assert np.abs(samples).max() == pytest.approx(1.0, abs=1e-4)


def test_opus_input_decodes():
    pytest.importorskip("opuslib")
    from speech.server.client import encode_frames

    t = np.arange(16000) / 16000
    frames, rate, step = encode_frames((0.5 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), 16000, "opus", 20)
    audio = InputAudio("opus", rate)
    out = [audio.frame(f, 0.0) for f in frames]
    assert abs(audio.seconds - 1.0) < 0.03
    with pytest.raises(P.ProtocolError) as info:
        InputAudio("opus", 16000).frame(b"\xff" * 7, 0.0)
    assert info.value.code == "bad_audio"


def test_oversized_frame_is_refused():
    with pytest.raises(P.ProtocolError) as info:
        InputAudio("pcm16", 16000).frame(b"\0" * (P.MAX_AUDIO_FRAME_BYTES + 2), 0.0)
    assert info.value.code == "frame_too_big"


def test_arrival_and_percentile():
    arr = ArrivalTimes()
    assert arr.arrival(1.0) is None
    arr.add(0.1, 5.0)
    arr.add(0.2, 6.0)
    assert arr.arrival(0.05) == 5.0 and arr.arrival(0.2) == 6.0 and arr.arrival(9) == 6.0
    # a word said 0.05 s before its chunk's end was said 0.05 s before the chunk arrived
    assert arr.spoken(0.05) == pytest.approx(4.95) and arr.spoken(0.2) == 6.0 and arr.spoken(0.15) == pytest.approx(5.95)
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([], 90) is None


def test_memory_trim_is_safe_to_call():
    import sys

    from speech.server.memory import _libc, trim

    if _libc() is None:
        assert not sys.platform.startswith("linux")  # glibc is found wherever the server runs on Linux
        assert trim() is False  # elsewhere a no-op that says it released nothing
        return
    # 20 MB of heap blocks freed below one that stays (so the heap top cannot shrink by itself):
    # only malloc_trim hands those pages back, and it says so.
    blocks = [bytes(2048) for _ in range(10_000)]
    pinned = blocks[-1]
    del blocks
    assert trim() is True
    assert pinned
