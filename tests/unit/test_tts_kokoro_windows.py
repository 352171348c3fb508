"""Kokoro window by window (`tts.kokoro_windows`): where the windows fall, and bad options."""

from __future__ import annotations

import numpy as np
import pytest

from speech.tts.kokoro_windows import WindowConfig, plan, speech_span, word_frames


def test_windows_end_where_words_begin_and_grow():
    # words beginning every 10 frames (0.25 s) over 200 frames
    starts = list(range(0, 200, 10))
    windows = plan(200, starts, WindowConfig(first_s=0.6, growth=1.5))
    assert windows[0][:2] == (0, 30)  # at least 24 frames, to the next word's start
    assert all(b in starts or b == 200 for _, b, _ in windows)
    lengths = [b - a for a, b, _ in windows]
    assert all(later >= round(earlier * 1.5) for earlier, later in zip(lengths, lengths[1:-1]))
    assert [a for a, _, _ in windows[1:]] == [b for _, b, _ in windows[:-1]] and windows[-1][1] == 200
    # each window speaks the words that begin before its end
    assert [j for _, _, j in windows] == [3] + [b // 10 for _, b, _ in windows[1:-1]] + [20]


def test_a_short_piece_or_a_short_tail_is_not_cut():
    assert plan(40, [0, 10, 20, 30], WindowConfig(first_s=0.6)) == [(0, 40, 4)]  # the tail would be 10 frames
    assert plan(200, list(range(0, 200, 10)), WindowConfig(first_s=0.0)) == [(0, 200, 20)]
    windows = plan(100, [0, 30, 70, 95], WindowConfig(first_s=0.6, growth=1.0))
    assert windows == [(0, 30, 1), (30, 100, 4)]  # 70 -> 95 (25 frames) < 40: joined


def test_word_frames_follow_the_alignment():
    # tokens x frames: token 0 (padding) 2 frames, token 1 3 frames, token 2 (a space) 1, token 3 4
    per_frame = [0, 0, 1, 1, 1, 2, 3, 3, 3, 3]
    alignment = np.eye(4)[per_frame].T
    assert word_frames(alignment, [1, 3]) == [2, 6]


def test_only_the_phonemes_and_a_few_frames_either_side_are_decoded():
    # rows: padding 15 frames, "a" 5, space 1, "b" 6, "," 8, padding 1 (36 frames)
    per_frame = [0] * 15 + [1] * 5 + [2] + [3] * 6 + [4] * 8 + [5]
    alignment = np.eye(6)[per_frame].T
    assert speech_span(alignment, [1, 3], 3) == (12, 30)  # frames 15-26 spoken, 3 either side
    assert speech_span(alignment, [1, 3], 0) == (15, 27)
    assert speech_span(alignment, [1, 3], 20) == (0, 36)  # never past the piece
    assert speech_span(alignment, [1, 3], None) == (0, 36)  # None: every frame
    assert speech_span(alignment, [], 3) == (0, 36)  # nothing spoken: every frame


@pytest.mark.parametrize("kwargs", [dict(first_s=-1), dict(growth=0.5), dict(context_frames=0),
                                    dict(fade_frames=20)])
def test_bad_window_options_are_refused(kwargs):
    with pytest.raises(ValueError, match="Kokoro windows"):
        WindowConfig(**kwargs)


def test_each_phoneme_word_starts_at_its_first_known_symbol():
    from speech.tts.kokoro import first_tokens

    vocab = {c: i for i, c in enumerate("abcdeˈ ,.")}
    # "ˈab c, de." -> symbols ˈ a b _ c , _ d e . ; "x" is unknown and left out of the tokens
    assert first_tokens("ˈab c, de.", vocab) == [0, 4, 7]
    assert first_tokens("ab xc", vocab) == [0, 3]


def test_kokoro_refuses_window_options_out_of_range_by_name():
    from types import SimpleNamespace

    from speech.errors import UserError
    from speech.tts.kokoro import KokoroConfig, KokoroSynthesizer

    model = SimpleNamespace(styles={"jm_kumo": np.zeros((510, 256), np.float32)})
    for bad in (dict(window_s=-0.5), dict(window_growth=0.9)):
        with pytest.raises(UserError, match="window_s / window_growth"):
            KokoroSynthesizer(KokoroConfig(faster="model", **bad), model, espeak=None)
    with pytest.raises(UserError, match="whole_margin must be >= 0"):
        KokoroSynthesizer(KokoroConfig(faster="model", whole_margin=-1), model, espeak=None)
    for bad in (-1, "none", 2.5, True):
        with pytest.raises(UserError, match="edge_frames must be a whole number >= 0"):
            KokoroSynthesizer(KokoroConfig(faster="model", edge_frames=bad), model, espeak=None)
