"""`speech stream`'s live display on a pipe: one line per update that changes what is shown."""

from __future__ import annotations

from speech.server.client_cli import Printer


def event(kind, committed, tentative, target=None, lag=0.3):
    e = {"type": kind, "committed": committed, "tentative": tentative, "lag": lag}
    if target:
        e["target"] = target
    return e


def test_an_update_that_changes_nothing_shown_is_not_printed_again(capsys):
    show = Printer(as_json=False)
    show(event("recognition", ["hello"], ["wor"]))
    show(event("recognition", [], ["wor"]))  # the same tentative tail: nothing new
    show(event("translation", ["hola"], [], target="es"))
    show(event("recognition", ["world."], []))
    show(event("translation", [], [], target="es", lag=None))  # the closing update of a stream
    show(event("recognition", [], []))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["heard: hello [wor]  (lag 0.30 s)", "said es: hola  (lag 0.30 s)",
                     "heard: hello world.  (lag 0.30 s)"]


def test_speech_translate_prints_a_spoken_piece_at_the_time_the_listener_hears_it():
    """A piece synthesised while an earlier one still plays is heard when that one ends
    (`play_start`), not when it was made (`wall_time`)."""
    import io

    from speech.translate_cmd import LiveText

    out = io.StringIO()
    show = LiveText(out, tty=False)
    show({"kind": "update", "stage": "mt", "language": "es", "source_time": 3.6,
          "committed": [{"text": "es"}, {"text": "un"}]})
    show({"kind": "audio", "stage": "tts", "wall_time": 4.38, "play_start": 5.31, "text": "es un"})
    show({"kind": "audio", "stage": "tts", "wall_time": 6.0, "text": "romántico"})  # no listener timeline
    assert out.getvalue().splitlines() == ["[es   3.60s] es un", "[spoken   5.31s] es un", "[spoken   6.00s] romántico"]


def test_speech_translate_says_when_the_relief_voice_takes_over_and_hands_back():
    import io

    from speech.translate_cmd import LiveText

    out = io.StringIO()
    show = LiveText(out, tty=False, multi=True)
    show({"kind": "tts_voice", "stage": "tts", "target": "pt", "voice": "relief", "lag_s": 7.83, "voice_rtf": 3.1,
          "relief_voice": "pico"})
    show({"kind": "tts_voice", "stage": "tts", "target": "pt", "voice": "main", "lag_s": 2.5})
    assert out.getvalue().splitlines() == [
        "[voice pt] the relief voice (pico) speaks from here: the main voice would be heard 7.8 s late; "
        "it takes 3.1 s to synthesise each second of speech",
        "[voice pt] the main voice again: the listener is 2.5 s behind",
    ]


def test_the_done_line_says_how_late_each_target_s_listener_heard_the_words(capsys):
    """The text lag leaves out the wait for the voice; the listener's lag and the words the relief
    voice spoke are printed per target."""
    show = Printer(as_json=False)
    summary = {"audio_in_s": 11.4, "recognized_words": 20, "translated_words": 26, "audio_out_s": 7.8,
               "lag_p50": 1.48, "lag_p90": 1.75,
               "targets": {"pt": {"synthesis_lag_p50": 6.1, "synthesis_lag_p90": 8.2, "words_relief": 18,
                                  "relief_voice": "pico", "words_unspoken": 0},
                           "es": {"synthesis_lag_p50": 3.4, "synthesis_lag_p90": 4.0, "words_relief": 0},
                           "de": {"synthesis_lag_p50": None}}}  # nothing spoken yet
    show({"type": "done", "summary": summary})
    assert capsys.readouterr().out.splitlines() == [
        "done: 11.4 s in, 20 words heard, 26 translated, 7.8 s spoken, text lag p50 1.48 p90 1.75 s",
        "  pt: the listener heard each word p50 6.10 p90 8.20 s after it was said; 18 words spoken by the relief voice (pico)",
        "  es: the listener heard each word p50 3.40 p90 4.00 s after it was said",
    ]
