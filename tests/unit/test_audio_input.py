"""Bad and unusual input files for speech.audio: a clear error naming the file, or correct handling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from speech.audio import AudioInputError, FileSource, iter_chunks, read_audio


def tone(seconds: float, rate: int = 16000, amp: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amp * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def test_missing_file(tmp_path):
    with pytest.raises(AudioInputError, match="no such file") as e:
        read_audio(tmp_path / "nope.wav")
    assert "nope.wav" in str(e.value)


def test_folder(tmp_path):
    with pytest.raises(AudioInputError, match="folder"):
        read_audio(tmp_path)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.wav"
    p.write_bytes(b"")
    with pytest.raises(AudioInputError, match="empty") as e:
        read_audio(p)
    assert str(p) in str(e.value)


def test_not_audio(tmp_path):
    p = tmp_path / "notes.wav"
    p.write_text("this is not audio\n" * 50)
    with pytest.raises(AudioInputError, match="not a readable audio file") as e:
        read_audio(p)
    assert "notes.wav" in str(e.value)


def test_truncated_wav_is_read_up_to_the_cut_or_rejected_clearly(tmp_path):
    p = tmp_path / "cut.wav"
    sf.write(p, tone(1.0), 16000, subtype="PCM_16")
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    try:
        samples, rate, info = read_audio(p)
    except AudioInputError as e:
        assert "cut.wav" in str(e)
    else:
        assert rate == 16000 and 0 < len(samples) <= 16000 // 2 + 1
        assert np.allclose(samples[:100], tone(1.0)[:100], atol=1e-3)


def test_header_only_wav(tmp_path):
    p = tmp_path / "header.wav"
    sf.write(p, tone(1.0), 16000, subtype="PCM_16")
    p.write_bytes(p.read_bytes()[:44])
    with pytest.raises(AudioInputError) as e:
        read_audio(p)
    assert "header.wav" in str(e.value)


@pytest.mark.parametrize("rate", [4000, 7999])
def test_unsupported_low_rate(tmp_path, rate):
    p = tmp_path / "low.wav"
    sf.write(p, tone(0.5, rate), rate)
    with pytest.raises(AudioInputError, match="sample rate") as e:
        read_audio(p)
    assert "low.wav" in str(e.value)


@pytest.mark.parametrize("rate", [8000, 22050, 44100, 48000])
def test_supported_rates_are_resampled_to_16k(tmp_path, rate):
    p = tmp_path / f"r{rate}.wav"
    sf.write(p, tone(1.0, rate), rate)
    src = FileSource(str(p), chunk_ms=100)
    chunks = list(src.chunks())
    total = sum(len(c.samples) for c in chunks)
    assert all(c.sample_rate == 16000 for c in chunks)
    assert abs(total - 16000) <= 16  # one second in, one second out


@pytest.mark.parametrize("fmt,subtype,rate", [("FLAC", None, 44100), ("OGG", "OPUS", 48000), ("OGG", "VORBIS", 44100),
                                               ("MP3", None, 44100)])
def test_compressed_formats_are_read_whole(tmp_path, fmt, subtype, rate):
    p = tmp_path / f"tone.{fmt.lower()}"
    sf.write(p, tone(2.0, rate), rate, format=fmt, subtype=subtype)
    chunks = list(FileSource(str(p), chunk_ms=100).chunks())
    samples = np.concatenate([c.samples for c in chunks])
    assert abs(len(samples) - 32000) <= 1600  # an encoder may pad a frame
    assert 0.4 < np.max(np.abs(samples)) < 0.7


def test_stereo_is_mixed_to_mono(tmp_path):
    p = tmp_path / "stereo.wav"
    left = tone(0.5)
    sf.write(p, np.stack([left, -left], axis=1), 16000)  # opposite phases cancel
    samples, rate, info = read_audio(p)
    assert info.channels == 2 and samples.ndim == 1
    assert np.max(np.abs(samples)) < 1e-3
    sf.write(p, np.stack([left, left], axis=1), 16000)
    samples, _, _ = read_audio(p)
    assert np.allclose(samples, left, atol=1e-4)


def test_clip_shorter_than_one_chunk(tmp_path):
    p = tmp_path / "short.wav"
    sf.write(p, tone(0.03), 16000)
    chunks = list(FileSource(str(p), chunk_ms=100).chunks())
    assert len(chunks) == 1 and len(chunks[0].samples) == 480


def test_clipping_is_reported(tmp_path):
    p = tmp_path / "loud.wav"
    sf.write(p, np.clip(tone(1.0, amp=3.0), -1, 1), 16000, subtype="FLOAT")
    _, _, info = read_audio(p)
    assert info.clipped_fraction > 0.3


def test_chunks_cover_the_whole_file_in_order():
    samples = tone(1.05)
    chunks = list(iter_chunks(samples, 16000, 16000, 100))
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert np.array_equal(np.concatenate([c.samples for c in chunks]), samples)
    assert chunks[-1].end == pytest.approx(1.05)


def test_bad_chunk_size():
    with pytest.raises(ValueError, match="chunk size"):
        list(iter_chunks(tone(0.1), 16000, 16000, 0))


def test_output_names_are_wav_files_one_per_target(tmp_path):
    from speech.audio import wav_outputs, write_wav
    from speech.errors import UserError

    assert wav_outputs("talk.wav", ("es",)) == {"es": Path("talk.wav")}
    assert wav_outputs("talk", ("es",)) == {"es": Path("talk.wav")}  # soundfile needs the extension
    assert wav_outputs("out/talk.WAV", ("es", "pt")) == {"es": Path("out/talk.es.WAV"), "pt": Path("out/talk.pt.WAV")}
    for name in ("talk.mp3", "talk.ogg", "talk.v2"):
        with pytest.raises(UserError, match=f"--output {name}: the translated speech is written as WAV"):
            wav_outputs(name, ("es",))
    path = wav_outputs(tmp_path / "talk", ("es",))["es"]
    write_wav(path, np.zeros(160, np.float32), 16000)
    assert sf.info(str(path)).format == "WAV"
