"""A live session: one pipeline that outlives its connections.

The speaker's websocket is a transport that attaches and detaches (`attach`, `detach`); listeners
attach to one target each. The pipeline, its input queue, its event log and its event timeline
belong to the session, so a dropped connection does not lose them:

- every event gets a session-wide `seq` and is kept in a bounded replay buffer (`Replay`), so a
  speaker who resumes first receives every event after the last one it saw;
- a session is never cancelled because its speaker went away: when the speaker is gone for good
  (the grace period ran out, or the server refused it: `idle_timeout`, `overloaded`, a protocol
  error) its input is ended, and the pipeline flushes every committed word through its links into
  the event log (and to the listeners) before the session ends.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..channel import Channel
from ..clock import WallClock
from ..events import EventLog
from ..stage import StageError
from ..types import AudioChunk, EncodedPacket
from . import protocol as P
from .audio_input import InputAudio
from .outbox import Outbox
from .stats import SessionStats

if TYPE_CHECKING:
    from .hub import SessionHub

MAX_BACKLOG_S = 30.0  # input audio the pipeline may fall behind before the session is refused
REPLAY_BYTES = 32 * 1024 * 1024  # events (with their audio) kept for a speaker who resumes


class Replay:
    """The session's events in order, each with its `seq`; the oldest go beyond `max_bytes`."""

    def __init__(self, max_bytes: int = REPLAY_BYTES) -> None:
        self.max_bytes = max_bytes
        self.last_seq = 0
        self.bytes = 0
        self._items: deque[tuple[int, str, bytes | None]] = deque()

    def add(self, text: str, payload: bytes | None) -> None:
        self._items.append((self.last_seq, text, payload))
        self.bytes += len(text) + (len(payload) if payload else 0)
        while self.bytes > self.max_bytes and len(self._items) > 1:
            _, old, data = self._items.popleft()
            self.bytes -= len(old) + (len(data) if data else 0)

    def next_seq(self) -> int:
        self.last_seq += 1
        return self.last_seq

    @property
    def first_seq(self) -> int:
        return self._items[0][0] if self._items else self.last_seq + 1

    def after(self, seq: int) -> list[tuple[int, str, bytes | None]]:
        return [item for item in self._items if item[0] > seq]


