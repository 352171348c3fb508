"""Duration control: keeps the listener's lag bounded when the translated speech runs longer than
its source.

Every stage can keep up with real time and the listener still fall behind: when the translation
takes longer to say than the source took (Spanish from English runs ~1.2x), each chunk waits for
the end of the previous one and the wait adds up over a talk. The controller watches the
listener timeline and, for each piece about to be spoken, chooses:

1. a speed (1 = the voice's own): proportional to the part of the predicted lag above
   `target_lag_s` that is backlog (the wait behind earlier speech; the rest of the lag is the
   recogniser's and translator's, which speaking faster cannot remove), at most `max_speed`,
   changed by at most `max_step` from one piece to the next so speech never jumps in tempo, and
   never inside a piece (a piece is one synthesiser call of whole words). The lag predicted is
   the worst of the piece's first word and of the words already committed behind it, then the
   translator's tentative tail (`queued`, placed at the voice's observed seconds per character):
   a sentence end commits many words at once, and the pieces ahead of them are sped up before
   those words start to wait;
2. shorter pauses: silences inside the piece longer than `pause_ms` are cut to it while behind;
3. condensation, only when the lag stays above `condense_lag_s` at full speed: words a listener
   misses least are dropped (fillers, a word repeated at once, a clause the listener has just
   heard), never more than `max_condense` of the words spoken so far;
4. a relief voice, when a piece's first word would be heard more than `relief_lag_s` after it was
   spoken and the piece waited for the synthesiser (the machine synthesises more slowly than the
   speaker talks: a large voice on a small CPU, where neither speed nor condensation removes the
   compute that is missing): the stage's cheaper voice speaks the pieces until the lag is back
   under the target lag (`relief_until_lag_s`), so every word is still heard and the main voice
   catches up. A main voice that needed relief once has shown that the machine lacks its compute,
   so from then on the relief voice takes over as soon as that voice holds a piece back above
   `condense_lag_s`. So it does, before any relief, for a main voice whose real-time factor is
   above `relief_rtf` (`voice_rtf`: its synthesis time per second of its speech, judged once it
   has spent `RTF_COMPUTE_S` synthesising): such a voice cannot keep up, and waiting for the lag
   to pass `relief_lag_s` only makes the start of the talk the worst of it. Nor is it handed back:
   every piece it spoke would set the listener further behind;
5. skipping, when a piece's first word would be heard more than `skip_lag_s` after it was spoken
   (no relief voice, or even it falls behind): the piece is not spoken (its words stay in the
   translation's text), which also spares its synthesis, so the voice catches up with the talk
   instead of falling further behind every minute.

Every decision is returned as a `PaceDecision` that the TTS stage logs with the chunk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from speech.types import Word

from .condense import clauses, condense


DEFAULT_MAX_SPEED = 1.6  # for a voice with no measured limit
# A piece that waited this long for the synthesiser (busy with earlier pieces) shows that the voice,
# not the recogniser or the translator, holds the listener back: only then does the relief voice help,
# and a voice that renders window by window renders whole (its windows cost compute the voice lacks)
VOICE_BEHIND_S = 1.0
# the synthesis time the main voice must have spent before its real-time factor is judged: more
# than a short piece's, and short, since a voice that slow has added about this much to the lag by then
RTF_COMPUTE_S = 2.0


@dataclass(frozen=True)
class PaceConfig:
    control: bool = True  # False: every piece at the voice's own speed, nothing condensed
    target_lag_s: float = 3.0  # listener lag above which the backlog is worked off
    # fastest speech (1 = the voice's own rate); None: the voice's measured limit (a synthesiser's
    # `max_speed`: its round trip within 5 points of normal speed), else DEFAULT_MAX_SPEED
    max_speed: float | None = None
    min_speed: float = 1.0  # slowest speech: a listener who wants it always faster (= max_speed: fixed)
    # speed added per second of backlog above the target lag, and the largest change from one
    # piece to the next: 10-minute en->es talk (`speech bench s2st --long 10 --pairs en-es --control
    # on`), listener lag p90 5.04 s and 6 of 11 minutes above 5 s with 0.25 and 0.15; 4.73 s and 3
    # with 0.5 and 0.25; 4.65 s and 3 with 1.0 and 0.25 (the minutes left are the pipeline's lag)
    gain: float = 0.5
    max_step: float = 0.25
    pause_ms: float = 120.0  # while behind, a silence inside a piece is cut to this (0: never)
    condense_lag_s: float = 6.0  # at full speed and above this lag, drop what is missed least
    max_condense: float = 0.05  # at most this share of the words spoken so far is dropped
    # above this predicted lag a piece is not spoken (the synthesiser cannot keep up); None: never.
    # Above the worst lag of the 10-minute talks that keep up (11.1 s, docs/synthesis.md)
    skip_lag_s: float | None = 15.0
    # above this predicted lag, a piece that waited for the synthesiser is spoken by the relief
    # voice (the TTS stage's cheaper one, if it has one) until the lag is under relief_until_lag_s;
    # once the main voice has needed relief, above condense_lag_s already; None: never. Between the
    # condensation and skip levels, above the worst minute of the 10-minute talks that keep up
    # (p90 7.8 s, docs/synthesis.md)
    relief_lag_s: float | None = 10.0
    # the relief voice speaks until the predicted lag is under this; None: target_lag_s. Handing
    # back at the target rather than at condense_lag_s held a 3-minute live en->pt talk on a 2-core
    # CPU too slow for Kokoro at p50 7.6 instead of 9.4 s (docs/synthesis.md)
    relief_until_lag_s: float | None = None
    # a main voice whose real-time factor (synthesis seconds per second of its speech, measured as
    # it speaks) is above this cannot keep up with a talk: it is relieved from condense_lag_s at
    # once, as one that needed relief; None: only after a first relief. Kokoro's Portuguese lasts
    # 0.7 of the long en-pt talk, so above 1 / 0.7 it falls behind it: at RTF 1.54 the lag reached
    # the relief level anyway (p90 8.7 s with 2, 6.1 s with 1.5), at 1.18 it kept up unrelieved
    # (docs/synthesis.md, "The relief voice")
    relief_rtf: float | None = 1.5
    look_ahead: bool = True  # count the words committed behind the piece (see the module doc)
    tentative: bool = True  # count the translator's tentative tail behind them too

    def __post_init__(self) -> None:
        if self.max_speed is not None and not 1.0 <= self.max_speed <= 2.5:
            raise ValueError(f"max speed must be between 1 and 2.5 (the voice's own rate is 1), got {self.max_speed:g}")
        top = 2.5 if self.max_speed is None else self.max_speed
        if not 1.0 <= self.min_speed <= top:
            raise ValueError(f"min speed must be between 1 and the max speed ({top:g}), got {self.min_speed:g}")
        if self.target_lag_s < 0:
            raise ValueError(f"target lag must be >= 0 seconds, got {self.target_lag_s:g}")
        if self.condense_lag_s < self.target_lag_s:
            raise ValueError(
                f"condensation lag ({self.condense_lag_s:g} s) must not be below the target lag ({self.target_lag_s:g} s)"
            )
        if self.gain < 0 or self.max_step <= 0:
            raise ValueError(f"pace gain must be >= 0 and max step > 0, got {self.gain:g} and {self.max_step:g}")
        if self.skip_lag_s is not None and self.skip_lag_s < self.condense_lag_s:
            raise ValueError(
                f"skip lag ({self.skip_lag_s:g} s) must not be below the condensation lag ({self.condense_lag_s:g} s)"
            )
        skip = float("inf") if self.skip_lag_s is None else self.skip_lag_s
        if self.relief_lag_s is not None and not self.condense_lag_s <= self.relief_lag_s <= skip:
            raise ValueError(
                f"relief lag ({self.relief_lag_s:g} s) must lie between the condensation lag "
                f"({self.condense_lag_s:g} s) and the skip lag ({skip:g} s)"
            )
        if self.relief_until_lag_s is not None and not self.target_lag_s <= self.relief_until_lag_s <= self.condense_lag_s:
            raise ValueError(
                f"relief until lag ({self.relief_until_lag_s:g} s) must lie between the target lag "
                f"({self.target_lag_s:g} s) and the condensation lag ({self.condense_lag_s:g} s)"
            )
        if self.relief_rtf is not None and self.relief_rtf <= 0:
            raise ValueError(f"relief rtf must be > 0 (synthesis seconds per second of speech), got {self.relief_rtf:g}")
        if not 0 <= self.max_condense <= 0.5:
            raise ValueError(f"max condense share must be between 0 and 0.5, got {self.max_condense:g}")
        if self.pause_ms < 0:
            raise ValueError(f"pause_ms must be >= 0, got {self.pause_ms:g}")

    def for_voice(self, limit: float | None) -> "PaceConfig":
        """With `max_speed` resolved: as given, else the voice's own limit, else DEFAULT_MAX_SPEED."""
        if self.max_speed is not None:
            return self
        fastest = max(self.min_speed, limit or DEFAULT_MAX_SPEED)
        return dataclasses.replace(self, max_speed=fastest)


