"""`speech translate INPUT --source xx --target yy`: speech in, translated speech out.

Runs ASR -> translation -> TTS -> codec on the embedded defaults and writes the translated speech
as the listener would hear it: each chunk starts at max(its emission time, the end of the previous
chunk), so the file shows the pipeline's latency (`--compact` drops the waits). By default the
input is fed as fast as the stages take it and latency is emulated on the simulated clock
(computation-aware); `--realtime` feeds it in real time on the wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="audio file (WAV, FLAC, Ogg Opus or Vorbis, MP3)")
    parser.add_argument("--source", default="en",
                        help="language spoken in INPUT, or auto: Whisper tells it from the first 30 s of speech, "
                             "among the languages translated into --target; a target it speaks is left out (default: en)")
    parser.add_argument("--target", default="es",
                        help="language to speak (default: es); several, comma-separated (es,pt,fr), share one "
                             "recogniser and write one WAV each")
    parser.add_argument("--output", "-o", help="translated speech, WAV (default: INPUT's name + .<target>.wav here; "
                                               "with several targets, OUTPUT's name + .<target>.wav)")
    parser.add_argument("--log", help="write the event log (JSON lines) here")
    parser.add_argument("--realtime", action="store_true", help="feed the input in real time on the wall clock")
    parser.add_argument("--play", action="store_true", help="play the translated speech through the speakers")
    parser.add_argument("--compact", action="store_true", help="write the chunks back to back, without the waits")
    parser.add_argument("--voice", default="default",
                        help="synthesiser: default (piper-joe for en; festival for ca where Festival's Catalan voice is "
                             "installed; pico for es, fr, de, it, ca, gl, pt where SVOX Pico is installed; else "
                             "espeak), piper-joe, festival, pico, espeak, "
                             "espeak:<eSpeak voice> (e.g. espeak:pt-br+m3), espeak:<path to an eSpeak voice file>, "
                             "or a local Piper .onnx voice")
    parser.add_argument("--codec", default="pcm16", choices=("pcm16", "opus"), help="codec between TTS and the listener")
    parser.add_argument("--codec-rate", type=int, default=24000, help="codec sample rate in Hz (Opus: 8/12/16/24/48 kHz)")
    parser.add_argument("--bitrate", type=int, default=24000, help="Opus bitrate in bit/s (default 24000)")
    parser.add_argument("--asr-model", default="whisper-base",
                        help="recogniser: whisper-base (default), whisper-tiny.en, pocketsphinx, or the path of a local "
                             "CTranslate2 Whisper folder (docs/models.md)")
    parser.add_argument("--mt-backend", default="default",
                        help="translator (apertium, bergamot, gemma-270m, the path of a local .gguf model: docs/models.md) "
                             "or path of translators, e.g. bergamot:en-pt,apertium:pt-es "
                             "(default: the best measured installed path for the pair)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress line and no summary")
    from speech.tts.pace import add_pace_arguments

    add_pace_arguments(parser)
    from .configuration import add_config_flag, add_device_flag

    add_config_flag(parser)
    add_device_flag(parser)


@dataclass
class TranslationResult:
    samples: object  # np.ndarray at `sample_rate`
    sample_rate: int
    chunks: int
    text: str  # everything that was synthesised
    source_duration: float
    wall_s: float
    records: list[dict]
    boundaries: list[int]
    stopped: str = ""  # the signal that stopped the input early ("SIGINT", "SIGTERM"); "" if read to its end
    peak: float = 0.0  # the input's loudest sample (full scale 1.0), as the recogniser got it


async def translate_file(
    path: str,
    config,
    registry,
    realtime: bool = False,
    compact: bool = False,
    log_path: str | None = None,
    play: bool = False,
    progress: bool = False,
) -> TranslationResult:
    """Run the whole pipeline on one file; returns the listener-timeline audio and the event log."""
    results = await translate_file_targets(path, config.for_target(config.all_targets[0]), registry, realtime,
                                           compact, log_path, play, progress)
    return next(iter(results.values()))


async def translate_file_targets(
    path: str,
    config,
    registry,
    realtime: bool = False,
    compact: bool = False,
    log_path: str | None = None,
    play: bool = False,
    progress: bool = False,
    stop_on_signal: bool = False,
) -> dict[str, TranslationResult]:
    """One recogniser, one translate -> TTS branch per target of `config`: a result per target.

    With `stop_on_signal` (the CLI), SIGINT or SIGTERM stops reading the input: what was read is
    still recognised, translated and spoken, and the results hold it; a second signal aborts."""
    from .audio import FileSource
    from .clock import make_clock
    from .events import EventLog
    from .pipeline import build_session
    from .progress import Progress
    from speech.codecs.stage import codec_config
    from speech.tts.sink import SpeechSink

    targets = config.all_targets
    if play and len(targets) > 1:
        raise ValueError("--play takes one target")
    clock = make_clock(realtime)
    live = LiveText(sys.stdout, sys.stderr.isatty() and progress, multi=len(targets) > 1) if progress else None
    log = EventLog(log_path, on_record=live)
    source = FileSource(path, sample_rate=16000, chunk_ms=config.chunk_ms, clock=clock)
    sinks = {}
    for target in targets:
        decoder = None
        if "codec" in config.stages:
            decoder = registry.create("codec", config.codec, codec_config(config)).decoder
        sinks[target] = SpeechSink(decoder=decoder, compact=compact, play=play and realtime,
                                   sample_rate=decoder.sample_rate if decoder is not None else None)
    # The live text is the progress on a pipe; the bar is drawn only on a terminal.
    bar = Progress(int(source.duration * 1000 / config.chunk_ms), label="translating",
                   enabled=sys.stderr.isatty() and progress)

    step = max(1, 1000 // config.chunk_ms)  # redraw once per second of source
    fed = [0]
    fed_end = [0.0]
    peak = [0.0]
    from .interrupt import InputStop, Tap

    stop = InputStop(bar) if stop_on_signal else None

    async def feed(outbox) -> None:
        async def counted(chunk) -> None:  # the ASR stage logs the input; this only shows progress
            await outbox.put(chunk)
            fed[0] += 1
            fed_end[0] = chunk.end
            if len(chunk.samples):
                peak[0] = max(peak[0], float(abs(chunk.samples).max()))
            if bar.tty and fed[0] % step == 0:
                spoken = sum(sink.chunks for sink in sinks.values())
                bar.update(step, status=f"{spoken} chunks spoken")

        reading = source(Tap(counted))
        if stop is None:
            await reading
        else:
            await stop.until_stopped(reading)

    if stop is not None:
        stop.install()
    try:
        session = build_session(registry, config, source=feed, sink=sinks, clock=clock, log=log)
        t0 = time.perf_counter()
        if realtime:
            clock.restart()
        await session.run()
        wall = time.perf_counter() - t0
        if bar.tty:
            bar.close()
        stopped = stop.cut if stop is not None else ""
        duration = fed_end[0] if stopped else source.duration  # an input stopped early lasts what was read
        log.write("end", source_duration=round(duration, 4), wall_time=round(clock.now() if realtime else wall, 4),
                  **({"stopped": stopped} if stopped else {}))
        for sink in sinks.values():
            sink.finish()
    finally:
        if stop is not None:
            stop.remove()
        log.close()
    results = {}
    for target, sink in sinks.items():
        # the shared records (recognition, end) and this target's
        records = [r for r in log.records if r.get("target", target) == target]
        spoken = [r["text"] for r in records if r.get("kind") == "audio" and r.get("stage") == "tts"]
        results[target] = TranslationResult(sink.render(), sink.sample_rate or 24000, sink.chunks, " ".join(spoken),
                                            duration, wall, records, sink.boundaries(), stopped, peak[0])
    return results


class LiveText:
    """Prints what each stage commits as it is committed: `[en] ...` recognised and `[es] ...`
    translated (at the source seconds consumed), `[spoken ...]` each synthesised chunk (at the time
    the listener hears it: after every earlier chunk, `play_start`), and `[voice]` when the relief
    voice takes over or hands back. Called from the EventLog (any thread)."""

    def __init__(self, out, tty: bool, multi: bool = False) -> None:
        self.out = out
        self.multi = multi  # several targets: each spoken chunk names its target
        self.prefix = "\r\x1b[K" if tty else ""  # clear the progress bar's line first

    def __call__(self, rec: dict) -> None:
        kind, stage = rec.get("kind"), rec.get("stage")
        if kind == "update" and rec.get("committed"):
            lang = rec.get("language") or stage
            words = " ".join(w["text"] for w in rec["committed"])
            line = f"[{lang} {rec.get('source_time', 0):6.2f}s] {words}"
        elif kind == "audio" and stage == "tts":
            target = f" {rec['target']}" if self.multi and rec.get("target") else ""
            heard = rec.get("play_start", rec.get("wall_time", 0))
            line = f"[spoken{target} {heard:6.2f}s] {rec.get('text', '')}"
        elif kind == "tts_voice":  # the relief voice takes over, or hands back (tts.pace)
            target = f" {rec['target']}" if self.multi and rec.get("target") else ""
            line = f"[voice{target}] {voice_switch(rec)}"
        else:
            return
        self.out.write(self.prefix + line + "\n")
        self.out.flush()


def voice_switch(rec: dict) -> str:
    """A `tts_voice` record in words: which voice speaks from here, and why."""
    from .tts.stage import relief_label

    if rec.get("voice") != "relief":
        return f"the main voice again: the listener is {rec.get('lag_s', 0):.1f} s behind"
    rtf = (f"; it takes {rec['voice_rtf']:.1f} s to synthesise each second of speech"
           if rec.get("voice_rtf") is not None else "")
    return (f"{relief_label(rec.get('relief_voice') or '')} speaks from here: the main voice would be heard "
            f"{rec.get('lag_s', 0):.1f} s late{rtf}")


def pipeline_config(args: argparse.Namespace):
    """The PipelineConfig of these arguments: defaults < --config FILE < the flags given."""
    from .configuration import resolve
    from .pipeline import parse_targets

    config = resolve("translate", args, fixed={"stages": ("asr", "mt", "tts", "codec")}).config
    try:
        targets = config.targets or parse_targets(config.target)  # --target es,pt: one branch each
    except ValueError as e:
        raise UserError(f"--target: {e}") from None
    return config.replace(target=targets[0], targets=targets if len(targets) > 1 else ())


def output_paths(args: argparse.Namespace, targets: tuple[str, ...]) -> dict[str, Path]:
    """One WAV per target: `--output` as given for one target, `NAME.<target>.wav` for several."""
    if args.output:
        from .audio import wav_outputs

        return wav_outputs(args.output, targets)
    return {t: Path(f"{Path(args.input).stem}.{t}.wav") for t in targets}


def run(args: argparse.Namespace) -> int:
    from .audio import probe_audio, write_wav
    from .backends import default_registry

    config = pipeline_config(args)
    targets = config.all_targets
    if config.source in targets:
        raise UserError(f"--source and --target are both {config.source!r}; give two different languages")
    if args.play and len(targets) > 1:
        raise UserError("--play takes one target; drop --play or give one --target")
    probe_audio(args.input)  # a clear error on a missing or unreadable input before any model loads
    outputs = output_paths(args, targets)
    from .budget import ThreadBudget

    registry = default_registry(ThreadBudget.for_machine(branches=len(targets)))  # one branch per target
    from .preflight import check_config

    if config.source == "auto":
        config = detected_source(args.input, config, registry, quiet=args.quiet)
        if targets == (config.source,):
            raise UserError(f"{args.input} is already in {config.source}, the language asked for; give another "
                            "--target")
        if config.source in targets:  # translated into the other targets
            from .auto_source import other_targets

            skipped = outputs.pop(config.source)
            if not args.quiet:
                print(f"{args.input} is in {config.source}: not translated into it, and no {skipped} written",
                      file=sys.stderr)
            config = other_targets(config, config.source)
            targets = config.all_targets
    check_config(config, registry)  # names, devices and paths, before anything loads
    # The voices' and the codec's own options (a codec rate) fail here, before the recogniser and
    # translator load.
    from speech.codecs.stage import codec_config
    from speech.tts.backends import create_synthesizer

    for target in targets:
        create_synthesizer(registry, target, config.voice, **config.tts_options.engine)
    registry.create("codec", config.codec, codec_config(config))
    if args.play:
        from speech.tts.sink import check_output_device

        check_output_device()
    results = asyncio.run(translate_file_targets(
        args.input, config, registry, realtime=args.realtime, compact=args.compact, log_path=args.log,
        play=args.play, progress=not args.quiet, stop_on_signal=True,
    ))
    for target, result in results.items():
        write_wav(outputs[target], result.samples, result.sample_rate)
    if args.play and not args.realtime:
        result = results[targets[0]]
        _play(result.samples, result.sample_rate)
    if not args.quiet:
        from .eval.listener import listener_latency
        from .tts.stage import fell_behind

        for target, result in results.items():
            output = outputs[target]
            read = (f"the first {result.source_duration:.1f} s of {config.source} audio (stopped by {result.stopped})"
                    if result.stopped else f"{result.source_duration:.1f} s of {config.source} audio")
            print(f"wrote {output} ({len(result.samples) / result.sample_rate:.1f} s, {result.chunks} chunks) "
                  f"from {read} in {result.wall_s:.1f} s")
            records = [r for r in result.records if r.get("target", target) == target]
            heard = listener_latency(records, result.source_duration)
            if heard:
                lags = f"; listener lag p50 {heard['lag_p50']:.1f} s, p90 {heard['lag_p90']:.1f} s" if "lag_p50" in heard else ""
                print(f"the listener hears the first word {heard['StartOffset']:.2f} s after the speaker began and the "
                      f"last {heard['EndOffset']:.2f} s after the speaker stopped{lags}")
            stats = next((r for r in records if r.get("kind") == "stats" and r.get("stage") == "tts"), {})
            if note := fell_behind(stats.get("words_relief", 0), stats.get("words_skipped", 0), stats.get("voice_rtf"),
                                   stats.get("relief_voice", "")):
                print(note)
            label = "spoken" if len(targets) == 1 else f"spoken ({target})"
            print(f"{label}: {result.text or nothing_heard(args.input, result.peak)}", file=sys.stdout)
    stopped = next(iter(results.values())).stopped
    return 128 + signal.Signals[stopped].value if stopped else 0  # the shell's code for a stopped command


def detected_source(path: str, config, registry, quiet: bool = False):  # noqa: ANN001
    """`config` with the language INPUT speaks as its source (`--source auto`): detected among the
    languages an installed path translates into every target (or that is a target itself, which
    the caller refuses by name)."""
    from speech.asr.language_id import file_language

    from .devices import check_devices
    from .languages import source_candidates

    check_devices(config, registry)  # an unknown recogniser or device is named before anything loads
    language, note = file_language(path, registry, config, source_candidates(registry, config))
    if not quiet:
        print(note, file=sys.stderr)
    return config.replace(source=language)


def nothing_heard(path: str, peak: float) -> str:
    """What to say when no speech was recognised: a recording too quiet for the speech detector
    (its loudest sample under -40 dBFS; speech peaking at -45 dBFS is still found) gets a hint."""
    import math

    said = f"nothing (no speech was recognised in {path})"
    if 0.0 < peak < 0.01:
        said += (f"; its loudest sample is at {20 * math.log10(peak):.0f} dBFS, and speech that quiet is taken "
                 "for silence: raise its level (e.g. sox IN OUT gain -n -3) and run it again")
    elif peak == 0.0:
        said += "; it is digital silence"
    return said


def _play(samples, rate: int) -> None:
    try:
        import sounddevice
    except (ImportError, OSError) as e:
        raise UserError(f"--play needs sounddevice and PortAudio ({e}); install libportaudio2") from None
    try:
        sounddevice.play(samples, rate)
        sounddevice.wait()
    except sounddevice.PortAudioError as e:
        raise UserError(f"--play: no usable audio output device ({e}); drop --play and open the WAV") from None
