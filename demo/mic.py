"""`speech mic`: live translation in the terminal: microphone (or a recording) in, speaker out.

Capture runs in PortAudio's thread and hands blocks to the event loop; the first link drops the
oldest audio when the pipeline falls behind (late speech is worse than a lost frame), every other
link blocks. Playback pulls from a queue in PortAudio's callback. Text is shown live: committed
words plain, the tentative tail dimmed.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", default="en",
                        help="spoken language, or auto: told from the first 1-4 s of speech (default en)")
    parser.add_argument("--target", default="es", help="language to translate into (default es)")
    parser.add_argument("--input-file", type=Path, help="play this recording in real time instead of the microphone")
    parser.add_argument("--output-file", type=Path, help="also write the translated speech to this WAV file")
    parser.add_argument("--no-playback", action="store_true", help="do not play the translation (no output device)")
    parser.add_argument("--seconds", type=float, help="stop listening after this many seconds")
    parser.add_argument("--input-device", help="sounddevice input device (name or number; see --list-devices)")
    parser.add_argument("--output-device", help="sounddevice output device")
    parser.add_argument("--list-devices", action="store_true", help="list audio devices and exit")
    parser.add_argument("--asr-model", default="whisper-tiny.en",
                        help="recogniser (default: whisper-tiny.en for English speech, whisper-base for any other "
                             "language and for auto)")
    parser.add_argument("--mt-backend", default="default",
                        help="translator (apertium, bergamot, gemma-270m, a local .gguf file) or a path of "
                             "translators, e.g. bergamot:en-pt,apertium:pt-es (default: the best measured "
                             "installed path for the pair)")
    parser.add_argument("--voice", default="default", help="synthesis voice (default: the target language's)")
    parser.add_argument("--log", type=Path, help="write the session's event log (JSON lines) here")
    parser.add_argument("--pipeline", help=argparse.SUPPRESS)  # module:function, a custom factory (tests)
    from ..configuration import add_config_flag, add_device_flag

    add_config_flag(parser)
    from speech.tts.pace import add_pace_arguments

    add_pace_arguments(parser)
    add_device_flag(parser)


def listener_summary(records: list[dict], source_length: float) -> str:
    """When the listener heard the translation (speech.eval.listener, the listener timeline): the
    first word after the speaker began, and each word after it was said ("": nothing heard)."""
    from ..eval.listener import listener_latency

    heard = listener_latency(records, source_length)
    if "lag_p50" not in heard:
        return ""
    return (f"the listener heard the first word {heard['StartOffset']:.2f} s after the speaker began; "
            f"listener lag p50 {heard['lag_p50']:.1f} s, p90 {heard['lag_p90']:.1f} s")


class LiveText:
    """Two live lines (heard / translated); one printed line per commit when not on a terminal."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.committed = {"asr": [], "mt": []}
        self.tentative = {"asr": [], "mt": []}
        self._drawn = False

    def update(self, stage: str, record: dict) -> None:
        new = [w["text"] for w in record.get("committed", [])]
        self.committed[stage].extend(new)
        self.tentative[stage] = [w["text"] for w in record.get("tentative", [])]
        if self.tty:
            self._redraw()
        elif new:
            label = "heard" if stage == "asr" else "said "
            print(f"{label}: {' '.join(self.committed[stage])}", file=self.stream, flush=True)

    def _redraw(self) -> None:
        width = 200
        lines = []
        for stage, label in (("asr", "heard"), ("mt", "said ")):
            text = " ".join(self.committed[stage])[-width:]
            tail = " ".join(self.tentative[stage])
            lines.append(f"{label}: {text} \x1b[2m{tail}\x1b[0m")
        up = "\x1b[2F" if self._drawn else ""
        self.stream.write(up + "".join(f"\x1b[2K{line}\n" for line in lines))
        self.stream.flush()
        self._drawn = True


