"""`speech doctor --speed`: the verdict per target language from measured RTFs (fakes); the real
engines are measured through the command in tests/e2e/test_doctor_cli.py."""

from __future__ import annotations

import io

from speech.speedcheck import Measured, SpeedReport, print_report


def report(base_rtf: float, voices: dict[str, tuple[str, float]]) -> SpeedReport:
    return SpeedReport([Measured("whisper-base", "whisper-base", base_rtf, 12.0)],
                       [Measured(lang, engine, rtf, 5.0, 0.1) for lang, (engine, rtf) in voices.items()])


def test_a_voice_keeps_up_while_recogniser_and_voice_leave_room_on_the_cores():
    verdicts = dict(report(0.3, {"es": ("pico", 0.01), "en": ("piper-joe", 0.6), "pt": ("kokoro", 0.8)}).verdicts())
    assert verdicts["es"].startswith("keeps up live (RTF 0.30 + 0.01 = 0.31)")
    assert verdicts["en"].startswith("keeps up live with little room")  # 0.9: under 1, over 0.8
    assert verdicts["pt"].startswith("falls behind live (RTF 0.30 + 0.80 = 1.10 > 1)")
    assert "kokoro cannot say in time" in verdicts["pt"]


def test_without_whisper_base_there_is_no_verdict_and_a_failure_is_listed():
    r = SpeedReport([], [Measured("es", "pico", 0.01, 5.0, 0.1)], ["whisper-base: RuntimeError: no model"])
    assert r.verdicts() == []
    out = io.StringIO()
    print_report(r, out)
    assert "could not measure whisper-base: RuntimeError: no model" in out.getvalue()
    assert r.to_json()["live"] == {} and r.to_json()["voices"][0]["engine"] == "pico"
