"""`speech doctor --speed`: how fast this machine runs the default recognisers and voices, and
whether each default voice keeps up live beside the recogniser.

Everything is measured here, on speech the project makes itself (the English voice reads a
paragraph for the recognisers; each voice reads one sentence of its language), so the check needs
no recording. RTF = compute seconds / seconds of audio, each engine measured alone after one
warm-up call. Live, the recogniser and the voice share the cores, so a pair keeps up when the sum
of their RTFs stays under 1 with room to spare; above it the listener falls behind and the relief
voice (SVOX Pico where installed, else eSpeak NG) speaks what the voice cannot say in time
(docs/synthesis.md). A recogniser slower than real time at its own step is not the end of it:
live, the stage waits for more audio while it is behind (asr.stage, up to `max_update_factor`
times its step), so the recogniser is also measured at that longest step, and where its own step
is too slow the verdict counts that one, with words committed later.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

# What the voices read: one sentence each, about as long as the chunker's longest piece (10 words).
SENTENCES = {
    "en": "The weather was fine this morning, so we walked to the old market by the river.",
    "es": "Hacía buen tiempo esta mañana, así que fuimos andando al viejo mercado junto al río.",
    "pt": "O tempo estava bom esta manhã, então fomos a pé ao velho mercado perto do rio.",
    "fr": "Il faisait beau ce matin, alors nous sommes allés à pied au vieux marché près de la rivière.",
    "de": "Das Wetter war heute Morgen schön, also gingen wir zu Fuß zum alten Markt am Fluss.",
    "it": "Stamattina il tempo era bello, così siamo andati a piedi al vecchio mercato vicino al fiume.",
    "ca": "Aquest matí feia bon temps, així que vam anar a peu al vell mercat a prop del riu.",
    "gl": "Esta mañá facía bo tempo, así que fomos a pé ao vello mercado preto do río.",
}
# What the recognisers hear: the English voice reading a short paragraph (about 12 s).
PARAGRAPH = ("The weather was fine this morning, so we walked to the old market by the river. "
             "Most of the stalls were still closed, but the baker had already sold half of his bread. "
             "We bought two loaves and some cheese, and then we sat on a bench near the water.")
RECOGNISERS = ("whisper-base", "whisper-tiny.en")
RELIEF_NAMES = {"pico": "SVOX Pico", "espeak": "eSpeak NG"}
KEEPS_UP = 0.8  # the sum of RTFs under which a pair keeps up live with room to spare
JUST = 1.0


def relief_name(language: str, engine: str, installed: Callable[[str], bool] | None = None) -> str:
    """The relief voice that speaks for `engine` in `language` by default (tts.stage.relief_voice):
    the first of its candidates that is installed and is not the voice itself."""
    from speech.tts.stage import relief_candidates

    if installed is None:
        from speech.models.voices import pico_installed

        def installed(voice: str) -> bool:
            return voice != "pico" or pico_installed(language)
    return next((c for c in relief_candidates(language, engine) if installed(c)), "espeak")


@dataclass
class Measured:
    name: str  # what was measured: a recogniser ("whisper-base") or a target language ("pt")
    engine: str  # the recogniser or synthesiser
    rtf: float
    audio_s: float
    first_audio_s: float | None = None  # voices: from the call to the first sample of a sentence
    step_s: float | None = None  # recognisers: their own decode step
    longest_step_s: float | None = None  # recognisers: the step the live stage lengthens to while behind
    longest_step_rtf: float | None = None  # recognisers: RTF decoding at that step

    def live_rtf(self) -> tuple[float, float | None]:
        """(the recogniser's RTF live, the step it decodes at when that is not its own): its own
        step's RTF where that keeps up alone, else the longest step's."""
        if self.rtf <= JUST or self.longest_step_rtf is None:
            return self.rtf, None
        return self.longest_step_rtf, self.longest_step_s


@dataclass
class SpeedReport:
    recognisers: list[Measured] = field(default_factory=list)
    voices: list[Measured] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "what: why" for an engine that could not run

    def base(self) -> Measured | None:
        """whisper-base's measurement, which the verdicts are made beside (None: not measured)."""
        return next((r for r in self.recognisers if r.engine == "whisper-base"), None)

    def verdicts(self) -> list[tuple[str, str]]:
        """(target language, what its listeners live through live, beside whisper-base)."""
        base = self.base()
        if base is None:
            return []
        rtf, step = base.live_rtf()
        at = f" decoding every {step:g} s" if step else ""
        out = []
        for v in self.voices:
            total = rtf + v.rtf
            sums = f"RTF {rtf:.2f}{at} + {v.rtf:.2f} = {total:.2f}"
            if rtf > JUST:
                say = f"falls behind live (RTF {rtf:.2f}{at}): the recogniser alone is slower than real time"
            elif total <= KEEPS_UP:
                say = f"keeps up live ({sums})"
            elif total <= JUST:
                say = f"keeps up live with little room ({sums})"
            else:
                relief = relief_name(v.name, v.engine)
                say = (f"falls behind live ({sums} > 1): {RELIEF_NAMES[relief]} speaks what {v.engine} cannot "
                       f"say in time; --voice {relief} keeps up")
            if step and total <= JUST:
                say += "; words are committed later than at the recogniser's own step"
            out.append((v.name, say))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"recognisers": [asdict(r) for r in self.recognisers], "voices": [asdict(v) for v in self.voices],
                "failed": self.failed, "live": dict(self.verdicts())}


