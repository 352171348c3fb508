"""Apertium re-translation backend: Debian's rule-based engines (every installed pair among our languages).

Each installed mode (`/usr/share/apertium/modes/*.mode`) runs as one persistent pipeline in
null-flush mode: every program of the mode gets `-z` (the script `apertium-wblank-mode -z` writes),
a request is the text followed by a NUL byte, the answer ends at the next NUL. A sentence then
costs 1-5 ms instead of a 0.2-0.5 s pipeline start. The `apertium` wrapper script is not used:
its txt deformatter drops the NUL and its gawk filter holds the output until end of input, so
null-flush through it never answers; we escape the stream format's reserved characters ourselves.

The streaming logic (translate the current sentence, align to the committed words, mask-k) is
`RetranslationStream` (nmt.py), shared with Bergamot.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

from speech.errors import UserError
from speech.processes import stop_process

from .hypothesis import EngineFailed
from .languages import NAMES
from .nmt import RetranslationStream, check_mask_options, open_retranslation

DATADIR = "/usr/share/apertium"
# Our language codes and the names Apertium's modes use for them (both styles occur:
# "eng-spa", "es-pt", "fr-es").
MODE_CODES = {"en": ("eng", "en"), "es": ("spa", "es"), "pt": ("por", "pt"), "fr": ("fra", "fr"), "de": ("deu", "de"),
              "it": ("ita", "it"), "ca": ("cat", "ca"), "gl": ("glg", "gl"), "ro": ("ron", "ro")}
# The Debian package that brings each pair (both directions where Debian has them; es-ro: ro->es only,
# en-gl: both). scripts/setup.sh installs all of them.
PACKAGES = {frozenset(("en", "es")): "apertium-eng-spa", frozenset(("es", "fr")): "apertium-fr-es",
            frozenset(("es", "pt")): "apertium-es-pt", frozenset(("es", "ca")): "apertium-spa-cat",
            frozenset(("es", "it")): "apertium-spa-ita", frozenset(("es", "gl")): "apertium-es-gl",
            frozenset(("en", "ca")): "apertium-eng-cat", frozenset(("en", "gl")): "apertium-en-gl",
            frozenset(("pt", "ca")): "apertium-por-cat", frozenset(("pt", "gl")): "apertium-pt-gl",
            frozenset(("es", "ro")): "apertium-es-ro", frozenset(("ca", "it")): "apertium-cat-ita",
            frozenset(("fr", "ca")): "apertium-fra-cat"}

# A variant preferred over the plain mode when installed: FLORES-101's Portuguese is Brazilian
# (es-pt_BR: +0.2 chrF on devtest lines 200-239).
PREFERRED_MODES = {("es", "pt"): "es-pt_BR", ("ca", "pt"): "cat-por_BR"}
# Tuned on devtest lines 200-239 with the backend's default policy (LocalAgreement-2 with
# boundary_n=1, backends.py), confirmed on the first 100 (docs/translation.md). Mask 0 on every
# pair: unlike an NMT model, the rule-based engine never invents a sentence end for an unfinished
# source, so agreement alone filters enough (chrF within 0.3 of offline at LAAL 2.1-3.5 on the
# first 100 lines; mask 1 kept en->es above LAAL 4).
DEFAULT_MASK = {("en", "es"): 0, ("es", "en"): 0, ("es", "pt"): 0, ("pt", "es"): 0, ("es", "fr"): 0, ("fr", "es"): 0}
DEFAULT_BOUNDARY_MASK: dict[tuple[str, str], int] = {}
FALLBACK_MASK = 1  # a pair not tuned (a mode given through the `modes` option)

# Analyses a mode's tagger chose that are replaced before transfer (mode -> (chosen, replacement)).
# Debian's spa-ita tagger takes the preposition "para" for "parir" (to give birth), present
# subjunctive, in a fresh pipeline and now and then later: "Partorisca il nord" for "Para el
# norte". Replaced after the tagger, not removed from the analysis before it: a word whose set of
# readings the tagger's model lacks moves its state (docs/translation.md, Limits), and other words
# then read differently.
RETAGGED: dict[str, tuple[tuple[str, str], ...]] = {
    "spa-ita": (("parir<vblex><prs><p3><sg>", "para<pr>"), ("parir<vblex><prs><p1><sg>", "para<pr>")),
}
_ANALYSIS = re.compile(r"[^\W\d_]+(<\w+>)+")

_RESERVED = re.compile(r"([\\\[\]{}^$/@<>])")  # the stream format's reserved characters
_BLANK = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]")  # a superblank `[...]` (formatting), not `\[`
_UNESCAPE = re.compile(r"\\(.)")
_MARKS = "*#@"  # unknown word, generation error, no bilingual entry
_FINAL_STOP = re.compile(r"\w\.$")  # a sentence's full stop glued to its last word
PROBE = "1"  # a request every mode answers with itself


@dataclass(frozen=True)
class ApertiumConfig:
    datadir: str = DATADIR  # the folder holding modes/ (Debian: /usr/share/apertium)
    # Pair -> mode overrides, comma-separated, e.g. "es-pt=es-pt_BR" (variants are never picked
    # on their own: the plain mode is).
    modes: str = ""
    # Keep Apertium's marks on unknown/untranslatable words (`*word`, `#word`, `@word`); off: the
    # listener should hear the bare word.
    keep_marks: bool = False
    timeout_s: float = 10.0  # one call; a pipeline that does not answer is killed and restarted
    # As in BergamotConfig: None = the best measured per pair.
    mask: int | None = None
    boundary_mask: int | None = None
    align: str = "edit"


def escape(text: str) -> str:
    """One request: whitespace folded (a newline would be formatting), reserved characters escaped."""
    return _RESERVED.sub(r"\\\1", " ".join(text.replace("\0", " ").split()))


def clean(output: str, keep_marks: bool = False) -> str:
    """Apertium's raw stream output as plain text: blanks dropped, escapes undone, marks stripped."""
    words = _BLANK.sub(" ", output).split()
    if not keep_marks:  # before unescaping: an escaped `\@` is the text's own, not a mark
        words = [w.lstrip(_MARKS) or w for w in words]
    return " ".join(_UNESCAPE.sub(r"\1", w) for w in words)


