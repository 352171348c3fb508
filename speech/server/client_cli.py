"""`speech stream FILE --url ws://...`: stream a file to a running server and print its events."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ..errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="audio file (WAV, FLAC, Ogg Opus or Vorbis, MP3)")
    parser.add_argument("--url", default="ws://127.0.0.1:8765/ws", help="server (default ws://127.0.0.1:8765/ws)")
    parser.add_argument("--source", default="en",
                        help="spoken language, or auto: the server tells it from the first 1-4 s of speech (default en)")
    parser.add_argument("--target", default="es",
                        help="language to translate into (default es); several, comma-separated (es,pt), "
                             "from one recogniser")
    parser.add_argument("--token", default="", help="the server's token, if it has one")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="pace: 1 = real time (default), 2 = twice as fast, 0 = as fast as possible")
    parser.add_argument("--codec", choices=("pcm16", "opus"), default="pcm16", help="input codec (default pcm16)")
    parser.add_argument("--output-codec", choices=("pcm16", "opus"), default="pcm16", help="output codec")
    parser.add_argument("--stop-after", type=float, metavar="SECONDS", help="send `end` after this much audio")
    parser.add_argument("--output", type=Path, help="write the translated speech to this WAV file "
                                                    "(several targets: NAME.<target>.wav each)")
    parser.add_argument("--no-resume", action="store_true",
                        help="do not reconnect after a network drop (default: resume the session within 30 s)")
    parser.add_argument("--json", action="store_true", help="print every event as one JSON line")


class Printer:
    """Live display: committed text, then the tentative tail dimmed, redrawn on one line per stream."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.tty = sys.stdout.isatty()
        self.words: dict[str, list[str]] = {"recognition": []}
        self.shown: dict[str, str] = {}  # the last line printed per stream: an update that changes nothing is not repeated

    def __call__(self, event: dict) -> None:
        kind = event["type"]
        if self.as_json:
            print(json.dumps(event, ensure_ascii=False), flush=True)
            return
        if kind in ("recognition", "translation"):
            key = kind if kind == "recognition" else f"{kind}:{event.get('target', '')}"
            words = self.words.setdefault(key, [])
            words.extend(event["committed"])
            if event["committed"] or not self.tty:
                tag = "heard" if kind == "recognition" else f"said {event.get('target', '')}"
                tail = " ".join(event["tentative"])
                dim = f" \x1b[2m{tail}\x1b[0m" if self.tty and tail else (f" [{tail}]" if tail else "")
                lag = f"  (lag {event['lag']:.2f} s)" if event.get("lag") is not None else ""
                line = f"{tag}: {' '.join(words)}{dim}"
                if line != self.shown.get(key):
                    self.shown[key] = line
                    print(line + lag, flush=True)
        elif kind == "ready" and event.get("resumed"):
            print(f"resumed session {event['session']} after a dropped connection", file=sys.stderr, flush=True)
        elif kind == "ready" and event.get("listen"):
            for target, url in event["listen"].items():
                print(f"listeners ({target}): {url}", file=sys.stderr, flush=True)
        elif kind == "language":
            untranslated = "; not translated into " + ", ".join(event["untranslated"]) if event.get("untranslated") else ""
            print(f"language: {event['source']} (told from {_f(event.get('speech_s'))} s of speech, "
                  f"probability {_f(event.get('probability'))}){untranslated}", file=sys.stderr, flush=True)
        elif kind == "error":
            print(f"error ({event['code']}): {event['message']}", file=sys.stderr, flush=True)
        elif kind == "done":
            s = event["summary"]
            print(f"done: {s['audio_in_s']:.1f} s in, {s['recognized_words']} words heard, "
                  f"{s['translated_words']} translated, {s['audio_out_s']:.1f} s spoken, "
                  f"text lag p50 {_f(s['lag_p50'])} p90 {_f(s['lag_p90'])} s", flush=True)
            for target, t in (s.get("targets") or {}).items():
                if line := listener_line(target, t):
                    print(line, flush=True)


def listener_line(target: str, t: dict) -> str:
    """What the listeners of `target` lived through (a `done` summary's `targets` entry): when they
    heard each word after it was said (the listener timeline, which the text lag leaves out), and
    the words a voice too slow for the talk left to the relief voice or did not say ("": nothing heard)."""
    from ..tts.stage import relief_label

    if t.get("synthesis_lag_p50") is None:
        return ""
    behind = []
    if relief := t.get("words_relief"):
        behind.append(f"{relief} words spoken by {relief_label(t.get('relief_voice') or '')}")
    if unspoken := t.get("words_unspoken"):
        behind.append(f"{unspoken} not spoken")
    return (f"  {target}: the listener heard each word p50 {_f(t['synthesis_lag_p50'])} p90 "
            f"{_f(t.get('synthesis_lag_p90'))} s after it was said" + (f"; {', '.join(behind)}" if behind else ""))


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def run(args: argparse.Namespace) -> int:
    from websockets.exceptions import InvalidHandshake, InvalidURI

    from ..audio import wav_outputs, write_wav
    from .client import stream_file

    from ..pipeline import parse_targets

    if args.speed < 0:
        raise UserError("--speed must be 0 (as fast as possible) or positive")
    try:
        targets = parse_targets(args.target)
    except ValueError as e:
        raise UserError(f"--target: {e}") from None
    outputs = wav_outputs(args.output, targets) if args.output else {}  # refused before streaming

    async def streamed():
        from ..interrupt import InputStop

        stop = InputStop()  # Ctrl-C sends `end` at once: the server finishes what it has heard
        stop.install()
        try:
            return await stream_file(
                args.url, args.file, args.source, targets[0], targets=targets if len(targets) > 1 else (),
                token=args.token, codec=args.codec, output_codec=args.output_codec, speed=args.speed,
                stop_after_s=args.stop_after, on_event=Printer(args.json), resume=not args.no_resume,
                stop=stop.event), stop.signal
        finally:
            stop.remove()

    try:
        result, signal_name = asyncio.run(streamed())
    except (OSError, InvalidHandshake, InvalidURI) as e:
        raise UserError(f"cannot reach {args.url} ({e}); is `speech serve` running?") from None
    told = next((e for e in result.events if e["type"] == "language"), {})
    for target, path in outputs.items():
        samples, rate = result.pcm(target)
        if rate:
            write_wav(path, samples, rate)
            print(f"wrote {path} ({len(samples) / rate:.1f} s)", file=sys.stderr)
        elif target in told.get("untranslated", ()):
            print(f"no {path}: {args.file} is in {target}, not translated", file=sys.stderr)
    if result.stopped:
        print(f"stopped by {signal_name} after {result.sent_s:.1f} s of {args.file}", file=sys.stderr)
    if result.error:
        return 1
    if result.stopped:
        import signal

        return 128 + signal.Signals[signal_name].value  # the shell's code for a stopped command
    return 0 if result.done else 1