@dataclass(frozen=True)
class PaceDecision:
    speed: float
    lag_s: float  # the predicted listener lag of the piece's first word when it was decided
    backlog_s: float  # how long the piece would wait behind earlier speech
    shorten_pauses: bool
    dropped: tuple[str, ...] = ()  # words condensed away
    skipped: tuple[str, ...] = ()  # the whole piece, not spoken: the voice is too far behind
    relief: bool = False  # spoken by the relief voice: the main one is too far behind
    voice_behind: bool = False  # the piece waited VOICE_BEHIND_S or more for the synthesiser

    @property
    def slack_s(self) -> float:
        """How long the listener will not need the piece's first sample: the backlog, unbounded
        where the voice is behind (a voice that renders window by window renders whole within it)."""
        return float("inf") if self.voice_behind else self.backlog_s

    @property
    def acted(self) -> bool:
        return (self.speed > 1.0 + 1e-6 or self.shorten_pauses or bool(self.dropped) or bool(self.skipped)
                or self.relief)


@dataclass
class PaceController:
    """Per stream: the speed and condensation of each piece (see the module doc)."""

    config: PaceConfig = field(default_factory=PaceConfig)
    speed: float = 0.0  # 0: not started (the first piece starts at min_speed)
    words_spoken: int = 0
    words_dropped: int = 0
    words_skipped: int = 0
    relieving: bool = False  # the relief voice speaks until the lag is under relief_until_lag_s (or the target)
    relieved: bool = False  # the main voice has needed the relief voice (from then on it takes over sooner)
    seconds_per_char: float | None = None  # the voice's pace at speed 1, observed (None: not yet)
    voice_pieces: int = 0  # pieces the main voice has synthesised
    voice_compute_s: float = 0.0  # its synthesis time, from its second piece (the first may pay a warm-up)
    voice_audio_s: float = 0.0  # and the speech it made meanwhile
    _recent_clauses: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.config = self.config.for_voice(None)
        self.speed = self.speed or self.config.min_speed

    def decide(
        self, words: list[Word], ready: float, listener_end: float, spoken: float | None,
        queued: Sequence[tuple[str, float | None]] = (), waited: float = 0.0, relief: bool = False,
    ) -> tuple[list[Word], PaceDecision]:
        """`ready`: when the piece can start to be synthesised; `listener_end`: when the listener
        finishes what is already scheduled; `spoken`: when the piece's first source word was
        spoken (None: unknown, only the backlog counts); `queued`: the words known behind the
        piece in speaking order (committed, then tentative), each with when its source word was
        spoken; `waited`: how long the piece waited for the synthesiser to finish earlier pieces;
        `relief`: whether a relief voice is there to speak it."""
        backlog = max(0.0, listener_end - ready)
        start = max(ready, listener_end)
        lag = start - spoken if spoken is not None else backlog
        voice_behind = waited >= VOICE_BEHIND_S
        c = self.config
        if not c.control:
            self.words_spoken += len(words)
            return words, PaceDecision(c.min_speed, lag, backlog, False, voice_behind=voice_behind)
        if c.skip_lag_s is not None and lag > c.skip_lag_s:
            self.words_skipped += len(words)
            return [], PaceDecision(round(self.speed, 3), lag, backlog, False, skipped=tuple(w.text for w in words),
                                    voice_behind=voice_behind)
        until = c.target_lag_s if c.relief_until_lag_s is None else c.relief_until_lag_s
        level = c.condense_lag_s if self.relieved or self.overloaded else c.relief_lag_s
        self.relieving = relief and c.relief_lag_s is not None and (
            # a voice too slow for any talk is not handed back: each piece would add (rtf - 1) times
            # its length to the lag (docs/synthesis.md)
            (lag > until or self.overloaded) if self.relieving else lag > level and voice_behind
        )
        self.relieved = self.relieved or self.relieving
        excess = min(max(0.0, lag - c.target_lag_s), backlog)
        if c.look_ahead:
            excess = max(excess, self._queued_excess(words, start, backlog, queued))
        wanted = min(c.max_speed, c.min_speed + c.gain * excess)
        self.speed = float(np.clip(wanted, self.speed - c.max_step, self.speed + c.max_step))
        self.speed = max(c.min_speed, min(c.max_speed, self.speed))
        dropped: tuple[str, ...] = ()
        if lag > c.condense_lag_s and self.speed >= c.max_speed - 1e-6:
            words, dropped = self._condense(words)
        self._remember(words)
        self.words_spoken += len(words) + len(dropped)
        behind = c.pause_ms > 0 and excess > 0
        return words, PaceDecision(round(self.speed, 3), lag, backlog, behind, dropped, relief=self.relieving,
                                   voice_behind=voice_behind)

    @property
    def voice_rtf(self) -> float | None:
        """The main voice's synthesis seconds per second of its speech, from its second piece on;
        None until it has spent RTF_COMPUTE_S synthesising them."""
        if self.voice_compute_s < RTF_COMPUTE_S or self.voice_audio_s <= 0:
            return None
        return self.voice_compute_s / self.voice_audio_s

    @property
    def overloaded(self) -> bool:
        """Whether the main voice is too slow to keep up with a talk (`relief_rtf`)."""
        rtf, limit = self.voice_rtf, self.config.relief_rtf
        return rtf is not None and limit is not None and rtf > limit

    def observe(self, text: str, duration_s: float, speed: float, compute_s: float = 0.0) -> None:
        """A piece was synthesised by the main voice in `compute_s`: update its seconds per
        character at speed 1 and its real-time factor."""
        self.voice_pieces += 1
        if duration_s > 0 and self.voice_pieces > 1:
            self.voice_compute_s += compute_s
            self.voice_audio_s += duration_s
        chars = len(text) + 1
        if duration_s <= 0 or speed <= 0:
            return
        pace = duration_s * speed / chars
        self.seconds_per_char = pace if self.seconds_per_char is None else 0.8 * self.seconds_per_char + 0.2 * pace

    def _queued_excess(self, words: list[Word], start: float, backlog: float,
                       queued: Sequence[tuple[str, float | None]]) -> float:
        """The largest excess lag that is backlog among the queued words, each placed after the
        piece and the words before it at the current speed."""
        if not queued or self.seconds_per_char is None:
            return 0.0
        per_char = self.seconds_per_char / self.speed
        ahead = sum(len(w.text) + 1 for w in words) * per_char
        worst = 0.0
        for text, spoken in queued:
            if spoken is not None:
                lag = start + ahead - spoken
                worst = max(worst, min(lag - self.config.target_lag_s, backlog + ahead))
            ahead += (len(text) + 1) * per_char
        return worst

    def _condense(self, words: list[Word]) -> tuple[list[Word], tuple[str, ...]]:
        budget = int(self.config.max_condense * (self.words_spoken + len(words))) - self.words_dropped
        if budget <= 0:
            return words, ()
        kept, dropped = condense(words, self._recent_clauses, budget)
        self.words_dropped += len(dropped)
        return kept, dropped

    def _remember(self, words: list[Word]) -> None:
        for clause in clauses(words):
            self._recent_clauses.append(clause)
        self._recent_clauses = self._recent_clauses[-8:]