def detach_final_stop(request: str) -> tuple[str, bool]:
    """The request with its final full stop set apart from the last word, and whether it had one.

    Glued to the word, the stop lets the analyser read the word as an abbreviation: Catalan
    "Ella va dir." (she said) is taken as "dir." (director) and comes out untranslated in Spanish,
    "Ella va dir ." becomes "Ella dijo .". A sentence's last stop is punctuation: an abbreviation
    there (etc.) loses nothing, as an unknown word passes through."""
    if _FINAL_STOP.search(request):
        return request[:-1] + " .", True
    return request, False


def reattach_final_stop(output: str, stop: bool) -> str:
    """The stop back on the last word (`stop`: the request had one set apart)."""
    if stop and output.endswith(" ."):
        return output[:-2].rstrip() + "."
    return output


def retag(script: str, replacements: tuple[tuple[str, str], ...]) -> str:
    """A mode's -z pipeline with the tagger's choices in `replacements` replaced before transfer.

    A `sed -u -z` stage right after the tagger: it answers each NUL-terminated request as it
    comes, as the other programs do. An analysis is a lemma and all its tags
    (`parir<vblex><prs><p3><sg>`), matched whole; the lemma keeps the word's case (the tagger
    writes "Parir" for "Para", "PARIR" for "PARA")."""
    if not replacements:
        return script
    expressions = []
    for chosen, replacement in replacements:
        for analysis in (chosen, replacement):
            if not _ANALYSIS.fullmatch(analysis):
                raise ValueError(f"apertium analysis {analysis!r}: a lemma and its tags, e.g. para<pr>")
        (lemma, tags), (new_lemma, new_tags) = (a.split("<", 1) for a in (chosen, replacement))
        for case in (str.lower, str.capitalize, str.upper):
            expressions.append(f"s:\\^{case(lemma)}<{tags}\\$:^{case(new_lemma)}<{new_tags}$:g")
    at = script.find("apertium-tagger")
    end = script.find(" | ", at)
    if at < 0 or end < 0:
        raise ValueError("the mode has no tagger followed by transfer to replace its choices in")
    return f"{script[:end]} | sed -u -z '{';'.join(expressions)}'{script[end:]}"


def _code(name: str) -> str | None:
    return next((code for code, names in MODE_CODES.items() if name in names), None)


def discover_modes(datadir: str | Path = DATADIR) -> dict[tuple[str, str], str]:
    """Installed modes by our pair codes: {("en", "es"): "eng-spa", ...}.

    A mode counts when its name is exactly SRC-TGT in either naming style; variants ("spa-eng_US",
    "es-pt_BR") and other modes ("eco-es-fr", "eng-spa-tagger") are left to the `modes` option.
    """
    out: dict[tuple[str, str], str] = {}
    for path in sorted(Path(datadir, "modes").glob("*.mode")):
        parts = path.stem.split("-")
        if len(parts) != 2:
            continue
        pair = (_code(parts[0]), _code(parts[1]))
        if None not in pair and pair[0] != pair[1]:
            out.setdefault(pair, path.stem)  # type: ignore[arg-type]
    return out


