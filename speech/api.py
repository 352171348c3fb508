"""The public Python API: `Pipeline(config).stream(chunks)`, `translate_file`, `load_config`.

Everything the command line does goes through these few names; see docs/api.md. Models load on
first use and are shared by every stream of one `Pipeline` (one registry per pipeline).
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Union

import numpy as np

from .errors import ConfigError, UserError
from .options import ServerOptions
from .pipeline import PipelineConfig
from .types import AudioChunk, EncodedPacket, TextUpdate, Word


@dataclass(frozen=True)
class _TextEvent:
    """A step of a streaming text hypothesis (the fields Recognition and Translation share)."""

    text: str
    tentative: str
    final: bool
    source_time: float
    wall_time: float
    language: str
    words: tuple[Word, ...] = ()

    @classmethod
    def from_update(cls, update: TextUpdate) -> Any:
        """The event for one TextUpdate."""
        return cls(update.committed_text, update.tentative_text, update.final, update.source_time,
                   update.wall_time, update.language, tuple(update.committed))


@dataclass(frozen=True)
class Recognition(_TextEvent):
    """The recogniser's step: `text` committed for good (may be empty), `tentative` the current
    guess after it (replaced by the next step), on the source timeline (`source_time`: seconds of
    input consumed) and the clock (`wall_time`); `final` closes a segment; `words` carry timings."""


@dataclass(frozen=True)
class Translation(_TextEvent):
    """The translator's step: the same fields as Recognition, in the target language."""


@dataclass(frozen=True)
class SpeechAudio:
    """Synthesised speech: mono float32 `samples` at `sample_rate`, speaking `text` in `language`;
    `start` is when it plays on the listener's timeline, `wall_time` when it was ready."""

    samples: np.ndarray
    sample_rate: int
    text: str
    start: float
    wall_time: float
    language: str = ""

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return len(self.samples) / self.sample_rate


@dataclass(frozen=True)
class EncodedAudio:
    """One codec packet of synthesised speech (the "codec" stage's output): `data` in `codec`."""

    data: bytes
    codec: str
    sample_rate: int
    start: float
    wall_time: float
    language: str = ""


Event = Union[Recognition, Translation, SpeechAudio, EncodedAudio]


def _event(item: Any, stage: str, language: str = "") -> Event | None:
    if isinstance(item, TextUpdate):
        return (Recognition if stage == "asr" else Translation).from_update(item)
    if isinstance(item, AudioChunk):
        return SpeechAudio(item.samples, item.sample_rate, item.text, item.start, item.wall_time, language)
    if isinstance(item, EncodedPacket):
        return EncodedAudio(item.data, item.codec, item.sample_rate, item.start, item.wall_time, language)
    return None


