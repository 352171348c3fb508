"""The TTS stage: committed target text in, synthesised AudioChunks out.

Inbox: TextUpdates from the translator. The chunker turns committed words into pieces worth
speaking; each piece is synthesised in a worker thread (streaming where the engine streams), its
padding trimmed and its edges faded (`joins`), and emitted as one AudioChunk whose `wall_time` (and
`start`) is the computation-aware time its first sample became available; a voice that renders a
piece window by window (Kokoro, `AudioChunk.part`) has each window emitted as soon as it exists,
with the words it speaks, so the listener hears a piece's first words while the rest is rendered. The listener placement
(waiting for the previous chunk to finish) is the sink's job (`joins.ListenerTimeline`); the stage
keeps the same timeline's arithmetic (`listener.ListenerSchedule`) to stamp each chunk with when
the listener hears it (`play_start`) and to control its duration (`pace`): speed, pauses,
condensation, a relief voice and skipping that keep the listener's lag bounded. The relief voice
(`relief`, SVOX Pico or eSpeak NG by default) is a cheaper synthesiser that speaks while the main
one is too far behind (`PaceConfig.relief_lag_s`); its audio is resampled to the main voice's rate,
so every chunk of a stream has one rate.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speech.channel import Channel, EndOfStream
from speech.calls import model_call
from speech.audio import resample
from speech.clock import Clock, StageClock
from speech.errors import UserError
from speech.events import EventLog
from speech.types import AudioChunk, TextUpdate

from speech.types import Word

from .chunker import ChunkerConfig, SpeechPiece, TextChunker
from .joins import JoinConfig, prepare_chunk
from .listener import ListenerSchedule, timed_offsets
from .pace import PaceConfig, PaceController, PaceDecision
from .pauses import after_cuts, cut, pause_cuts
from .text import clean_text
from .timescale import synthesize_at


@dataclass
class TtsStage:
    synthesizer: Any  # speech.stage.Synthesizer
    clock: Clock
    log: EventLog
    relief: Any = None  # a cheaper Synthesizer that speaks while the main one is too far behind (None: none)
    relief_name: str = ""  # the relief voice's `--voice` value, named to a user whose voice fell behind
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    joins: JoinConfig = field(default_factory=JoinConfig)
    pace: PaceConfig = field(default_factory=PaceConfig)
    call_timeout_s: float | None = 30.0  # a synthesiser call that hangs ends the session with a named error
    name: str = "tts"

    async def run(self, inbox: Channel[TextUpdate], outbox: Channel[AudioChunk]) -> None:
        timer = self.clock.stage(self.name)
        chunker = TextChunker(self.chunker)
        self._schedule = ListenerSchedule(self.synthesizer.sample_rate, self.joins.fade_ms)
        self._pace = PaceController(voice_limited(self.pace, self.synthesizer))
        totals = {"compute_s": 0.0, "audio_s": 0.0, "chunks": 0, "skipped": 0, "controlled": 0,
                  "faster": 0, "pauses_shortened": 0, "words_dropped": 0, "words_skipped": 0,
                  "relief_chunks": 0, "words_relief": 0}
        seq = 0
        tentative: list[tuple[str, float | None]] = []
        last_wall = 0.0  # wall time of the latest update: the end of stream's time on the simulated clock
        while True:
            deadline = chunker.deadline()
            try:
                if self.clock.realtime and deadline is not None:
                    update = await asyncio.wait_for(inbox.get(), max(0.0, deadline - self.clock.now()))
                else:
                    update = await inbox.get()
            except TimeoutError:
                pieces = chunker.expire(self.clock.now())
            except EndOfStream:
                break
            else:
                last_wall = max(last_wall, update.wall_time)
                pieces = chunker.push(update, idle=self._schedule.end <= max(update.wall_time, timer.now()))
                # the translator's tentative tail: words it will most likely commit next
                tentative = [(w.text, update.spoken_time) for w in update.tentative] if self.pace.tentative else []
            for i, piece in enumerate(pieces):
                seq = await self._speak(piece, timer, outbox, seq, totals, queued(pieces[i + 1:], chunker) + tentative)
        pieces = chunker.flush(self.clock.now() if self.clock.realtime else last_wall)
        for i, piece in enumerate(pieces):
            seq = await self._speak(piece, timer, outbox, seq, totals, queued(pieces[i + 1:], chunker))
        totals["speed_max"] = max(totals.pop("_speeds", [1.0]))
        if (rtf := self._pace.voice_rtf) is not None:  # the main voice's, as it spoke (tts.pace)
            totals["voice_rtf"] = rtf
        if totals["words_relief"] and self.relief_name:
            totals["relief_voice"] = self.relief_name
        self.log.write("stats", stage=self.name, **{k: round(v, 4) if isinstance(v, float) else v for k, v in totals.items()})

    async def _speak(
        self, piece: SpeechPiece, timer: StageClock, outbox: Channel[AudioChunk], seq: int, totals: dict,
        behind: Sequence[tuple[str, float | None]] = (),
    ) -> int:
        spoken = [t for t in piece.spoken_times if t is not None]
        ready = max(piece.ready_time, timer.now())
        relieving = self._pace.relieving
        words, decision = self._pace.decide(list(piece.words), ready, self._schedule.end,
                                            min(spoken) if spoken else None, behind,
                                            waited=ready - piece.ready_time, relief=self.relief is not None)
        if decision.relief != relieving and not decision.skipped:
            # the relief voice takes over (the main one is too far behind) or hands back
            rtf = self._pace.voice_rtf
            self.log.write("tts_voice", stage=self.name, voice="relief" if decision.relief else "main",
                           lag_s=round(decision.lag_s, 3), waited_s=round(ready - piece.ready_time, 3),
                           **({} if rtf is None else {"voice_rtf": round(rtf, 3)}),
                           **({"relief_voice": self.relief_name} if self.relief_name else {}))
        if decision.skipped:
            totals["skipped"] += 1
            totals["words_skipped"] += len(decision.skipped)
            self.log.write("tts_skip", stage=self.name, text=piece.text, reason="behind", lag_s=round(decision.lag_s, 3),
                           words=len(decision.skipped))
            return seq
        text = clean_text(" ".join(w.text for w in words))
        if not text:
            totals["skipped"] += 1
            self.log.write("tts_skip", stage=self.name, text=piece.text, reason="nothing speakable")
            return seq
        voice = self.relief if decision.relief else self.synthesizer
        speed = decision.speed  # the main voice's: its limit or the user's --max-speed (voice_limited)
        if decision.relief:  # the relief voice's own limit
            speed = min(speed, getattr(voice, "max_speed", None) or speed)
        timer.begin(piece.ready_time)
        t0 = time.perf_counter()
        # a voice that renders window by window renders a piece whole (less compute) when the listener
        # would not hear its first window sooner (PaceDecision.slack_s)
        stream = synthesize_at(voice, text, speed, slack_s=decision.slack_s)
        part = _Part()
        speaking = _Speaking(piece, decision, speed)
        # a part's words, as indices of `words`; where cleaning changed the words, the last part takes them all
        indexed = len(text.split()) == len(words)
        unspoken = 0  # the first word no emitted part has spoken yet
        synthesis_s = 0.0  # the voice's own time, without the waits to emit (its real-time factor: tts.pace)
        while True:
            t1 = time.perf_counter()
            chunk = await model_call(next, stream, None, timeout_s=self.call_timeout_s,
                                     what=f"synthesising {text[:40]!r}")
            synthesis_s += time.perf_counter() - t1
            if chunk is None:
                break
            # These samples exist now; the rest of the synthesis continues from here.
            now = timer.end()
            part.add(chunk, now)
            if chunk.part is not None and indexed and chunk.part[1] < len(words):
                # a window of a voice that renders a piece window by window: emitted at once
                part.words, part.head, part.tail = words[unspoken:chunk.part[1]], not speaking.chunks, False
                if await self._emit(part, speaking, outbox, seq, totals):
                    seq, unspoken = seq + 1, chunk.part[1]
                part = _Part()
            timer.begin(now)
        timer.end()
        totals["compute_s"] += time.perf_counter() - t0
        if part.buffers:  # the whole piece (every voice that does not render by windows) or its last window
            part.words, part.head = words[unspoken:], not speaking.chunks
            if await self._emit(part, speaking, outbox, seq, totals, text=text if not unspoken else None):
                seq += 1
        if not speaking.chunks:
            totals["skipped"] += 1
            self.log.write("tts_skip", stage=self.name, text=text, reason="silent synthesis")
            return seq
        if not decision.relief:  # the pace the look-ahead predicts, and the real-time factor, are the main voice's
            self._pace.observe(text, speaking.audio_s, speed, synthesis_s)
        return seq

    async def _emit(self, part: _Part, speaking: _Speaking, outbox: Channel[AudioChunk], seq: int, totals: dict,
                    text: str | None = None) -> bool:
        """Emit one part of a piece (the whole piece for most voices) as one AudioChunk: its pauses
        shortened where the decision says so, its padding trimmed and its edges faded, placed on
        the listener timeline, logged; a part that is silent after the trim is not emitted."""
        words, whole = part.words, text is not None
        piece, decision = speaking.piece, speaking.decision
        text = text if whole else clean_text(" ".join(w.text for w in words))
        samples = np.concatenate(part.buffers) if part.buffers else np.zeros(0, np.float32)
        rate = part.rate
        if rate != self.synthesizer.sample_rate:  # the relief voice's audio, at the stream's one rate
            samples, rate = resample(samples, rate, self.synthesizer.sample_rate), self.synthesizer.sample_rate
        cuts = pause_cuts(samples, rate, self.pace.pause_ms, self.joins.silence_db) if decision.shorten_pauses else []
        samples = cut(samples, cuts)
        lead = 0
        if len(samples):
            samples, lead = prepare_chunk(samples, rate, self.joins, head=part.head, tail=part.tail)
        # the voice's word marks (of a whole piece) follow the audio through the cut pauses and the trimmed lead
        marks = part.marks if whole else {}
        if len(text.split()) != len(words):
            marks = {}  # cleaning changed the words: their indices no longer match
        offsets = {w: (after_cuts(round(t * rate), cuts) - lead) / rate for w, t in marks.items()}
        if part.first is None or len(samples) == 0:
            return False
        first = part.first
        play_start = self._schedule.place(first, len(samples))
        out = AudioChunk(samples, rate, start=first, seq=seq, wall_time=first, text=text, play_start=play_start)
        speaking.audio_s += out.duration
        totals["audio_s"] += out.duration
        totals["chunks"] += 1
        self._count(decision, totals, len(words), first_part=not speaking.chunks)
        speaking.chunks += 1
        self.log.audio(
            self.name, out,
            source_time=round(piece.source_time, 4),
            sample_rate=rate,
            ttfa_ms=round((first - piece.commit_time) * 1000, 2),
            commit_time=round(piece.commit_time, 4),
            wait_ms=round((first - piece.first_commit_time) * 1000, 2),
            ready_time=round(piece.ready_time, 4),  # when the chunker let the piece go (speech.eval.listener.start_parts)
            reason=piece.reason,
            words=len(words),
            play_start=round(play_start, 4),
            word_times=word_times(words, piece, out.duration, offsets),
            speed=speaking.speed,
            **({"voice": "relief"} if decision.relief else {}),
            pace_lag_s=round(decision.lag_s, 3),
            backlog_s=round(decision.backlog_s, 3),
            **({"pauses_shortened": True} if decision.shorten_pauses else {}),
            **({"dropped": list(decision.dropped)} if decision.dropped and speaking.chunks == 1 else {}),
        )
        await outbox.put(out)
        return True

    @staticmethod
    def _count(decision: PaceDecision, totals: dict, words: int, first_part: bool = True) -> None:
        totals["controlled"] += decision.acted
        totals["faster"] += decision.speed > 1.0 + 1e-6
        totals["relief_chunks"] += decision.relief
        totals["words_relief"] += words if decision.relief else 0
        totals["pauses_shortened"] += decision.shorten_pauses
        totals["words_dropped"] += len(decision.dropped) if first_part else 0
        totals.setdefault("_speeds", []).append(decision.speed)


@dataclass
class _Speaking:
    """One piece while it is spoken: what the pace decided for it, and how much of it has been
    emitted so far (one chunk, or one per window of a voice that renders window by window)."""

    piece: SpeechPiece
    decision: PaceDecision
    speed: float  # the speed it is synthesised at (the relief voice's may be lower than the decision's)
    chunks: int = 0
    audio_s: float = 0.0


@dataclass
class _Part:
    """The chunks of one part of a piece as they arrive: samples, the voice's word marks (word of
    the piece's text -> seconds into the part) and when its first samples existed."""

    buffers: list[np.ndarray] = field(default_factory=list)
    marks: dict[int, float] = field(default_factory=dict)
    first: float | None = None
    rate: int = 0
    words: list[Word] = field(default_factory=list)
    head: bool = True  # the part begins the piece (its leading padding is trimmed)
    tail: bool = True  # the part ends the piece

    def add(self, chunk: AudioChunk, now: float) -> None:
        if self.first is None:
            self.first = now
        self.buffers.append(chunk.samples)
        self.rate = chunk.sample_rate
        for w, t in chunk.word_marks:
            self.marks.setdefault(w, t)