def parse_modes(spec: str) -> dict[tuple[str, str], str]:
    out = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        pair, sep, mode = item.partition("=")
        src, dash, tgt = pair.partition("-")
        if not (sep and dash and mode and src in NAMES and tgt in NAMES):
            raise UserError(f"apertium modes {item!r} should look like es-pt=es-pt_BR (our codes: {', '.join(NAMES)})")
        out[(src, tgt)] = mode.strip()
    return out


def package_for(source: str, target: str) -> str | None:
    return PACKAGES.get(frozenset((source, target)))


def missing_pair_error(source: str, target: str, pairs: dict[tuple[str, str], str]) -> UserError:
    listed = ", ".join(f"{s}-{t}" for s, t in sorted(pairs)) or "none"
    package = package_for(source, target)
    hint = (f"install the Debian package {package} (apt-get install {package})" if package
            else f"Debian has no Apertium package for {source}-{target}")
    return UserError(f"unsupported language pair {source}-{target} for apertium: {hint}; installed: {listed}")


def has_pair(source: str, target: str, datadir: str = DATADIR) -> bool:
    """Whether apertium can translate this pair here (cheap: files only, no process)."""
    return shutil.which("apertium-wblank-mode") is not None and (source, target) in discover_modes(datadir)


class ApertiumProcess:
    """One mode's pipeline, kept running; `translate` is one NUL-terminated request, one at a time."""

    def __init__(self, mode_file: Path, keep_marks: bool = False, timeout_s: float = 10.0, script: str | None = None) -> None:
        self.mode_file = mode_file
        self.keep_marks = keep_marks
        self.timeout_s = timeout_s
        self.restarts = 0
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        # The mode's pipeline with -z on every program (`script`: a stand-in, for tests).
        self._script = script if script is not None else retag(subprocess.run(
            ["apertium-wblank-mode", "-z", str(mode_file)], capture_output=True, text=True, check=True).stdout,
            RETAGGED.get(mode_file.stem, ()))
        self._finalizer = weakref.finalize(self, stop_process, [None])  # replaced on start

    def _start(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty program never blocks
        # $1: the generator's option (-n: no marks on unknown words, -g: with them); $2: the tagger's.
        # A session of its own, so close() can end the whole pipeline (bash and every program).
        self._proc = subprocess.Popen(
            ["bash", "-c", self._script, "apertium", "-g" if self.keep_marks else "-n", ""],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True,
        )
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, stop_process, [self._proc])

    def translate(self, text: str) -> str:
        request, stop = detach_final_stop(escape(text))
        if not request:
            return ""
        with self._lock:
            try:
                return reattach_final_stop(clean(self._call(request), self.keep_marks), stop)
            except (OSError, TimeoutError, EOFError):
                # Died or hung: one fresh pipeline, then give up with what it said.
                self._kill()
                self.restarts += 1
                try:
                    return reattach_final_stop(clean(self._call(request), self.keep_marks), stop)
                except (OSError, TimeoutError, EOFError) as e:
                    said = self._stderr_tail()
                    self._kill()
                    raise EngineFailed(f"apertium pipeline {self.mode_file.stem} failed ({e or type(e).__name__})"
                                       f"{': ' + said if said else ''}") from e

    @property
    def pid(self) -> int | None:
        """The running pipeline's process id (its process group's too); None before the first call."""
        proc = self._proc
        return None if proc is None or proc.poll() is not None else proc.pid

    def _call(self, request: str) -> str:
        if self._proc is None:
            self._start()
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        if self._proc.poll() is not None:
            raise EOFError("the pipeline had exited")
        # Output before a request: a program of the pipeline died and the ones after it flushed
        # (a NUL, then end of file); read as an answer, it would be an empty translation.
        if select.select([self._proc.stdout.fileno()], [], [], 0)[0]:
            raise EOFError("the pipeline wrote out of turn (one of its programs died)")
        answer = self._exchange(request)
        # Nothing back is either a translation with no words (Spanish "Se" alone into English)
        # or the flush of the programs after one that died: a number, which every mode passes
        # through, tells them apart.
        if not clean(answer, True) and not clean(self._exchange(PROBE), True):
            raise EOFError("the pipeline answered nothing (one of its programs died)")
        return answer

    def _exchange(self, request: str) -> str:
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        # The trailing blank makes the analyser emit the last word before the flush.
        self._proc.stdin.write(request.encode() + b" \0")
        self._proc.stdin.flush()
        buf = b""
        while not buf.endswith(b"\0"):
            ready, _, _ = select.select([fd], [], [], self.timeout_s)
            if not ready:
                raise TimeoutError(f"no answer in {self.timeout_s} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError("the pipeline exited")
            buf += chunk
        if buf.count(b"\0") > 1:
            raise EOFError("the pipeline wrote out of turn (one of its programs died)")
        return buf[:-1].decode("utf-8", "replace")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace").strip()[-300:]

    def _kill(self) -> None:
        self._finalizer()  # runs stop_process once
        self._proc = None

    def close(self) -> None:
        with self._lock:
            self._kill()


class ApertiumTranslator:
    """The installed modes; a pair's pipeline starts on its first use and is shared (registry)."""

    name = "apertium"

    def __init__(self, config: ApertiumConfig, registry=None) -> None:  # noqa: ANN001 - speech.registry.Registry
        self.config = config
        self.mask, self.boundary_mask, self.align = config.mask, config.boundary_mask, config.align
        self.registry = registry
        installed = discover_modes(config.datadir)
        preferred = {pair: mode for pair, mode in PREFERRED_MODES.items()
                     if pair in installed and Path(config.datadir, "modes", mode + ".mode").is_file()}
        self.modes = {**installed, **preferred, **parse_modes(config.modes)}
        self.pairs = tuple(sorted(self.modes))
        self._own: dict[str, ApertiumProcess] = {}  # without a registry: this translator's pipelines
        self._lock = threading.Lock()

    def process(self, source: str, target: str) -> ApertiumProcess:
        if (source, target) not in self.modes:
            raise missing_pair_error(source, target, self.modes)
        mode_file = Path(self.config.datadir, "modes", self.modes[(source, target)] + ".mode")
        if not mode_file.is_file():
            raise UserError(f"apertium mode {mode_file.stem!r} is not installed ({mode_file} missing)")

        def load() -> ApertiumProcess:
            return ApertiumProcess(mode_file, self.config.keep_marks, self.config.timeout_s)

        if self.registry is not None:
            return self.registry.shared(("apertium", str(mode_file), self.config.keep_marks, self.config.timeout_s), load)
        with self._lock:
            if mode_file.stem not in self._own:
                self._own[mode_file.stem] = load()
            return self._own[mode_file.stem]

    def translate(self, text: str, source: str, target: str) -> str:
        return self.process(source, target).translate(text) if text.strip() else ""

    def open(self, source: str, target: str, examples: object = None) -> RetranslationStream:
        self.process(source, target)  # a missing pair fails here, with the package to install
        return open_retranslation(self, source, target, DEFAULT_MASK, DEFAULT_BOUNDARY_MASK, FALLBACK_MASK)

    def close(self) -> None:
        """Ends the pipelines this translator started itself (shared ones end with the process)."""
        with self._lock:
            for proc in self._own.values():
                proc.close()
            self._own.clear()


def load_apertium(config: ApertiumConfig, registry) -> ApertiumTranslator:  # noqa: ANN001
    check_mask_options("apertium", config.mask, config.boundary_mask, config.align)
    if config.timeout_s <= 0:
        raise ValueError("apertium timeout_s must be > 0")
    if shutil.which("apertium-wblank-mode") is None or shutil.which("lt-proc") is None:
        raise UserError("the apertium backend needs Debian's apertium programs: apt-get install apertium "
                        "apertium-eng-spa (scripts/setup.sh installs them)")
    if not Path(config.datadir, "modes").is_dir():
        raise UserError(f"no Apertium language data in {config.datadir} (modes/ missing): "
                        "apt-get install apertium-eng-spa")
    return ApertiumTranslator(config, registry)


def installed_pairs(name: str, options: dict) -> tuple[tuple[str, str], ...]:
    """The graph's Apertium edges (graph.py): one per installed mode, files only."""
    datadir = options.get("datadir", DATADIR)
    if shutil.which("apertium-wblank-mode") is None or shutil.which("lt-proc") is None:
        return ()
    pairs = set(discover_modes(datadir)) | set(parse_modes(options.get("modes", "")))
    return tuple(sorted(pairs))
