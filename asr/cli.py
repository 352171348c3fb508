"""`speech transcribe INPUT`: streaming transcription of an audio file, printed live.

Committed text is printed as it is committed; on a terminal the tentative tail is shown after it
(dim) and overwritten by the next update. A summary (words, updates, RTF, lag) ends the run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import IO


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT", help="audio file (WAV, FLAC, Ogg Opus or Vorbis, MP3; any rate, mono or stereo)")
    parser.add_argument("--model", default="whisper-base",
                        help="whisper-base (default), whisper-tiny.en, pocketsphinx, or a local CTranslate2 Whisper folder")
    parser.add_argument("--language", default="en",
                        help="source language code, or auto: Whisper tells it once, from the first 30 s of "
                             "speech (default en)")
    parser.add_argument("--policy", default="default",
                        help="commit policy: local-agreement-2, stable, or default (best measured)")
    parser.add_argument("--chunk-ms", type=int, default=100, help="feed the audio in chunks of N ms (default 100)")
    parser.add_argument("--update-ms", type=int, default=0, help="decode every N ms of new audio (0: model default)")
    parser.add_argument("--realtime", action="store_true", help="feed the file at real-time speed (wall clock)")
    parser.add_argument("--no-vad", action="store_true", help="do not gate the audio with the VAD")
    parser.add_argument("--log", metavar="EVENTS.jsonl", help="write the event log (JSON lines) here")
    from speech.configuration import add_device_flag

    add_device_flag(parser)


class LivePrinter:
    """Committed text appended for good; the tentative tail redrawn in place on a terminal."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._tail = ""
        self._column = 0

    def show(self, committed: str, tentative: str, final: bool) -> None:
        out = self.stream
        if self.tty and self._tail:
            out.write("\b" * len(self._tail) + " " * len(self._tail) + "\b" * len(self._tail))
        self._tail = ""
        if committed:
            out.write((" " if self._column else "") + committed)
            self._column += len(committed) + 1
        if final and self._column:
            out.write("\n")
            self._column = 0
        elif self.tty and tentative:
            self._tail = " " + tentative
            out.write("\x1b[2m" + self._tail + "\x1b[0m")
        out.flush()


def run(args: argparse.Namespace) -> int:
    from speech.audio import FileSource
    from speech.backends import default_registry
    from speech.clock import make_clock
    from speech.errors import UserError
    from speech.events import EventLog
    from speech.pipeline import PipelineConfig, build_session
    from speech.stats import percentile
    from speech.types import Transcript

    if args.chunk_ms <= 0 or args.chunk_ms > 5000:
        raise UserError(f"--chunk-ms {args.chunk_ms}: give a chunk size from 1 to 5000 ms")
    registry = default_registry()
    from .stage import recognizer_name

    registry.spec("recognizer", recognizer_name(args.model)[0])  # a registered name, or a local Whisper folder
    if args.policy != "default":
        registry.spec("asr-policy", args.policy.partition(":")[0])
    clock = make_clock(args.realtime)
    source = FileSource(args.input, chunk_ms=args.chunk_ms, clock=clock)
    if source.info and (source.info.clipped_fraction or 0.0) > 0.001:  # None: not measured (a probed file)
        print(f"note: {args.input}: {100 * source.info.clipped_fraction:.1f}% of samples are clipped",
              file=sys.stderr)
    config = PipelineConfig(source=args.language, asr_model=args.model, asr_policy=args.policy,
                            chunk_ms=args.chunk_ms, vad=not args.no_vad, stages=("asr",),
                            asr_options={"device": args.device, "update_s": args.update_ms / 1000 or None})
    from speech.devices import check_devices

    check_devices(config, registry)
    if config.source == "auto":  # told once: a decode of a short buffer can take Portuguese for English
        from .language_id import file_language

        language, note = file_language(args.input, registry, config, None)
        print(note, file=sys.stderr)
        config = config.replace(source=language)
    log = EventLog(args.log)
    printer = LivePrinter(sys.stdout)
    transcript = Transcript()
    updates = 0

    async def sink(inbox) -> None:  # type: ignore[no-untyped-def]
        nonlocal updates
        async for update in inbox:
            updates += 1
            transcript.apply(update)
            printer.show(update.committed_text, update.tentative_text, update.final)

    from speech.interrupt import InputStop, Tap

    stop = InputStop()  # Ctrl-C ends the input; what was heard is still transcribed
    read_to = [0.0]

    async def read(outbox) -> None:  # type: ignore[no-untyped-def]
        async def counted(chunk) -> None:  # type: ignore[no-untyped-def]
            await outbox.put(chunk)
            read_to[0] = chunk.end

        await stop.until_stopped(source(Tap(counted)))

    async def main() -> None:
        stop.install()
        try:
            await session.run()
        finally:
            stop.remove()

    try:
        session = build_session(registry, config, read, sink, clock=clock, log=log)
        if hasattr(clock, "restart"):
            clock.restart()
        asyncio.run(main())
    finally:
        log.close()
    stats = next((r for r in log.records if r["kind"] == "stats" and r.get("stage") == "asr"), {})
    duration = read_to[0] if stop.cut else source.duration
    compute = stats.get("compute_s", 0.0)
    lags = [u["source_time"] - w["end"] for u in log.records if u["kind"] == "update"
            for w in u["committed"] if "end" in w]
    lag = percentile(lags, 50)
    median = f"{lag:.2f} s" if lag is not None else "n/a"
    print(f"--- {len(transcript.committed)} words, {updates} updates, {duration:.1f} s of audio, "
          f"RTF {compute / max(duration, 1e-9):.2f}, median commit lag {median} "
          f"(after the word's own end time)", file=sys.stderr)
    if stop.cut:
        import signal

        print(f"stopped by {stop.cut} after {duration:.1f} s of {args.input}", file=sys.stderr)
        return 128 + signal.Signals[stop.cut].value
    return 0