def add_pace_arguments(parser) -> None:  # noqa: ANN001 - argparse.ArgumentParser
    """The duration-control flags shared by `speech translate`, `serve`, `mic` and `bench s2st`."""
    d = PaceConfig()
    parser.add_argument("--target-lag", type=float, default=d.target_lag_s, metavar="S",
                        help=f"listener lag (s) above which speech is sped up (default {d.target_lag_s:g})")
    parser.add_argument("--max-speed", type=float, default=None, metavar="X",
                        help="fastest speech, 1-2.5 times the voice's own rate (default: the voice's measured "
                             f"limit: eSpeak NG 1.25, SVOX Pico 1.5, Festival 1.6, Piper 1.6; else {DEFAULT_MAX_SPEED:g})")
    parser.add_argument("--no-pace-control", action="store_true",
                        help="speak every piece at the voice's own rate, even when the listener falls behind")


def pace_options(args) -> dict:  # noqa: ANN001 - argparse.Namespace
    """PaceConfig fields from the flags; a value out of range is one line naming the flag."""
    from speech.configuration import lag_levels
    from speech.errors import UserError

    options = {"control": not args.no_pace_control, **lag_levels(args.target_lag)}
    if args.max_speed is not None:
        options["max_speed"] = args.max_speed
    try:
        PaceConfig(**options)
    except ValueError as e:
        flag = "--max-speed" if "speed" in str(e) else "--target-lag"
        raise UserError(f"{flag}: {e}") from None
    return options
