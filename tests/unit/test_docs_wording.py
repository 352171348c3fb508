"""No development-diary wording in the repository: docs, comments, docstrings and messages say what
the software is and does, not when or by whom it changed (history lives in git)."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = (".py", ".md", ".toml", ".sh", ".cfg", ".html", ".js")
SELF = "tests/unit/test_docs_wording.py"
SKIPPED = {SELF}

DIARY = re.compile(
    r"\bstop \d+|\bthis round\b|\bprevious round\b|\bthis session\b|\bthis stop\b|engineers shared"
    r"|\bbefore this change\b|\bafter this change\b",
    re.IGNORECASE,
)
# In Python code (not comments or docstrings) a message may speak of a websocket session:
# "this session has ended" names the listener's session, not a stretch of development.
SESSION = re.compile(r"\bthis session\b", re.IGNORECASE)


def tracked_files(root: Path = ROOT) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [p for p in out.splitlines() if p.endswith(SUFFIXES) and p not in SKIPPED]


def _python_code_strings(text: str) -> set[int]:
    """Lines holding only string literals that are code (not docstrings) in a Python source."""
    lines: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return lines
    previous = None
    for tok in tokens:
        if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_START", -1):
            docstring = previous is None or previous.type in (tokenize.INDENT, tokenize.NEWLINE, tokenize.DEDENT)
            if not docstring:
                lines.update(range(tok.start[0], tok.end[0] + 1))
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok
    return lines


def diary_lines(path: str, text: str) -> list[str]:
    """`path:line: text` for every line of `text` with diary wording."""
    code_strings = _python_code_strings(text) if path.endswith(".py") else set()
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in DIARY.finditer(line):
            if number in code_strings and SESSION.fullmatch(match.group()):
                continue
            found.append(f"{path}:{number}: {line.strip()[:120]}")
            break
    return found


def test_no_diary_wording_in_tracked_files():
    found = []
    for path in tracked_files():
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += diary_lines(path, text)
    assert not found, "development-diary wording (say what is, not when it changed):\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    "**Stop 11: voice attributes** (`EspeakConfig.attributes`)",
    "Measured this round on the shared machine",
    "Previous round, idle machine",
    "figures while five engineers shared the 2 cores",
    "before this change the gap was 20 ms",
    "# changed at this stop",
    "    # tuned in this session",
])
def test_each_diary_pattern_is_found(line):
    assert diary_lines("docs/x.md", f"# Title\n\n{line}\n") == [f"docs/x.md:3: {line.strip()}"]
    assert diary_lines("x.py", f"x = 1\n# {line}\n") == [f"x.py:2: # {line}"]


def test_python_docstrings_and_comments_are_checked_but_a_session_message_is_not():
    source = '''"""Module doc written this session."""


def f():
    """Tuned at stop 12."""
    raise ValueError("this session has ended")  # a websocket session
    raise ValueError("stop 11 figures")
'''
    assert diary_lines("m.py", source) == [
        'm.py:1: """Module doc written this session."""',
        'm.py:5: """Tuned at stop 12."""',
        'm.py:7: raise ValueError("stop 11 figures")',
    ]


def test_plain_words_are_not_diary():
    text = "a round trip\nspeech stops after 3 s\n--stop-after 10\nthe session ended\nrounds of 300 frames\n"
    assert diary_lines("docs/x.md", text) == []