def measure_voice(registry: Any, language: str, text: str) -> Measured:
    from speech.tts.backends import create_synthesizer, synthesizer_name

    synth = create_synthesizer(registry, language)
    list(synth.synthesize(text.split(",")[0]))  # warm-up: models and phonemisers load on the first call
    t0 = time.perf_counter()
    first = None
    samples = 0
    rate = 1
    for chunk in synth.synthesize(text):
        if first is None:
            first = time.perf_counter() - t0
        samples += len(chunk.samples)
        rate = chunk.sample_rate
    took = time.perf_counter() - t0
    audio = samples / rate
    return Measured(language, synthesizer_name(language), took / max(audio, 1e-9), audio, first)


def measure_recogniser(registry: Any, model: str, samples: Any, rate: int) -> Measured:
    """The recogniser's RTF at its own step and at the longest step the live stage takes while it
    is behind (each on the simulated clock, with a fixed step)."""
    from speech.asr.evaluate import stream
    from speech.asr.stage import AsrOptions

    stream(registry, model, "default", "en", samples[: rate * 2], rate)  # warm-up: the model loads
    audio = len(samples) / rate
    own = stream(registry, model, "default", "en", samples, rate)
    step = registry.config("recognizer", model).update_s
    longest = step * AsrOptions().max_update_factor
    slow = stream(registry, model, "default", "en", samples, rate,
                  options=AsrOptions(update_s=longest, max_behind_s=float("inf")))
    return Measured(model, model, own.compute_s / audio, audio, step_s=step, longest_step_s=longest,
                    longest_step_rtf=slow.compute_s / audio)


def run_speed_check(registry: Any, languages: tuple[str, ...] = tuple(SENTENCES),
                    progress: Callable[[str], None] | None = None) -> SpeedReport:
    """Measure the recognisers on the English voice's paragraph, then each language's default voice."""
    import numpy as np

    from speech.tts.backends import create_synthesizer

    say = progress or (lambda _: None)
    report = SpeedReport()
    say("the English voice reads a paragraph for the recognisers")
    chunks = list(create_synthesizer(registry, "en").synthesize(PARAGRAPH))
    samples = np.concatenate([c.samples for c in chunks]).astype(np.float32)
    rate = chunks[0].sample_rate
    for model in RECOGNISERS:
        say(f"recogniser {model}")
        try:
            report.recognisers.append(measure_recogniser(registry, model, samples, rate))
        except Exception as e:  # noqa: BLE001 - a missing engine is reported, the rest still measured
            report.failed.append(f"{model}: {type(e).__name__}: {e}")
    for language in languages:
        say(f"voice {language}")
        try:
            report.voices.append(measure_voice(registry, language, SENTENCES[language]))
        except Exception as e:  # noqa: BLE001
            report.failed.append(f"voice {language}: {type(e).__name__}: {e}")
    return report


def print_report(report: SpeedReport, out: Any = sys.stdout) -> None:
    import os

    out.write(f"\nspeed (measured here, {os.cpu_count()} cores; RTF = compute seconds / audio seconds)\n")
    for r in report.recognisers:
        steps = f", a decode every {r.step_s:g} s" if r.step_s else ""
        if r.longest_step_rtf is not None:
            steps += f"; every {r.longest_step_s:g} s, as live while behind: RTF {r.longest_step_rtf:.2f}"
        out.write(f"  {r.name:24} RTF {r.rtf:.2f}  ({r.audio_s:.1f} s of English speech{steps})\n")
    for v in report.voices:
        first = f", first audio of a sentence after {v.first_audio_s:.2f} s" if v.first_audio_s is not None else ""
        out.write(f"  {'voice ' + v.name + ' (' + v.engine + ')':24} RTF {v.rtf:.2f}{first}\n")
    for what in report.failed:
        out.write(f"  could not measure {what}\n")
    verdicts = report.verdicts()
    base = report.base()
    if base is not None and base.live_rtf()[1]:
        out.write(f"whisper-base is slower than real time at its own step here: live it decodes less often, "
                  f"at longest every {base.longest_step_s:g} s\n")
    if verdicts:
        out.write("live, into each language, beside whisper-base:\n")
        for name, say in verdicts:
            out.write(f"  {name:4} {say}\n")