def relief_label(name: str = "") -> str:
    """"the relief voice", with its `--voice` value where known: how every user line names it."""
    return f"the relief voice ({name})" if name else "the relief voice"


def fell_behind(relief_words: int, unspoken_words: int, rtf: float | None = None, relief: str = "") -> str:
    """One line for a user whose voice could not say every word in time ("" when it could);
    `rtf`: the voice's synthesis seconds per second of its speech (the stage's `voice_rtf`);
    `relief`: the `--voice` value of the relief voice that spoke (the stats' `relief_voice`)."""
    if not relief_words and not unspoken_words:
        return ""
    speed = f" (it took {rtf:.1f} s to synthesise each second of speech)" if rtf is not None else ""
    lighter = f"--voice {relief}" if relief else "a lighter --voice"
    return (f"the voice fell behind the talk{speed}: {relief_words} words spoken by {relief_label(relief)}, "
            f"{unspoken_words} not spoken (try {lighter}; speech doctor --speed says which voices keep up here)")


def queued(pieces: list[SpeechPiece], chunker: TextChunker) -> list[tuple[str, float | None]]:
    """The words committed behind a piece, in speaking order: those of the pieces after it and
    those the chunker holds, each with when its source word was spoken."""
    out = [(w.text, t) for p in pieces for w, t in zip(p.words, p.spoken_times)]
    return out + chunker.waiting_words()


