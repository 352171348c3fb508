#!/usr/bin/env python3
"""Regenerate the SimulEval reference values of tests/unit/test_eval_latency.py with SimulEval itself.

The cases (delays, source length, reference length, elapsed times, output durations) live in
tests/unit/simuleval_cases.json beside the values SimulEval gave for them. This script feeds each
case to SimulEval's own latency scorers and prints the values; `--check` compares them with the
stored ones (exit status 1 on any difference), `--write` stores them.

It needs SimulEval, not this project (`pip install simuleval==1.1.4`, or the project's `simuleval`
extra). SimulEval pins old versions of tqdm and bitarray and pulls pandas, yt-dlp and a flake8
pytest plugin, so it is kept out of the project's own environment by default: a separate one works
as well (`python -m venv /tmp/se && /tmp/se/bin/pip install simuleval==1.1.4`, then run this script
with /tmp/se/bin/python, or point the test at it with SIMULEVAL_PYTHON=/tmp/se/bin/python).

How a case is fed (as `speech eval` would be scored by `simuleval --score-only`):
- text output: a `LogInstance` (one JSON line: index, delays, elapsed, source_length, reference),
  times in milliseconds, so ATD counts 300 ms per source word and 0 per target word, as SimulEval
  does for speech input and text output; the reference is `reference_words` words.
- speech output (ATD with durations): a `SpeechToSpeechInstance` carrying delays, elapsed and
  durations (milliseconds); its constructor needs a data loader, which the scorer never uses.
- offsets and lags are divided by 1000 to give seconds; AP is a ratio and is left as it is.
- computation-aware cases (`elapsed` given) use SimulEval's computation-aware scorers for every
  metric: AL and the others read `elapsed`, ATD adds the compute time between emissions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CASES = Path(__file__).resolve().parents[1] / "tests" / "unit" / "simuleval_cases.json"
TEXT_METRICS = ("AL", "LAAL", "AP", "DAL", "ATD", "StartOffset", "EndOffset")
UNIT_FREE = {"AP"}


def _ms(seconds: float) -> float:
    # The same rounding speech.eval.latency uses: exact milliseconds for decimal inputs.
    return round(seconds * 1000.0, 6)


def _scorers():
    from simuleval.evaluator.scorers.latency_scorer import LATENCY_SCORERS_DICT

    return LATENCY_SCORERS_DICT


def require_simuleval() -> None:
    import warnings

    warnings.filterwarnings("ignore", message="Couldn't find ffmpeg")  # pydub, imported by SimulEval; unused here
    try:
        import simuleval.evaluator.scorers.latency_scorer  # noqa: F401
    except ImportError:
        sys.exit("SimulEval is not installed: pip install simuleval==1.1.4 (see this script's docstring)")


def text_case(case: dict) -> dict[str, float]:
    from simuleval.evaluator.instance import LogInstance

    scorers = _scorers()
    aware = case.get("elapsed") is not None
    line = {
        "index": 0,
        "delays": [_ms(d) for d in case["delays"]],
        "elapsed": [_ms(e) for e in case["elapsed"]] if aware else [],
        "source_length": _ms(case["source"]),
        "reference": " ".join(["w"] * case["reference_words"]),
    }
    out = {}
    for name in TEXT_METRICS:
        instance = LogInstance(json.dumps(line))
        value = scorers[name](computation_aware=aware, use_ref_len=True)({0: instance})
        out[name] = value if name in UNIT_FREE else value / 1000.0
    return out


def speech_atd_case(case: dict) -> float:
    from simuleval.evaluator.instance import SpeechToSpeechInstance

    scorers = _scorers()
    instance = object.__new__(SpeechToSpeechInstance)  # the scorer reads only the fields below
    instance.delays = [_ms(d) for d in case["delays"]]
    instance.durations = [_ms(d) for d in case["durations"]]
    aware = case.get("elapsed") is not None
    instance.elapsed = [_ms(e) for e in case["elapsed"]] if aware else []
    instance.metrics = {}
    return scorers["ATD"](computation_aware=aware)({0: instance}) / 1000.0


def speech_end_offset_case(case: dict) -> float:
    from simuleval.evaluator.instance import LogInstance

    line = {"index": 0, "delays": [_ms(s) for s, _ in case["intervals"]], "source_length": _ms(case["source"]),
            "reference": "", "intervals": [[_ms(s), _ms(d)] for s, d in case["intervals"]]}
    return _scorers()["EndOffset"]()({0: LogInstance(json.dumps(line))}) / 1000.0


def regenerate(cases: dict) -> dict:
    out = json.loads(json.dumps(cases))
    for case in out["text"].values():
        case["simuleval"] = text_case(case)
    for case in out["speech_atd"].values():
        case["simuleval"] = speech_atd_case(case)
    for case in out["speech_end_offset"].values():
        case["simuleval"] = speech_end_offset_case(case)
    return out


def differences(stored: dict, fresh: dict) -> list[str]:
    diffs = []
    for group in ("text", "speech_atd", "speech_end_offset"):
        for name, case in fresh[group].items():
            if stored[group][name]["simuleval"] != case["simuleval"]:
                diffs.append(f"{group}/{name}: stored {stored[group][name]['simuleval']} SimulEval {case['simuleval']}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the stored values; exit 1 on a difference")
    mode.add_argument("--write", action="store_true", help=f"store the regenerated values in {CASES.name}")
    parser.add_argument("--cases", type=Path, default=CASES, help="the cases file (default: %(default)s)")
    args = parser.parse_args(argv)
    require_simuleval()
    stored = json.loads(args.cases.read_text(encoding="utf-8"))
    fresh = regenerate(stored)
    if args.write:
        args.cases.write_text(json.dumps(fresh, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.cases}")
        return 0
    if args.check:
        diffs = differences(stored, fresh)
        for d in diffs:
            print(d)
        print("SimulEval reproduces every stored value" if not diffs else f"{len(diffs)} case(s) differ")
        return 1 if diffs else 0
    print(json.dumps(fresh, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
