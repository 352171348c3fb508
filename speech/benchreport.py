"""`speech bench report`: the headline figures, each with its command, machine and date.

Each headline benchmark is one command whose `--json` output is stored in
`benchmarks/results/<name>.<machine>.json` together with the command, the date, the machine (cores,
processor and its vector extensions, memory, the load average when it started) and the installed
versions: one file per kind of machine, since 2 cores with AVX-512 VNNI run the int8 models
faster than 2 with AVX2 alone. `speech bench report --run NAME` runs one (or `--run
all`) and replaces that machine's file; every call renders `docs/benchmarks.md` from whatever
results are stored, each machine's table under the other, newest first, so the page never shows a
figure without the command and machine that produced it.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
PAGE = REPO / "docs" / "benchmarks.md"


@dataclass(frozen=True)
class Headline:
    name: str
    title: str
    command: str  # after `speech `
    render: Callable[[Any], list[str]]


def _f(x: Any, digits: int = 2, scale: float = 1.0, unit: str = "") -> str:
    if x is None:
        return "—"
    return f"{float(x) * scale:.{digits}f}{unit}"


def _rows(data: Any) -> list[dict]:
    return data if isinstance(data, list) else [data]


def render_asr(data: Any) -> list[str]:
    out = ["| config | WER | offline WER | lag p50 / p90 (unaware) | RTF |", "| --- | --- | --- | --- | --- |"]
    for r in _rows(data.get("configs", data) if isinstance(data, dict) else data):
        out.append(f"| {r.get('name', '?')} | {_f(r.get('wer'))} % | {_f(r.get('offline_wer'))} % | "
                   f"{_f(r.get('lag_p50_cu_s', r.get('lag_p50_s')))} / {_f(r.get('lag_p90_cu_s', r.get('lag_p90_s')))} s | "
                   f"{_f(r.get('rtf'))} |")
    return out


def render_s2st(data: Any) -> list[str]:
    out = ["| pair | StartOffset | EndOffset | listener lag p50 / p90 | round-trip WER | kept up |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in _rows(data):
        out.append(f"| {r['pair']} | {_f(r.get('start_offset_s'))} s | {_f(r.get('end_offset_s'))} s | "
                   f"{_f(r.get('listener_lag_p50_s'))} / {_f(r.get('listener_lag_p90_s'))} s | "
                   f"{_f(r.get('roundtrip_wer'), 1, 100, ' %')} | {'yes' if r.get('realtime_ok') else 'no'} |")
    parted = [r for r in _rows(data) if r.get("start_parts_s")]
    if parted:
        from .eval.listener import START_PARTS

        out += _parts_table("Where the StartOffset goes (mean seconds over the clips; they add up to it; "
                            "[evaluation.md](evaluation.md#where-the-first-audio-goes)):",
                            ["pair"], [START_TITLES.get(p, p) for p in START_PARTS],
                            [([r["pair"]], [f"{_f(r['start_parts_s'].get(p))} s" for p in START_PARTS]) for r in parted])
    return out


def _parts_table(caption: str, keys: list[str], parts: list[str], rows: list[tuple[list[str], list[str]]]) -> list[str]:
    """A table of where a figure goes: per row its key cells, then one cell per part."""
    return (["", caption, "", "| " + " | ".join(keys + parts) + " |", "|" + " --- |" * (len(keys) + len(parts))]
            + ["| " + " | ".join(key + cells) + " |" for key, cells in rows])


# The column titles of speech.eval.listener.LAG_PARTS, as docs/synthesis.md names them.
PART_TITLES = {"committed": "until committed", "synthesis": "until the first sample",
               "queue": "behind earlier speech", "in_chunk": "place in the chunk"}
# and of START_PARTS, as docs/evaluation.md names them
START_TITLES = {"recognizer": "onset to the recogniser's commit", "translator": "to the translator's",
                "chunker": "the chunker's wait", "synthesis": "to the first sample"}


def render_long(data: Any) -> list[str]:
    out = ["| pair | control | listener lag p50 / p90 | worst minute p90 | minutes p90 > 5 s | slope | EndOffset | "
           "output/input | words dropped |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in _rows(data):
        per_min = [x for x in r.get("listener_lag_p90_s_per_minute", []) if x is not None]
        above = f"{sum(x > 5.0 for x in per_min)} of {len(per_min)}" if per_min else "-"
        out.append(f"| {r['pair']} | {r['control']} | {_f(r.get('listener_lag_p50_s'))} / {_f(r.get('listener_lag_p90_s'))} s | "
                   f"{_f(max(per_min) if per_min else None)} s | {above} | {_f(r.get('listener_lag_slope_s_per_min'))} s/min | "
                   f"{_f(r.get('end_offset_s'))} s | {_f(r.get('duration_ratio'))} | {_f(r.get('share_words_dropped'), 1, 100, ' %')} |")
    parted = [r for r in _rows(data) if r.get("lag_parts_s")]
    if parted:
        from .eval.listener import LAG_PARTS

        def cells(r: dict) -> list[str]:
            every, slow = r["lag_parts_s"], r.get("lag_parts_s_above_p90") or {}
            return [f"{_f(every.get(p))} / {_f(slow.get(p))}" for p in LAG_PARTS]

        out += _parts_table("Where the lag goes (mean seconds per heard word, every word / the slowest tenth; "
                            "[synthesis.md](synthesis.md#figures)):",
                            ["pair", "control"], [PART_TITLES.get(p, p) for p in LAG_PARTS],
                            [([r["pair"], r["control"]], cells(r)) for r in parted])
    return out


def render_mt(data: Any) -> list[str]:
    """`speech bench mt --json`: {pair: {backend or path: figures}}."""
    out = ["| pair | backend or path | chrF simultaneous / offline | BLEU | LAAL (words) | committed erasure |",
           "| --- | --- | --- | --- | --- | --- |"]
    for pair, backends in data.items():
        for backend, r in backends.items():
            out.append(f"| {pair} | `{backend}` | {_f(r.get('chrf'))} / {_f(r.get('offline_chrf'))} | {_f(r.get('bleu'))} | "
                       f"{_f(r.get('laal_words'))} | {_f(r.get('committed_erasure'))} |")
    return out


HEADLINES = [
    Headline("s2st", "End to end, 10 FLEURS clips per pair (simulated clock, computation-aware)",
             "bench s2st --limit 10 --json", render_s2st),
    Headline("longtalk", "A 10-minute talk: the listener's lag, duration control on, off and reactive",
             "bench s2st --long 10 --pairs en-es,en-pt,pt-en --control on,off,reactive --json "
             "--plot docs/listener_lag_10min.png", render_long),
    Headline("mt", "Simultaneous translation, FLORES-101 devtest lines 1-100, default path per pair",
             "bench mt --pairs en-es,en-fr,es-en,fr-en,en-pt,pt-en --lines 100 --json", render_mt),
    Headline("asr", "Streaming recognition, LibriVox + English FLEURS",
             "bench asr --model whisper-tiny.en --model whisper-base --policy default --json", render_asr),
]


def run_one(h: Headline) -> Path:
    """Run a headline's command and store its JSON with the command, date, machine and versions."""
    from .eval.configs import machine, versions

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    where, installed = machine(), versions()
    print(f"bench report: running speech {h.command}", file=sys.stderr, flush=True)
    proc = subprocess.run([sys.executable, "-m", "speech.cli", *shlex.split(h.command)], cwd=REPO,
                          stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        from .errors import UserError

        raise UserError(f"speech {h.command} failed (exit {proc.returncode}); nothing stored for {h.name}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{h.name}.{machine_slug(where)}.json"
    path.write_text(json.dumps({"command": f"speech {h.command}", "date": started, "machine": where,
                                "versions": installed, "results": json.loads(proc.stdout)}, indent=2) + "\n", encoding="utf-8")
    return path


def machine_slug(where: dict[str, Any]) -> str:
    """A file-name part for a kind of machine: its processor and vector extensions
    ("amd-epyc-avx2", "intel-xeon-avx-512-vnni-amx")."""
    cpu = re.sub(r"\((R|TM)\)|\b(Processor|CPU)\b", " ", str(where.get("cpu") or where.get("processor") or "cpu"))
    text = f"{cpu} {where.get('vector') or ''}".lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "cpu"


def stored_runs(name: str) -> list[dict]:
    """Every stored result of a headline, one per kind of machine, newest first."""
    files = [*RESULTS.glob(f"{name}.*.json"), RESULTS / f"{name}.json"]  # the second: stored before machines were told apart
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in files if p.is_file()]
    return sorted(runs, key=lambda r: r.get("date", ""), reverse=True)


def describe(m: dict[str, Any]) -> str:
    cpu = m.get("cpu") or m.get("processor")
    return f"{m.get('cores')} cores ({cpu}, {m['vector']})" if m.get("vector") else f"{m.get('cores')} cores ({cpu})"


# The engines whose releases set the speed of the figures (the rest of the versions stay in the file).
ENGINES = ("faster-whisper", "ctranslate2", "cyllama", "onnxruntime", "numpy")


def engine_versions(installed: dict[str, str] | None) -> str:
    if not installed:
        return "versions not recorded"
    return ", ".join(f"{name} {installed[name]}" for name in ENGINES if name in installed)


def render(page: Path = PAGE) -> str:
    lines = ["# Benchmarks", "",
             "Generated by `speech bench report` from `benchmarks/results/*.json`; each table names the command",
             "that produced it, when, and on which machine: one table per kind of machine, newest first (2 cores",
             "with AVX-512 VNNI run the int8 models faster than 2 with AVX2 alone).",
             "`speech bench report --run NAME` measures again on this machine.", ""]
    for h in HEADLINES:
        lines += [f"## {h.title}", ""]
        runs = stored_runs(h.name)
        if not runs:
            lines += [f"Not measured yet: `speech bench report --run {h.name}`.", ""]
        for stored in runs:
            m = stored.get("machine", {})
            lines += h.render(stored["results"])
            lines += ["", f"*`{stored['command']}`, {stored['date']}; {describe(m)}, "
                          f"{m.get('memory_gb')} GB, load average {m.get('load_average')} at the start; "
                          f"{engine_versions(stored.get('versions'))}.*", ""]
    text = "\n".join(lines)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    return text


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", action="append", default=[], metavar="NAME",
                        help=f"measure again and store: {', '.join(h.name for h in HEADLINES)} or all (repeatable)")
    parser.add_argument("--out", default=str(PAGE), help=f"the page to write (default {PAGE.relative_to(REPO)})")


def run(args: argparse.Namespace) -> int:
    from .errors import UserError

    names = {h.name: h for h in HEADLINES}
    wanted = list(names) if "all" in args.run else args.run
    for name in wanted:
        if name not in names:
            raise UserError(f"--run {name}: no such headline; choose from {', '.join(names)} or all")
        run_one(names[name])
    render(Path(args.out))
    print(f"wrote {args.out}")
    return 0
