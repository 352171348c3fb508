"""`speech doctor --speed`: the verdict per target language from measured RTFs (fakes); the real
engines are measured through the command in tests/e2e/test_doctor_cli.py."""

from __future__ import annotations

import io

from speech.speedcheck import Measured, SpeedReport, print_report


def report(base_rtf: float, voices: dict[str, tuple[str, float]], longest_step_rtf: float | None = None) -> SpeedReport:
    base = Measured("whisper-base", "whisper-base", base_rtf, 12.0, step_s=1.0, longest_step_s=3.0,
                    longest_step_rtf=longest_step_rtf)
    return SpeedReport([base], [Measured(lang, engine, rtf, 5.0, 0.1) for lang, (engine, rtf) in voices.items()])


def test_a_voice_keeps_up_while_recogniser_and_voice_leave_room_on_the_cores():
    verdicts = dict(report(0.3, {"es": ("pico", 0.01), "en": ("piper-joe", 0.6), "pt": ("kokoro", 0.8)}).verdicts())
    assert verdicts["es"].startswith("keeps up live (RTF 0.30 + 0.01 = 0.31)")
    assert verdicts["en"].startswith("keeps up live with little room")  # 0.9: under 1, over 0.8
    assert verdicts["pt"].startswith("falls behind live (RTF 0.30 + 0.80 = 1.10 > 1)")
    assert "kokoro cannot say in time" in verdicts["pt"]


def test_the_verdict_names_the_relief_voice_that_would_speak():
    from speech.speedcheck import relief_name

    assert relief_name("pt", "kokoro", installed=lambda v: True) == "pico"
    assert relief_name("pt", "kokoro", installed=lambda v: v != "pico") == "espeak"  # Pico not installed
    assert relief_name("es", "pico", installed=lambda v: True) == "espeak"  # Pico is the voice itself
    assert relief_name("en", "piper-joe", installed=lambda v: True) == "espeak"  # English: eSpeak NG first
    verdicts = dict(report(0.3, {"pt": ("kokoro", 0.8)}).verdicts())
    relief = relief_name("pt", "kokoro")
    assert verdicts["pt"].endswith(f"speaks what kokoro cannot say in time; --voice {relief} keeps up")


def test_without_whisper_base_there_is_no_verdict_and_a_failure_is_listed():
    r = SpeedReport([], [Measured("es", "pico", 0.01, 5.0, 0.1)], ["whisper-base: RuntimeError: no model"])
    assert r.verdicts() == []
    out = io.StringIO()
    print_report(r, out)
    assert "could not measure whisper-base: RuntimeError: no model" in out.getvalue()
    assert r.to_json()["live"] == {} and r.to_json()["voices"][0]["engine"] == "pico"


def test_a_recogniser_slower_than_real_time_is_judged_at_the_longer_step_it_takes_live():
    # whisper-base at RTF 1.29 at its 1-s step, 0.45 decoding every 3 s (the live stage's longest
    # step while behind): a light voice keeps up, with words committed later; a heavy one does not
    r = report(1.29, {"es": ("pico", 0.02), "pt": ("kokoro", 1.31)}, longest_step_rtf=0.45)
    verdicts = dict(r.verdicts())
    assert verdicts["es"] == ("keeps up live (RTF 0.45 decoding every 3 s + 0.02 = 0.47); "
                              "words are committed later than at the recogniser's own step")
    assert verdicts["pt"].startswith("falls behind live (RTF 0.45 decoding every 3 s + 1.31 = 1.76 > 1)")
    out = io.StringIO()
    print_report(r, out)
    assert "slower than real time at its own step here: live it decodes less often, at longest every 3 s" in out.getvalue()
    assert "every 3 s, as live while behind: RTF 0.45" in out.getvalue()


def test_a_recogniser_too_slow_even_at_its_longest_step_fails_every_language():
    verdicts = dict(report(2.5, {"es": ("pico", 0.02)}, longest_step_rtf=1.1).verdicts())
    assert verdicts["es"] == ("falls behind live (RTF 1.10 decoding every 3 s): "
                              "the recogniser alone is slower than real time")


def test_a_recogniser_that_keeps_up_at_its_own_step_is_judged_there():
    verdicts = dict(report(0.7, {"pt": ("kokoro", 0.4)}, longest_step_rtf=0.3).verdicts())
    assert verdicts["pt"].startswith("falls behind live (RTF 0.70 + 0.40 = 1.10 > 1)")  # not 0.3 + 0.4