def voice_limited(pace: PaceConfig, synthesizer: Any) -> PaceConfig:
    """The duration control's fastest speed: as configured, else the voice's own (a synthesiser's
    `max_speed`, measured by round trip: within 5 points of its WER at normal speed)."""
    return pace.for_voice(getattr(synthesizer, "max_speed", None))


def word_times(words: list[Word], piece: SpeechPiece, duration: float, timed: dict[int, float] | None = None) -> list[list]:
    """Per spoken word: [text, when its source was spoken (None: unknown), offset in the chunk]:
    the synthesiser's timing where `timed` (word index -> seconds in the chunk) has it, else by
    character share (`timed_offsets`)."""
    spoken = {id(w): t for w, t in zip(piece.words, piece.spoken_times)}
    known = [t for t in piece.spoken_times if t is not None]
    fallback = min(known) if known else None  # a word condensation rewrote (its punctuation moved)
    offsets = timed_offsets([w.text for w in words], duration, timed or {})
    out = []
    for w, o in zip(words, offsets):
        t = spoken.get(id(w), fallback)
        out.append([w.text, None if t is None else round(t, 4), round(o, 4)])
    return out


def chunker_config(config, synthesizer=None) -> ChunkerConfig:
    """The synthesiser's preferred chunking (if any), overridden by config.tts_options.chunker."""
    options = dict(getattr(synthesizer, "chunk_defaults", {}))
    options.update(config.tts_options.chunker)
    return ChunkerConfig(**options)


