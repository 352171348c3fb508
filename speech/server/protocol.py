"""The websocket protocol, version 2 (documented in docs/protocol.md).

Speaker (`/ws`), client -> server: one JSON `hello` (or a hello with `resume`), then binary audio
frames (pcm16 little-endian mono, or one Opus packet per frame), then a JSON `end`. Server -> client:
JSON events, each with a session-wide sequence number `seq`, and binary output audio frames; each
binary frame is announced by the JSON `audio` event sent just before it. Listener
(`/ws/listen?session=ID&target=xx`): sends nothing, receives one target's events and audio.

Everything a client sends is validated here; a violation raises `ProtocolError`, which the server
turns into one `error` event and a closed connection.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

VERSION = 2
ACCEPTED_VERSIONS = (1, 2)  # version 1 hellos are a subset; the events are version 2's

INPUT_CODECS = ("pcm16", "opus")
OUTPUT_CODECS = ("pcm16", "opus")
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
MIN_SAMPLE_RATE = 8000
MAX_SAMPLE_RATE = 96000

MAX_TEXT_BYTES = 8 * 1024  # a JSON control message
MAX_AUDIO_FRAME_BYTES = 256 * 1024  # 1.3 s of pcm16 at 96 kHz
MAX_TRANSPORT_BYTES = 1024 * 1024  # websockets closes with 1009 beyond this
LANGUAGE_CHARS = set("abcdefghijklmnopqrstuvwxyz-")
MAX_TARGETS = 8
MAX_ID_CHARS = 100

# Close codes (RFC 6455 + registered ones).
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_POLICY = 1008  # authentication, origin, protocol order
CLOSE_UNSUPPORTED = 1003  # unknown codec, wrong frame kind
CLOSE_TOO_BIG = 1009
CLOSE_INTERNAL = 1011  # the session's pipeline failed
CLOSE_TRY_AGAIN = 1013  # busy


class ProtocolError(Exception):
    """A client broke the protocol: `code` is machine-readable, the message says what to do."""

    def __init__(self, code: str, message: str, close_code: int = CLOSE_POLICY) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.close_code = close_code


@dataclass(frozen=True)
class Resume:
    """Continue a session after a dropped connection: every event after `last_seq` is sent again."""

    session: str
    token: str
    last_seq: int = 0

    def to_json(self) -> dict:
        return {"session": self.session, "token": self.token, "last_seq": self.last_seq}


@dataclass(frozen=True)
class Hello:
    source: str
    target: str
    sample_rate: int
    codec: str = "pcm16"
    output_codec: str = "pcm16"
    token: str = ""
    client: str = ""  # free text, for the server log
    targets: tuple[str, ...] = ()  # several targets; empty: just `target`
    resume: Resume | None = None

    @property
    def all_targets(self) -> tuple[str, ...]:
        return self.targets or (self.target,)

    def to_json(self) -> dict:
        out = {
            "type": "hello",
            "version": VERSION,
            "source": self.source,
            "target": self.target,
            "sample_rate": self.sample_rate,
            "codec": self.codec,
            "output_codec": self.output_codec,
            "token": self.token,
            "client": self.client,
        }
        if self.targets:
            out["targets"] = list(self.targets)
        if self.resume is not None:
            out["resume"] = self.resume.to_json()
        return out


def parse_message(raw: str | bytes) -> dict:
    """A text frame as a JSON object with a string `type`, or ProtocolError."""
    if isinstance(raw, bytes):
        raise ProtocolError("unexpected_binary", "expected a JSON text message here, got a binary frame")
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise ProtocolError(
            "message_too_big", f"a JSON message may hold at most {MAX_TEXT_BYTES} bytes", CLOSE_TOO_BIG
        )
    try:
        msg = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ProtocolError("bad_json", f"not valid JSON ({getattr(e, 'msg', e)})", CLOSE_UNSUPPORTED) from None
    if not isinstance(msg, dict):
        raise ProtocolError("bad_message", "a message must be a JSON object with a 'type' field")
    kind = msg.get("type")
    if not isinstance(kind, str):
        raise ProtocolError("bad_message", "a message needs a string 'type' field (hello, end)")
    return msg


def _string(msg: dict, key: str, default: str | None = None) -> str:
    value = msg.get(key, default)
    if value is None:
        raise ProtocolError("bad_hello", f"hello needs '{key}'")
    if not isinstance(value, str):
        raise ProtocolError("bad_hello", f"hello '{key}' must be a string, got {type(value).__name__}")
    return value


def _language(msg: dict, key: str) -> str:
    value = _string(msg, key).lower()
    if not (2 <= len(value) <= 12) or not set(value) <= LANGUAGE_CHARS:
        raise ProtocolError("bad_language", f"hello '{key}' must be a language code like 'en', got {value[:20]!r}")
    return value


def parse_hello(msg: dict) -> Hello:
    """Validate a parsed `hello` message."""
    if msg.get("type") != "hello":
        raise ProtocolError("hello_expected", f"the first message must be a JSON hello, got type {str(msg.get('type'))[:20]!r}")
    version = msg.get("version", VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version not in ACCEPTED_VERSIONS:
        raise ProtocolError("bad_version", f"this server speaks protocol version {VERSION}, got {str(version)[:20]!r}")
    rate = msg.get("sample_rate")
    if isinstance(rate, float) and math.isfinite(rate) and rate.is_integer():
        rate = int(rate)
    if not isinstance(rate, int) or isinstance(rate, bool):
        raise ProtocolError("bad_sample_rate", "hello 'sample_rate' must be an integer number of Hz")
    if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        raise ProtocolError(
            "bad_sample_rate", f"sample rate {rate} Hz is out of range ({MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz)"
        )
    codec = _string(msg, "codec", "pcm16")
    if codec not in INPUT_CODECS:
        raise ProtocolError(
            "unknown_codec", f"unknown input codec {codec[:20]!r}; use one of {', '.join(INPUT_CODECS)}", CLOSE_UNSUPPORTED
        )
    if codec == "opus" and rate not in OPUS_RATES:
        raise ProtocolError(
            "bad_sample_rate", f"Opus input needs a rate of {', '.join(map(str, OPUS_RATES))} Hz, got {rate}"
        )
    output_codec = _string(msg, "output_codec", "pcm16")
    if output_codec not in OUTPUT_CODECS:
        raise ProtocolError(
            "unknown_codec",
            f"unknown output codec {output_codec[:20]!r}; use one of {', '.join(OUTPUT_CODECS)}",
            CLOSE_UNSUPPORTED,
        )
    targets = _targets(msg)
    source = _language(msg, "source")
    if source in targets:
        raise ProtocolError("bad_language", f"the source {source!r} is also a target; give other target languages")
    return Hello(
        source=source,
        target=targets[0],
        sample_rate=rate,
        codec=codec,
        output_codec=output_codec,
        token=_string(msg, "token", ""),
        client=_string(msg, "client", "")[:100],
        targets=targets if "targets" in msg else (),
        resume=_resume(msg.get("resume")),
    )


def _targets(msg: dict) -> tuple[str, ...]:
    """`targets: [...]` (several) or `target` (one); repeats removed."""
    if "targets" not in msg:
        return (_language(msg, "target"),)
    value = msg["targets"]
    if not isinstance(value, list) or not value:
        raise ProtocolError("bad_hello", "hello 'targets' must be a non-empty list of language codes")
    if len(value) > MAX_TARGETS:
        raise ProtocolError("bad_hello", f"hello 'targets' may name at most {MAX_TARGETS} languages")
    targets = tuple(dict.fromkeys(_language({"target": v}, "target") for v in value))
    if "target" in msg and _language(msg, "target") not in targets:
        raise ProtocolError("bad_hello", "hello 'target' must be one of 'targets' when both are given")
    return targets


def _resume(value: Any) -> Resume | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ProtocolError("bad_resume", "hello 'resume' must be an object {session, token, last_seq}")
    session, token, last = value.get("session"), value.get("token"), value.get("last_seq", 0)
    if not isinstance(session, str) or not session or len(session) > MAX_ID_CHARS:
        raise ProtocolError("bad_resume", "resume 'session' must be the session id from ready")
    if not isinstance(token, str) or len(token) > MAX_ID_CHARS:
        raise ProtocolError("bad_resume", "resume 'token' must be the resume_token from ready")
    if not isinstance(last, int) or isinstance(last, bool) or last < 0:
        raise ProtocolError("bad_resume", "resume 'last_seq' must be the seq of the last event received (0: none)")
    return Resume(session, token, last)


@dataclass(frozen=True)
class ListenRequest:
    session: str
    target: str
    token: str = ""


def parse_listen_query(query: dict[str, list[str]]) -> ListenRequest:
    """`/ws/listen?session=ID&target=xx[&token=T]` (parsed with urllib.parse.parse_qs)."""
    session = query.get("session", [""])[0]
    if not session or len(session) > MAX_ID_CHARS:
        raise ProtocolError("bad_listen", "give ?session=ID (from the speaker's ready) and &target=xx")
    target = query.get("target", [""])[0].lower()
    if not (2 <= len(target) <= 12) or not set(target) <= LANGUAGE_CHARS:
        raise ProtocolError("bad_language", f"&target must be a language code like 'es', got {target[:20]!r}")
    return ListenRequest(session, target, query.get("token", [""])[0])


def dumps(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def error_event(code: str, message: str, **extra: Any) -> dict:
    return {"type": "error", "code": code, "message": message, **extra}


def text_event(kind: str, record: dict, lag: float | None) -> dict:
    """A `recognition` or `translation` event from an EventLog `update` record."""
    committed = record.get("committed", [])
    tentative = record.get("tentative", [])
    target = {"target": record["target"]} if kind == "translation" and record.get("target") else {}
    return {
        "type": kind,
        **target,
        "committed": [w["text"] for w in committed],
        "tentative": [w["text"] for w in tentative],
        "final": bool(record.get("final", False)),
        "end_of_stream": bool(record.get("end_of_stream", False)),
        "source_time": record.get("source_time", 0.0),
        "wall_time": record.get("wall_time", 0.0),
        "lag": None if lag is None else round(lag, 4),
    }