class Player:
    """Plays float32 chunks through a sounddevice OutputStream fed by its callback."""

    def __init__(self, sample_rate: int, device: Any = None) -> None:
        import sounddevice as sd

        self._queue: deque[np.ndarray] = deque()
        self._lock = threading.Lock()
        self._drained = threading.Event()
        self._drained.set()
        self.stream = sd.OutputStream(samplerate=sample_rate, channels=1, dtype="float32",
                                      device=device, callback=self._callback)
        self.stream.start()

    def _callback(self, out: np.ndarray, frames: int, time: Any, status: Any) -> None:
        filled = 0
        with self._lock:
            while filled < frames and self._queue:
                head = self._queue[0]
                take = min(len(head), frames - filled)
                out[filled : filled + take, 0] = head[:take]
                filled += take
                if take == len(head):
                    self._queue.popleft()
                else:
                    self._queue[0] = head[take:]
            if not self._queue:
                self._drained.set()
        out[filled:, 0] = 0.0

    def play(self, samples: np.ndarray) -> None:
        with self._lock:
            self._queue.append(samples.astype(np.float32))
            self._drained.clear()

    def close(self, wait: bool = True) -> None:
        if wait:
            self._drained.wait(timeout=30)
        self.stream.stop()
        self.stream.close()


def mic_source(args: argparse.Namespace, clock: Any, stop: asyncio.Event, dropped: list[float]) -> Callable[[Any], Any]:
    """A source reading the default (or chosen) input device, resampled to 16 kHz.

    Live audio never waits: when the pipeline's first link is full the chunk is dropped and
    counted (`dropped[0]`, seconds), since speech heard late is worse than a lost frame.
    """
    import sounddevice as sd

    from ..audio import StreamingResampler
    from ..types import AudioChunk

    try:
        info = sd.query_devices(args.input_device, "input")
    except (ValueError, sd.PortAudioError) as e:
        raise UserError(f"no usable input device ({e}); see --list-devices, or use --input-file") from None
    rate = int(info["default_samplerate"])

    async def source(outbox: Any) -> None:
        loop = asyncio.get_running_loop()
        blocks: asyncio.Queue[np.ndarray] = asyncio.Queue()

        def callback(data: np.ndarray, frames: int, time: Any, status: Any) -> None:
            loop.call_soon_threadsafe(blocks.put_nowait, data[:, 0].copy())

        resampler = StreamingResampler(rate, 16000)
        position = [0, 0]  # samples produced, chunks produced

        def emit(samples: np.ndarray) -> None:
            if len(samples) == 0:
                return
            chunk = AudioChunk(samples, 16000, position[0] / 16000, position[1], wall_time=clock.now())
            if not outbox.put_nowait(chunk):
                dropped[0] += chunk.duration
            position[0] += len(samples)
            position[1] += 1

        with sd.InputStream(samplerate=rate, channels=1, dtype="float32", blocksize=rate // 10,
                            device=args.input_device, callback=callback):
            while not stop.is_set():
                getter = asyncio.ensure_future(blocks.get())
                stopper = asyncio.ensure_future(stop.wait())
                done, _ = await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                stopper.cancel()
                if getter in done:
                    emit(resampler.process(getter.result()))
                else:
                    getter.cancel()
        # What was captured before the stop is still translated, the resampler's tail included.
        while not blocks.empty():
            emit(resampler.process(blocks.get_nowait()))
        emit(resampler.process(np.zeros(0, np.float32), last=True))

    return source


def run(args: argparse.Namespace) -> int:
    if args.list_devices:
        import sounddevice as sd

        print(sd.query_devices())
        return 0
    if args.input_file is not None and not args.input_file.exists():
        raise UserError(f"{args.input_file}: no such file")
    if args.output_file:
        from ..audio import wav_output

        args.output_file = wav_output(args.output_file, flag="--output-file")  # before the session
    return asyncio.run(_main(args))


