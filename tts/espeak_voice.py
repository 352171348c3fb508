"""eSpeak NG voice files composed at run time: a voice's own file (a language's, or a user's) with
attributes added, such as "flutter 0; consonants 400 400" (its sound) or "replace 00 x r" (a phoneme
spoken as another).

eSpeak reads such attributes only from voice files. `espeak_SetVoiceByFile` copies the path into a
60-byte buffer and lower-cases it, so the composed file goes in a private folder whose path is
short and lower case.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from speech.errors import UserError

# The acoustic keywords of an eSpeak voice file (case matters to eSpeak): a voice's sound, not its
# language, so they apply on top of any voice.
ATTRIBUTES = (
    "breath", "breathw", "consonants", "echo", "flutter", "formant", "intonation", "klatt", "pitch",
    "roughness", "speed", "stressAdd", "stressAmp", "stressLength", "tone", "voicing",
)
# "replace FLAGS PHONEME REPLACEMENT": speak one of the language's phonemes (eSpeak's mnemonic, as
# `espeak-ng -x` prints it) as another, or not at all (NULL). FLAGS: 1 only at the end of a word, 2 only
# in unstressed syllables, 3 both, 0 everywhere. eSpeak does not check the names: an unknown phoneme
# is ignored silently.
REPLACE = "replace"
MAX_PATH = 59  # the library's buffer, less its terminating zero


def is_voice_file(voice: str) -> bool:
    """A voice given as a file's path ("/tmp/x/voice+m3"), not as an installed voice's name."""
    return "/" in voice.partition("+")[0]


def parse_attributes(text: str) -> tuple[str, ...]:
    """"flutter 0; consonants 400 400" -> ("flutter 0", "consonants 400 400"), checked: eSpeak
    silently ignores a line it does not know, so a typo would change nothing without a word."""
    lines = tuple(" ".join(part.split()) for part in text.split(";") if part.strip())
    for line in lines:
        key, *values = line.split()
        if key == REPLACE:
            _check_replace(line, values)
            continue
        if key not in ATTRIBUTES:
            known = ", ".join(ATTRIBUTES + (REPLACE,))
            raise UserError(f"eSpeak voice attribute {key!r} in {text!r} is not one of: {known}")
        if not values or not all(v.lstrip("-").isdigit() for v in values):
            raise UserError(f"eSpeak voice attribute {line!r}: give whole numbers, e.g. 'consonants 400 400'")
    return lines


def _check_replace(line: str, values: list[str]) -> None:
    flags, *phonemes = values or [""]
    # eSpeak packs a phoneme name into 4 bytes: a longer name would be cut to another phoneme
    if not (len(phonemes) == 2 and flags.isdigit() and 0 <= int(flags) <= 3 and phonemes[0] != "NULL"
            and all(p.isascii() and len(p) <= 4 for p in phonemes)):
        raise UserError(f"eSpeak voice attribute {line!r}: write 'replace FLAGS PHONEME REPLACEMENT', "
                        "e.g. 'replace 00 x r' (FLAGS 0-3; phoneme names of 1-4 characters, as espeak-ng -x "
                        "prints them; NULL drops the phoneme)")


class VoiceFiles:
    """Writes composed voice files into one private folder, removed when the process ends."""

    def __init__(self, data: Path) -> None:
        self._data = data
        self._folder: tempfile.TemporaryDirectory | None = None

    def base_text(self, identifier: str) -> str:
        """The text of an installed voice's file ("roa/pt-BR" -> data/lang/roa/pt-BR)."""
        for folder in ("lang", "voices"):
            path = self._data / folder / identifier
            if path.is_file():
                return path.read_text(encoding="utf-8")
        raise UserError(f"eSpeak NG voice {identifier!r} has no voice file under {self._data}")

    @staticmethod
    def user_text(path: str) -> str:
        p = Path(path).expanduser()
        if not p.is_file():
            raise UserError(f"eSpeak voice file {path!r} not found (give a path to an eSpeak NG voice file)")
        text = p.read_text(encoding="utf-8", errors="replace")
        if "language" not in text.split():
            raise UserError(f"eSpeak voice file {path!r} has no 'language' line: is it an eSpeak NG voice file?")
        return text

    def compose(self, base: str, attributes: tuple[str, ...], variant: str = "") -> str:
        """The path of a voice file holding `base` then `attributes` (later lines win), plus
        "+variant" when given: what `espeak_SetVoiceByFile` loads."""
        text = base.rstrip("\n") + "\n" + "".join(f"{line}\n" for line in attributes)
        path = self._folder_path() / hashlib.sha1(text.encode()).hexdigest()[:12]
        if not path.exists():
            path.write_text(text, encoding="utf-8")
        spec = f"{path}+{variant}" if variant else str(path)
        if len(spec.encode()) > MAX_PATH:
            raise UserError(f"eSpeak voice variant {variant!r} is too long: eSpeak reads {MAX_PATH} characters of {spec!r}")
        return spec

    def _folder_path(self) -> Path:
        if self._folder is None:
            for root in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
                try:
                    folder = tempfile.TemporaryDirectory(prefix="espeak-", dir=root)
                except OSError:
                    continue
                if folder.name == folder.name.lower() and len(folder.name) + 13 + 12 <= MAX_PATH:
                    self._folder = folder  # room for the file name and a variant of up to 11 characters
                    break
                folder.cleanup()
            else:
                raise UserError("eSpeak voice attributes need a folder with a short lower-case path "
                                f"(eSpeak reads {MAX_PATH} characters, lower-cased): set TMPDIR=/tmp")
        return Path(self._folder.name)