def build_stage(registry, config, clock: Clock, log: EventLog) -> TtsStage:
    """The pipeline's TTS stage for `config.target` (voice: `config.voice`, see tts.backends)."""
    from .backends import create_synthesizer

    synthesizer = create_synthesizer(registry, config.target, config.voice, **config.tts_options.engine)
    pace = PaceConfig(**config.tts_options.pace)
    relief, relief_name = relief_voice(registry, config, pace)
    return TtsStage(synthesizer, clock, log, relief=relief, relief_name=relief_name,
                    chunker=chunker_config(config, synthesizer), pace=pace)


# The default relief voices, in order of preference: at its fastest SVOX Pico is heard better than
# eSpeak NG at its own (Catalan, Galician and Portuguese with Pico's Spanish voice) and its speech
# is shorter; eSpeak NG speaks wherever Pico is not installed. English is the exception: eSpeak
# NG's is heard better (docs/synthesis.md, "The relief voice").
RELIEF_VOICES = ("pico", "espeak")
RELIEF_VOICES_BY_LANGUAGE = {"en": ("espeak", "pico")}


def relief_candidates(language: str, main: str) -> tuple[str, ...]:
    """The default relief voices for a target language, in order of preference (`--voice` values),
    without `main` (the registered synthesiser that speaks the stream)."""
    from .backends import synthesizer_name

    return tuple(c for c in RELIEF_VOICES_BY_LANGUAGE.get(language.split("-")[0], RELIEF_VOICES)
                 if synthesizer_name(language, c) != main)


def relief_voice(registry, config, pace: PaceConfig) -> tuple[Any, str]:
    """The relief voice for `config.target` (`tts_options.relief_voice`) and its `--voice` value,
    or (None, ""): when there is none to use (the control is off, no relief level, the main voice is
    the relief voice itself) or none of the default ones is installed. A relief voice the user
    names must load."""
    from speech.options import TtsOptions

    from .backends import create_synthesizer, synthesizer_name

    name = (config.tts_options.relief_voice or "").strip()
    if name.lower() in ("", "none") or not pace.control or pace.relief_lag_s is None:
        return None, ""
    main = synthesizer_name(config.target, config.voice)
    if name != TtsOptions.relief_voice:  # named by the user
        if synthesizer_name(config.target, name) == main:
            return None, ""
        return create_synthesizer(registry, config.target, name), name
    for candidate in relief_candidates(config.target, main):
        try:
            return create_synthesizer(registry, config.target, candidate), candidate
        except (UserError, RuntimeError, OSError):  # not installed, or not for this language: the next one
            continue
    return None, ""  # pieces too far behind are skipped instead