async def _main(args: argparse.Namespace) -> int:
    from ..audio import FileSource, write_wav
    from ..backends import default_registry
    from ..clock import WallClock
    from ..events import EventLog
    from ..server.pipelines import RealPipeline, load_factory
    from ..server.protocol import Hello
    from ..types import AudioChunk, EncodedPacket

    registry = default_registry()
    from ..configuration import resolve

    effective = resolve("mic", args)  # defaults < --config FILE < flags
    base = effective.config
    if base.source != "en" and effective.origin("asr_model") == "speech mic":  # the default: tiny.en is English-only
        base = base.replace(asr_model="whisper-base")
    args.source, args.target = base.source, base.target
    from ..devices import check_devices

    check_devices(base, registry)
    factory = load_factory(args.pipeline, registry, base) if args.pipeline else RealPipeline(registry, base)
    display = LiveText()
    clock = WallClock()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    tts_stats: dict = {}  # the synthesis stage's totals, written when it ends
    timeline: list[dict] = []  # the first recognised words and every spoken chunk: the listener's lag

    def on_record(rec: dict) -> None:
        if rec.get("kind") == "update" and rec.get("stage") in ("asr", "mt"):
            loop.call_soon_threadsafe(display.update, rec["stage"], rec)
            if rec["stage"] == "asr" and rec.get("committed") and not timeline:
                timeline.append(rec)  # the speech onset
        elif rec.get("kind") == "audio" and rec.get("stage") == "tts":
            timeline.append(rec)
        elif rec.get("kind") == "stats" and rec.get("stage") == "tts":
            tts_stats.update(rec)
        elif rec.get("kind") == "language" and rec.get("detected"):  # --source auto
            print(f"\nlanguage: {rec['detected']} (told from {rec.get('speech_s')} s of speech)", file=sys.stderr,
                  flush=True)

    log = EventLog(args.log, keep=False, on_record=on_record)
    dropped = [0.0]
    if args.input_file is not None:
        file_source = FileSource(str(args.input_file), clock=clock)

        async def source(outbox: Any) -> None:
            stopper = asyncio.ensure_future(stop.wait())
            feeder = asyncio.ensure_future(file_source(outbox))
            await asyncio.wait({stopper, feeder}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if not feeder.done():
                feeder.cancel()
            else:
                feeder.result()
    else:
        source = mic_source(args, clock, stop, dropped)

    output: list[np.ndarray] = []
    out_rate = [0]
    player: list[Player] = []

    async def sink(inbox: Any) -> None:
        async for item in inbox:
            if not isinstance(item, AudioChunk):
                continue  # text-only or encoded output: nothing to play here
            out_rate[0] = item.sample_rate
            output.append(item.samples)
            if not args.no_playback:
                if not player:
                    try:
                        player.append(Player(item.sample_rate, args.output_device))
                    except Exception as e:  # noqa: BLE001 - PortAudio raises several kinds
                        raise UserError(f"cannot play audio ({e}); use --no-playback or --output-device") from None
                player[0].play(item.samples)

    hello = Hello(args.source, args.target, 16000)
    print(f"loading models for {args.source}->{args.target} ...", file=sys.stderr, flush=True)
    session = await asyncio.to_thread(factory, hello, source, sink, clock, log)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.seconds:
        loop.call_later(args.seconds, stop.set)
    print("listening (Ctrl-C to stop) ...", file=sys.stderr, flush=True)
    clock.restart()
    try:
        await session.run()
    finally:
        log.close()
        if player:
            player[0].close(wait=not stop.is_set())
    if args.output_file and output:
        write_wav(args.output_file, np.concatenate(output), out_rate[0])
    print(f"\nheard: {' '.join(display.committed['asr'])}\nsaid:  {' '.join(display.committed['mt'])}", flush=True)
    spoken = sum(len(x) for x in output) / out_rate[0] if out_rate[0] else 0.0
    print(f"{spoken:.1f} s of translated speech", file=sys.stderr)
    if line := listener_summary(timeline, clock.now()):
        print(line, file=sys.stderr)
    from ..tts.stage import fell_behind

    if note := fell_behind(tts_stats.get("words_relief", 0), tts_stats.get("words_skipped", 0),
                           tts_stats.get("voice_rtf"), tts_stats.get("relief_voice", "")):
        print(note, file=sys.stderr)
    if dropped[0]:
        print(f"dropped {dropped[0]:.1f} s of microphone audio: the pipeline fell behind "
              "(try a faster --asr-model)", file=sys.stderr)
    return 0