class LiveSession:
    def __init__(self, hub: "SessionHub", hello: P.Hello, number: int, session_id: str, resume_token: str,
                 log: EventLog) -> None:
        self.hub = hub
        self.hello = hello
        self.number = number
        self.id = session_id
        self.resume_token = resume_token
        self.targets = hello.all_targets
        self.spoken = hello.source  # "auto" until the language is told (speech.auto_source)
        self.clock = WallClock()
        self.input = InputAudio(hello.codec, hello.sample_rate)
        self.log = log
        self.replay = Replay()
        self.stats = SessionStats(self.targets)
        self.speaker: Outbox | None = None
        self.listeners: dict[str, set[Outbox]] = {t: set() for t in self.targets}
        self.frames_in = 0  # binary frames received: where a resuming client continues
        self.input_ended = False
        self.end_reason = ""  # why the input ended: end, disconnected, shutdown, or a refusal's code
        self.finished = False  # the pipeline is over and `done` (or an error) was published
        self.task: asyncio.Task | None = None
        self.grace: asyncio.TimerHandle | None = None
        self._inq: asyncio.Queue[AudioChunk | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._end_wall: float | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, session: Any) -> None:
        self.clock.restart()
        self.task = asyncio.create_task(self._run(session), name=f"session-{self.number}")

    async def _run(self, session: Any) -> None:
        metrics = self.hub.metrics
        error: StageError | None = None
        try:
            await session.run()
        except StageError as e:
            error = e
        finally:
            # Records logged from worker threads were scheduled before their threads returned; one
            # turn of the loop delivers them, so `done` follows every committed word.
            await asyncio.sleep(0)
            self.log.write("end", reason=self.end_reason or ("error" if error else "end"),
                           source_duration=round(self.input.seconds, 4), wall_time=round(self.clock.now(), 4))
            self.log.close()
            metrics.audio_in_s += self.input.seconds
            self.finished = True
            if error is not None:
                metrics.errors["pipeline_error"] += 1
                stage = error.stage.rpartition(":")[2]
                self._publish_error(P.error_event("pipeline_error", str(error), stage=stage), P.CLOSE_INTERNAL)
            else:
                metrics.sessions_completed += 1
                summary = self.stats.summary(self.input.seconds, self.clock.now(), self._end_wall,
                                             self.end_reason == "end")
                if summary["rtf"] is not None:
                    metrics.recent_rtfs.append(summary["rtf"])
                self._publish({"type": "done", "reason": self.end_reason or "end", "summary": summary},
                              listener_event={"type": "done", "reason": _listener_reason(self.end_reason)})
                if self.speaker is not None:
                    self.speaker.close()
                for outboxes in self.listeners.values():
                    for box in outboxes:
                        box.close()
            self.hub.finished(self)

    # -- the speaker's transport -----------------------------------------------------------
    def check_resume(self, resume: P.Resume) -> None:
        if not hmac.compare_digest(resume.token.encode(), self.resume_token.encode()):
            raise P.ProtocolError("unauthorized", "the resume token does not match this session")
        if resume.last_seq > self.replay.last_seq:
            raise P.ProtocolError("bad_resume", f"last_seq {resume.last_seq} was never sent (last is {self.replay.last_seq})")
        if resume.last_seq + 1 < self.replay.first_seq:
            raise P.ProtocolError("resume_gap", f"events after {resume.last_seq} are no longer kept (oldest kept: "
                                                f"{self.replay.first_seq}); start a new session")

    def attach(self, outbox: Outbox, last_seq: int | None, listen_base: str) -> None:
        """The speaker's connection (first or resumed): `ready`, then every event after `last_seq`."""
        if self.grace is not None:
            self.grace.cancel()
            self.grace = None
        old, self.speaker = self.speaker, outbox
        if old is not None and old is not outbox:
            old.fail("replaced", "another connection resumed this session", P.CLOSE_POLICY)
        ready = {
            "type": "ready", "version": P.VERSION, "session": self.id, "resume_token": self.resume_token,
            "source": self.spoken, "target": self.targets[0], "targets": list(self.targets),
            "listen": {t: f"{listen_base}?session={self.id}&target={t}" for t in self.targets},
            "resumed": last_seq is not None, "last_seq": self.replay.last_seq,
            "frames_received": self.frames_in, "input_ended": self.input_ended,
        }
        outbox.put(P.dumps(ready))
        self.log.write("transport", event="resumed" if last_seq is not None else "attached",
                       last_seq=last_seq, wall_time=round(self.clock.now(), 4))
        if last_seq is not None:
            for _, text, payload in self.replay.after(last_seq):
                outbox.put(text)
                if payload is not None:
                    outbox.put(payload)
            if self.finished:
                outbox.close()

    def detach(self, outbox: Outbox, reason: str) -> None:
        """The speaker's connection is gone: wait `resume_grace` seconds for it, then end the input."""
        if self.speaker is not outbox:
            return  # already replaced by a resumed connection
        self.speaker = None
        self.log.write("transport", event="detached", reason=reason, wall_time=round(self.clock.now(), 4))
        if self.finished or self.input_ended:
            return
        grace = self.hub.config.resume_grace
        if grace <= 0:
            self.end_input(reason)
        else:
            self.grace = self._loop.call_later(grace, self.end_input, reason)

    def refuse(self, outbox: Outbox, error: P.ProtocolError) -> None:
        """The server refuses the speaker: error and close; the committed words still flush."""
        outbox.fail(error.code, error.message, error.close_code)
        if self.speaker is outbox:
            self.speaker = None
        self.end_input(error.code, drop_queued=error.code == "overloaded")

    # -- input -----------------------------------------------------------------------------
    def feed(self, frame: bytes, outbox: Outbox | None = None) -> None:
        """One audio frame from the speaker attached as `outbox` (a replaced connection is not heard)."""
        if self.input_ended or (outbox is not None and outbox is not self.speaker):
            return  # the input was ended by the server, or a resumed connection took over
        chunk = self.input.frame(frame, self.clock.now())
        self.frames_in += 1
        if chunk is None:
            return
        backlog = self._inq.qsize() * chunk.duration
        if backlog > MAX_BACKLOG_S:
            raise P.ProtocolError(
                "overloaded", f"the server fell {backlog:.0f} s behind the audio; try again later", P.CLOSE_TRY_AGAIN
            )
        self._inq.put_nowait(chunk)

    def end_input(self, reason: str = "end", drop_queued: bool = False) -> None:
        """End of speech: the pipeline flushes. `drop_queued` drops audio not yet recognised."""
        if self.input_ended:
            return
        self.input_ended = True
        self.end_reason = reason
        self._end_wall = self.clock.now()
        if drop_queued:
            while not self._inq.empty():
                self._inq.get_nowait()
        tail = self.input.finish(self.clock.now())
        if tail is not None:
            self._inq.put_nowait(tail)
        self._inq.put_nowait(None)

    async def source(self, outbox: Channel[AudioChunk]) -> None:
        while (chunk := await self._inq.get()) is not None:
            await outbox.put(chunk)

    # -- output ----------------------------------------------------------------------------
    def sink_for(self, target: str) -> Callable[[Channel[Any]], Any]:
        async def sink(inbox: Channel[Any]) -> None:
            async for item in inbox:
                if isinstance(item, EncodedPacket):
                    meta = {"codec": item.codec, "sample_rate": item.sample_rate, "samples": item.samples,
                            "start": round(item.start, 4), "chunk": item.seq}
                    payload = item.data
                elif isinstance(item, AudioChunk):
                    pcm = np.clip(item.samples, -1.0, 1.0)
                    payload = (pcm * 32767.0).astype("<i2").tobytes()
                    meta = {"codec": "pcm16", "sample_rate": item.sample_rate, "samples": len(item.samples),
                            "start": round(item.start, 4), "chunk": item.seq}
                else:
                    continue  # text-only pipelines: their text already went out as events
                seconds = meta["samples"] / meta["sample_rate"]
                self.stats.audio_out(target, seconds)
                self.hub.metrics.audio_out_s += seconds
                self._publish({"type": "audio", "target": target, **meta, "bytes": len(payload)}, payload, target)

        return sink

    def sinks(self) -> dict[str, Callable[[Channel[Any]], Any]]:
        return {t: self.sink_for(t) for t in self.targets}

    def _publish(self, event: dict, payload: bytes | None = None, target: str | None = None,
                 listener_event: dict | None = None) -> None:
        """Number the event, keep it for replay, send it to the speaker and to the target's listeners."""
        event["seq"] = self.replay.next_seq()
        text = P.dumps(event)
        self.replay.add(text, payload)
        if self.speaker is not None and self.speaker.put(text) and payload is not None:
            self.speaker.put(payload)
        if listener_event is not None:
            listener_text = P.dumps({**listener_event, "seq": event["seq"]})
            boxes = [b for group in self.listeners.values() for b in group]
        else:
            listener_text = text
            boxes = list(self.listeners.get(target, ())) if target is not None else []
        for box in boxes:
            if box.put(listener_text) and payload is not None:
                box.put(payload)
            if box.error == "slow_client":
                self.hub.metrics.errors["slow_client"] += 1
                self.remove_listener(box)

    def _publish_error(self, event: dict, close_code: int) -> None:
        event["seq"] = self.replay.next_seq()
        self.replay.add(P.dumps(event), None)
        for box in ([self.speaker] if self.speaker else []) + [b for g in self.listeners.values() for b in g]:
            box.fail(event["code"], event["message"], close_code, stage=event.get("stage"), seq=event["seq"])

    # -- listeners -------------------------------------------------------------------------
    def add_listener(self, target: str, outbox: Outbox) -> None:
        if target not in self.listeners:
            raise P.ProtocolError("unknown_target", f"this session speaks {', '.join(self.targets)}, not {target!r}")
        if self.finished:
            raise P.ProtocolError("unknown_session", "this session has ended")
        if sum(len(g) for g in self.listeners.values()) >= self.hub.config.max_listeners:
            raise P.ProtocolError("too_many_listeners", f"this session already has {self.hub.config.max_listeners} "
                                  "listeners", P.CLOSE_TRY_AGAIN)
        self.listeners[target].add(outbox)
        outbox.put(P.dumps({"type": "listening", "version": P.VERSION, "session": self.id, "target": target,
                            "source": self.spoken, "seq": self.replay.last_seq}))

    def remove_listener(self, outbox: Outbox) -> None:
        for group in self.listeners.values():
            group.discard(outbox)

    @property
    def listener_count(self) -> int:
        return sum(len(g) for g in self.listeners.values())

    # -- events from the event log (any thread) --------------------------------------------
    def on_record_any_thread(self, rec: dict) -> None:
        if threading.get_ident() == self._loop_thread:
            self._on_record(rec)
        else:
            self._loop.call_soon_threadsafe(self._on_record, rec)

    def _lag(self, source_time: float | None) -> float | None:
        if source_time is None:
            return None
        arrived = self.input.arrivals.arrival(float(source_time))
        return None if arrived is None else max(0.0, self.clock.now() - arrived)

    def _heard_lags(self, rec: dict) -> list[tuple[float, float]]:
        """(heard, lag) of each word of a synthesised chunk whose source is known: when the
        listener hears it (the chunk's `play_start` + the word's offset, session seconds) and that
        minus when its source word was spoken (`ArrivalTimes.spoken`; speech.eval.listener defines
        the same figure offline)."""
        start = rec.get("play_start")
        if start is None:
            return []
        out = []
        for _text, spoken, offset in rec.get("word_times") or []:
            said = None if spoken is None else self.input.arrivals.spoken(float(spoken))
            if said is not None:
                heard = float(start) + float(offset)
                out.append((heard, heard - said))
        return out

    def _on_record(self, rec: dict) -> None:
        kind, stage, target = rec.get("kind"), rec.get("stage"), rec.get("target")
        if target is None and stage != "asr" and len(self.targets) == 1:
            target = self.targets[0]  # a pipeline whose stages do not name their target
        if kind == "update" and stage in ("asr", "mt"):
            name = "recognition" if stage == "asr" else "translation"
            lag = self._lag(rec.get("source_time"))
            committed = len(rec.get("committed", []))
            self.stats.text(name, target, committed, lag)
            if committed and lag is not None:
                self.hub.metrics.observe_lag(lag)
            if name == "translation":
                rec = {**rec, "target": target}
            self._publish(P.text_event(name, rec, lag), target=target if name == "translation" else None)
        elif kind == "audio" and stage == "tts":
            heard = self._heard_lags(rec)
            lags = [lag for _, lag in heard]
            relief = rec.get("voice") == "relief"  # the main voice was too far behind (tts.pace)
            relief_words = int(rec.get("words") or 0) if relief else 0
            self.stats.synthesis(target, lags, relief_words)
            self.hub.metrics.voice_behind["relief"] += relief_words
            for lag in lags:
                self.hub.metrics.observe_listener_lag(lag)
            event = {"type": "synthesis", "target": target, "text": rec.get("text", ""), "start": rec.get("start"),
                     "duration": rec.get("duration"), "chunk": rec.get("seq"), "play_start": rec.get("play_start"),
                     "speed": rec.get("speed"), "lag": round(lags[0], 4) if lags else None,
                     "word_lags": [round(x, 4) for x in lags], "word_heard": [round(t, 4) for t, _ in heard],
                     **({"voice": "relief"} if relief else {})}
            self._publish(event, target=target)
        elif kind == "tts_skip" and rec.get("reason") == "behind":
            # the voice cannot keep up on this machine: the piece is not spoken (its text was sent)
            self.stats.unspoken(target, int(rec.get("words") or 0))
            self.hub.metrics.voice_behind["unspoken"] += int(rec.get("words") or 0)
            self._publish({"type": "unspoken", "target": target, "text": rec.get("text", ""),
                           "lag": rec.get("lag_s")}, target=target)
        elif kind == "stats":
            self.stats.compute(rec.get("compute_s"))
            if stage == "tts" and rec.get("voice_rtf") is not None:
                self.stats.voice_rtf(target, float(rec["voice_rtf"]))
            if stage == "tts" and rec.get("relief_voice"):
                self.stats.relief_voice(target, str(rec["relief_voice"]))
        elif kind == "language" and rec.get("detected"):  # told from the first speech: everyone hears of it
            self.spoken = rec["detected"]
            event = {"type": "language", "source": self.spoken, "probability": rec.get("probability"),
                     "speech_s": rec.get("speech_s"), **({"untranslated": rec["untranslated"]}
                                                         if rec.get("untranslated") else {})}
            self._publish(event, listener_event=dict(event))


def _listener_reason(reason: str) -> str:
    if reason == "end":
        return "speaker_ended"
    if reason == "shutdown":
        return "shutdown"
    return "speaker_disconnected"