class Pipeline:
    """Streams through the stages of `config` (default: the embedded models, en -> es).

    `realtime=False` (default) runs as fast as the stages go and emulates latency on a simulated
    clock; `realtime=True` uses the wall clock (for live input). Models load on the first stream
    and stay loaded for the next ones.
    """

    def __init__(self, config: PipelineConfig | None = None, *, realtime: bool = False, registry: Any = None) -> None:
        if config is None:
            config = PipelineConfig()
        if not isinstance(config, PipelineConfig):
            raise ConfigError("config", "expected a speech.PipelineConfig", type(config).__name__)
        from .backends import default_registry

        self.config = config
        self.realtime = realtime
        self.registry = registry if registry is not None else default_registry()

    async def stream(self, chunks: AsyncIterable[Any] | Iterable[Any], sample_rate: int = 16000) -> AsyncIterator[Event]:
        """Feed `chunks` and yield events as the stages emit them.

        The input is what the first stage takes: audio (numpy arrays of mono samples at
        `sample_rate`, or AudioChunks) when the stages start with "asr"; text (strings, each one
        committed words, or TextUpdates) when they start with "mt" or "tts". Yields Recognition,
        Translation, SpeechAudio or EncodedAudio, in the order they were emitted; with several
        `targets`, each target's events carry its `language`. A stage's failure is raised here (a
        bad option as ConfigError).
        """
        from .clock import make_clock
        from .events import EventLog
        from .pipeline import build_session
        from .stage import StageError

        if not isinstance(sample_rate, int) or sample_rate <= 0:
            raise ConfigError("sample_rate", "expected a positive whole number of Hz", sample_rate)
        stages = self.config.stages
        if not stages:
            raise ConfigError("stages", "expected at least one stage")
        last = stages[-1]
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        clock = make_clock(self.realtime)

        def on_record(rec: dict) -> None:  # intermediate stages' text, from any thread
            stage = rec.get("stage")
            if rec.get("kind") == "update" and stage in ("asr", "mt") and stage != last:
                loop.call_soon_threadsafe(queue.put_nowait, _event(TextUpdate.from_json(rec), stage))

        log = EventLog(keep=False, on_record=on_record)
        feed = self._audio_source if stages[0] == "asr" else self._text_source

        async def source(outbox: Any) -> None:
            await feed(chunks, sample_rate, outbox, clock)

        def sink_for(target: str) -> Any:
            async def sink(inbox: Any) -> None:
                async for item in inbox:
                    event = _event(item, last, target)
                    if event is not None:
                        queue.put_nowait(event)

            return sink

        targets = self.config.all_targets  # several targets: one branch (and sink) each
        sinks = sink_for(targets[0]) if len(targets) == 1 else {t: sink_for(t) for t in targets}
        session = build_session(self.registry, self.config, source, sinks, clock=clock, log=log)
        if self.realtime:
            clock.restart()

        async def run() -> None:
            try:
                await session.run()
            finally:
                loop.call_soon(queue.put_nowait, done)

        task = asyncio.ensure_future(run())
        try:
            while (event := await queue.get()) is not done:
                yield event
            try:
                task.result()
            except StageError as e:
                if isinstance(e.error, UserError):
                    raise e.error from None
                raise
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _audio_source(self, chunks: Any, sample_rate: int, outbox: Any, clock: Any) -> None:
        from .audio import StreamingResampler

        resampler = StreamingResampler(sample_rate, 16000) if sample_rate != 16000 else None
        start = 0.0
        seq = 0
        async for item in _aiter(chunks):
            if isinstance(item, AudioChunk):
                samples, rate = item.samples, item.sample_rate
                if rate != sample_rate:
                    raise ConfigError("chunks", f"AudioChunks at the stream's sample_rate ({sample_rate} Hz)", rate)
            else:
                samples = np.asarray(item, dtype=np.float32)
                if samples.ndim != 1:
                    raise ConfigError("chunks", "expected mono audio: 1-D arrays of samples", samples.shape)
            if resampler is not None:
                samples = resampler.process(samples)
            if not len(samples):
                continue
            end = start + len(samples) / 16000
            await clock.sleep_until(end)
            arrival = clock.now() if clock.realtime else end
            await outbox.put(AudioChunk(samples, 16000, start, seq, wall_time=arrival))
            start, seq = end, seq + 1

    async def _text_source(self, chunks: Any, sample_rate: int, outbox: Any, clock: Any) -> None:
        language = self.config.source if self.config.stages[0] == "mt" else self.config.target
        position = 0.0
        async for item in _aiter(chunks):
            if isinstance(item, TextUpdate):
                update = item
            elif isinstance(item, str):
                position += 1.0
                update = TextUpdate(committed=tuple(Word(w) for w in item.split()), final=True,
                                    source_time=position, wall_time=position, language=language)
            else:
                raise ConfigError("chunks", "expected text (str) or TextUpdate items for a stream that starts at "
                                            f"{self.config.stages[0]!r}", type(item).__name__)
            await outbox.put(update)
        await outbox.put(TextUpdate(final=True, end_of_stream=True, source_time=position, wall_time=position,
                                    language=language))

    def translate_file(self, path: str | Path, **kwargs: Any) -> "Result":
        """`speech.translate_file` with this pipeline's configuration and loaded models."""
        return translate_file(path, config=self.config, realtime=self.realtime, registry=self.registry, **kwargs)


async def _aiter(chunks: Any) -> AsyncIterator[Any]:
    if hasattr(chunks, "__aiter__"):
        async for item in chunks:
            yield item
    elif isinstance(chunks, (str, bytes)) or not hasattr(chunks, "__iter__"):
        raise ConfigError("chunks", "expected an iterable (or async iterable) of chunks", type(chunks).__name__)
    else:
        for item in chunks:
            yield item


@dataclass
class Result:
    """What `translate_file` returns: the translated speech as the listener hears it (`samples`
    at `sample_rate`, waits included unless `compact`), the recognised, translated and spoken
    text, and the event log (`events`, one dict per record, see speech.events)."""

    samples: np.ndarray
    sample_rate: int
    recognized: str
    translated: str
    spoken: str
    source_duration: float
    first_audio_s: float | None
    events: list[dict]

    @property
    def duration(self) -> float:
        """Length of the translated speech in seconds."""
        return len(self.samples) / self.sample_rate

    def save(self, path: str | Path) -> Path:
        """Write the translated speech as a 16-bit WAV file; returns its path."""
        from .audio import wav_output, write_wav

        out = wav_output(path, flag="save:")  # ".wav" added to a name without one
        write_wav(out, self.samples, self.sample_rate)
        return out


