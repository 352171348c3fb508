"""The server's live sessions, by id: opened by a speaker, resumed by the same speaker after a
dropped connection, listened to by any number of listeners.

The hub owns the sessions (a connection only attaches to one), so a session outlives the
connection that opened it. A session holds a slot while its pipeline runs; once it is over it is
kept for `resume_grace` seconds more when its speaker is not attached, so that a speaker who comes
back still receives the end of it.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING

from ..events import EventLog, EventLogError
from . import protocol as P
from .live import LiveSession

if TYPE_CHECKING:
    from .server import SpeechServer


class SessionHub:
    def __init__(self, server: "SpeechServer") -> None:
        self.server = server
        self.sessions: dict[str, LiveSession] = {}
        self._expiry: dict[str, asyncio.TimerHandle] = {}

    @property
    def config(self):  # noqa: ANN201 - the server's ServerConfig
        return self.server.config

    @property
    def metrics(self):  # noqa: ANN201 - the server's Metrics
        return self.server.metrics

    def find(self, session_id: str) -> LiveSession | None:
        return self.sessions.get(session_id)

    async def open(self, hello: P.Hello, number: int) -> LiveSession:
        """A new session for a speaker's hello: takes a slot and builds the pipeline (or refuses)."""
        session_id = self.server.session_id(secrets.token_urlsafe(16))
        live = LiveSession(self, hello, number, session_id, secrets.token_urlsafe(24), EventLog(keep=False))
        if not self.server.try_acquire(live):
            self.metrics.rejected["busy"] += 1
            raise P.ProtocolError(
                "busy", f"the server is busy ({self.config.max_sessions} sessions); try again later", P.CLOSE_TRY_AGAIN
            )
        try:
            log = live.log = EventLog(self.server.log_path(number), keep=False, on_record=live.on_record_any_thread)
        except OSError as e:
            self.server.release(live)
            raise P.ProtocolError("log_unwritable", f"cannot write the session's event log ({e})", P.CLOSE_INTERNAL) from None
        try:
            session = await asyncio.to_thread(
                self.server.pipeline, hello, live.source, live.sinks(), live.clock, log
            )
        except (ValueError, LookupError, RuntimeError, ImportError, MemoryError, OSError) as e:
            self.server.release(live)
            log.close()
            pair = f"{hello.source}->{','.join(hello.all_targets)}"
            raise P.ProtocolError("unavailable", f"cannot build a pipeline for {pair}: {e}", P.CLOSE_INTERNAL) from None
        except BaseException:
            self.server.release(live)
            log.close()
            raise
        try:
            log.write("session", id=session_id, source=hello.source, targets=list(hello.all_targets),
                      client=hello.client)
        except EventLogError as e:  # a full disk: the session cannot keep its record
            self.server.release(live)
            log.close()
            raise P.ProtocolError("log_unwritable", str(e), P.CLOSE_INTERNAL) from None
        self.sessions[session_id] = live
        live.start(session)
        if self.server.closing:  # shutdown began while the pipeline was being built
            live.end_input("shutdown")
        return live

    def resume(self, resume: P.Resume) -> LiveSession:
        live = self.sessions.get(resume.session)
        if live is None:
            self.metrics.rejected["unknown_session"] += 1
            raise P.ProtocolError("unknown_session", "no such session (it ended, or its grace period ran out); "
                                  "start a new one")
        live.check_resume(resume)
        handle = self._expiry.pop(live.id, None)
        if handle is not None:  # over, but kept for this speaker: forget it once it has been told
            handle.cancel()
            self._expiry[live.id] = asyncio.get_running_loop().call_later(
                self.config.resume_grace, self._forget, live.id)
        return live

    def finished(self, live: LiveSession) -> None:
        """The pipeline is over: free the slot; keep the session for a speaker who may come back
        (even an attached one: its connection may be dead without the server knowing yet)."""
        self.server.release(live)
        if self.config.resume_grace > 0 and not self.server.closing:
            self._expiry[live.id] = asyncio.get_running_loop().call_later(
                self.config.resume_grace, self._forget, live.id)
        else:
            self._forget(live.id)

    def delivered(self, live: LiveSession) -> None:
        """The speaker acknowledged the close that follows `done`: nothing is left to resume."""
        handle = self._expiry.pop(live.id, None)
        if handle is not None:
            handle.cancel()
        self._forget(live.id)

    def _forget(self, session_id: str) -> None:
        self._expiry.pop(session_id, None)
        self.sessions.pop(session_id, None)

    async def shutdown(self, timeout: float) -> None:
        """Flush every session as if its speaker had sent `end`, and wait for them."""
        for live in list(self.sessions.values()):
            live.end_input("shutdown")
        tasks = [live.task for live in self.sessions.values() if live.task is not None and not live.task.done()]
        if tasks:
            _, still = await asyncio.wait(tasks, timeout=timeout)
            for task in still:
                task.cancel()
            if still:
                await asyncio.wait(still, timeout=5)
        for handle in self._expiry.values():
            handle.cancel()
        self._expiry.clear()
        self.sessions.clear()