def translate_file(path: str | Path, source: str | None = None, target: str | None = None, *,
                   config: PipelineConfig | None = None, output: str | Path | None = None,
                   realtime: bool = False, compact: bool = False, log: str | Path | None = None,
                   registry: Any = None, **options: Any) -> Result:
    """Translate the speech in an audio file (WAV, FLAC, Ogg Opus or Vorbis, MP3) into speech in `target`.

    `config` (default PipelineConfig()) gives the stages' settings; `source`, `target` and
    `options` (PipelineConfig keys, and `device` for both the recogniser and an LLM translator)
    override it. `output` also writes the WAV; `log` the event log (JSON lines). Blocks until done;
    bad arguments raise ConfigError, an unreadable file UserError.
    """
    from .audio import read_audio
    from .translate_cmd import translate_file as run_file

    config = _with_options(config or PipelineConfig(stages=("asr", "mt", "tts", "codec")), source, target, options)
    if config.source == config.target:
        raise ConfigError("target", f"must differ from source ({config.source!r})", config.target)
    read_audio(str(path))  # one clear error for a missing or unreadable file, before any model loads
    if registry is None:
        from .backends import default_registry

        registry = default_registry()
    from .devices import check_devices
    from .stage import StageError

    check_devices(config, registry)
    try:
        raw = asyncio.run(run_file(str(path), config, registry, realtime=realtime, compact=compact,
                                   log_path=str(log) if log else None))
    except StageError as e:
        if isinstance(e.error, UserError):
            raise e.error from None
        raise
    records = raw.records

    def committed(stage: str) -> str:
        return " ".join(w["text"] for r in records if r.get("kind") == "update" and r.get("stage") == stage
                        for w in r.get("committed", ()))

    first = next((r["wall_time"] for r in records if r.get("kind") == "audio"), None)
    result = Result(raw.samples, raw.sample_rate, committed("asr"), committed("mt"), raw.text,
                    raw.source_duration, first, records)
    if output is not None:
        result.save(output)
    return result


def _with_options(config: PipelineConfig, source: str | None, target: str | None, options: dict[str, Any]) -> PipelineConfig:
    if not isinstance(config, PipelineConfig):
        raise ConfigError("config", "expected a speech.PipelineConfig", type(config).__name__)
    changes = dict(options)
    if source is not None:
        changes["source"] = source
    if target is not None:
        changes["target"] = target
    device = changes.pop("device", None)
    known = {f.name for f in dataclasses.fields(PipelineConfig)}
    for key in changes:
        if key not in known:
            raise ConfigError(key, f"unknown option; allowed: {', '.join(sorted(known | {'device'}))}")
    config = config.replace(**changes)
    if device is not None:
        config = config.replace(asr_options=dataclasses.replace(config.asr_options, device=device),
                                mt_options=dataclasses.replace(config.mt_options, device=device))
    return config


def load_config(path: str | Path, **options: Any) -> PipelineConfig:
    """The PipelineConfig of a configuration file (TOML or JSON, the keys `speech config show`
    prints), with `options` (PipelineConfig keys, and `device`) over it. A bad file raises
    ConfigError naming the file, the key and what is allowed."""
    import argparse

    from .configuration import resolve

    return _with_options(resolve("api", argparse.Namespace(config=str(path))).config, None, None, options)


def load_server_options(path: str | Path) -> ServerOptions:
    """The `[server]` table of a configuration file as ServerOptions (defaults where absent)."""
    import argparse

    from .configuration import resolve

    return resolve("api", argparse.Namespace(config=str(path))).server


def serve(config: PipelineConfig | None = None, server: ServerOptions | None = None) -> int:
    """Run the websocket server and browser page (what `speech serve` runs) until SIGINT or SIGTERM.

    `config` is the base of every session (each client's hello chooses the pair and the output
    codec); `server` says where to listen (default 127.0.0.1:8765) and which pair to warm up. The
    line "speech serve: listening on ws://HOST:PORT/ ..." is printed once clients are accepted.
    Returns 0 after a clean shutdown.
    """
    import argparse

    from .server.cli import _pair, _serve, configure

    config = config if config is not None else PipelineConfig(asr_options={"update_s": 1.0})
    server = server if server is not None else ServerOptions()
    if not isinstance(config, PipelineConfig):
        raise ConfigError("config", "expected a speech.PipelineConfig", type(config).__name__)
    if not isinstance(server, ServerOptions):
        raise ConfigError("server", "expected a speech.ServerOptions", type(server).__name__)
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args([])  # every option of `speech serve` at its default, then ours
    args.base_config = config
    for f in dataclasses.fields(server):
        setattr(args, f.name, getattr(server, f.name))
    args.allow_origin = list(server.allow_origins)
    args.log_dir = Path(server.log_dir) if server.log_dir else None
    args.asr_model, args.mt_backend, args.voice = config.asr_model, config.mt_backend, config.voice
    if server.engine == "ray":
        from .server.ray_engine import serve_ray

        return serve_ray(args, _pair(server.warm_up))
    return asyncio.run(_serve(args, _pair(server.warm_up)))
