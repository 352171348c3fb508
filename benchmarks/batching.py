"""Batching across sessions, on and off: the same Whisper decodes of N concurrent streams run one
after another (off) or as one CTranslate2 call (on), alternated within one run.

    .venv/bin/python benchmarks/batching.py [--model whisper-base] [--sizes 2,4] [--seconds 6] [--repeats 5]

Each stream is a buffer of `--seconds` of a different shared recording, with a prompt of the
words before it (as a streaming recogniser holds them). Per batch size N: wall seconds for the N
decodes off and on (the median of `--repeats`), the throughput gain (off / on, in wall and in CPU seconds), the latency a
stream adds by waiting for the batch (on - one decode), and how many words differ from the
unbatched output (word error rate of on against off: batching changes padding, not the model).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before CTranslate2 loads (see speech/budget.py)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.loadkit import clips  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="whisper-base", help="recogniser (default whisper-base)")
    parser.add_argument("--sizes", default="2,4", help="streams decoded together (default 2,4)")
    parser.add_argument("--seconds", type=float, default=6.0, help="buffer per stream (default 6 s)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="CTranslate2 threads (default 2)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/batching.json"))
    args = parser.parse_args()

    from speech.asr.batching import _Request, decode_batch
    from speech.asr.whisper import load_model, transcribe_words
    from speech.audio import read_audio
    from speech.backends import default_registry
    from speech.audio import resample
    from speech.eval.quality import word_errors

    registry = default_registry()
    sizes = [int(x) for x in args.sizes.split(",")]
    config = registry.config("recognizer", args.model, language="en", cpu_threads=args.threads, workers=1)
    model = load_model(registry, config)
    paths = clips(max(sizes))
    if len(paths) < max(sizes):
        raise SystemExit(f"need {max(sizes)} recordings, found {len(paths)}")
    buffers = []
    for p in paths[: max(sizes)]:
        samples, rate, _ = read_audio(p)
        samples = resample(samples, rate, 16000)
        buffers.append(samples[16000: int((1.0 + args.seconds) * 16000)].astype("float32"))
    prompts = [" ".join(w.text for w in transcribe_words(model, b[:16000], config)[0]) for b in buffers]
    transcribe_words(model, buffers[0], config)  # warm

    rows = []
    for n in sizes:
        requests = [_Request(buffers[i], config, prompts[i], 0.0) for i in range(n)]
        off_s, on_s, one_s, off_cpu, on_cpu = [], [], [], [], []
        for _ in range(args.repeats):  # alternate off and on: the machine's load drifts alike
            t0, c0 = time.perf_counter(), time.process_time()
            off = [transcribe_words(model, r.audio, config, r.prompt, 0.0) for r in requests]
            t1, c1 = time.perf_counter(), time.process_time()
            on = decode_batch(model, requests)
            t2, c2 = time.perf_counter(), time.process_time()
            transcribe_words(model, requests[0].audio, config, requests[0].prompt, 0.0)
            t3 = time.perf_counter()
            off_s.append(t1 - t0)
            on_s.append(t2 - t1)
            one_s.append(t3 - t2)
            off_cpu.append(c1 - c0)
            on_cpu.append(c2 - c1)
        ref = " ".join(" ".join(w.text for w in words) for words, _ in off)
        hyp = " ".join(" ".join(w.text for w in words) for words, _ in on)
        row = {"streams": n, "off_s": round(statistics.median(off_s), 3), "on_s": round(statistics.median(on_s), 3),
               "one_decode_s": round(statistics.median(one_s), 3)}
        row["throughput_gain"] = round(row["off_s"] / row["on_s"], 3)
        # CPU seconds (every thread of this process): less sensitive to other processes' load
        row["off_cpu_s"] = round(statistics.median(off_cpu), 3)
        row["on_cpu_s"] = round(statistics.median(on_cpu), 3)
        row["cpu_gain"] = round(row["off_cpu_s"] / row["on_cpu_s"], 3)
        row["added_latency_s"] = round(row["on_s"] - row["one_decode_s"], 3)
        row["wer_on_vs_off"] = round(word_errors(ref, hyp).wer or 0.0, 4)
        rows.append(row)
        print(f"{n} streams: off {row['off_s']} s, on {row['on_s']} s (gain {row['throughput_gain']}x), "
              f"CPU {row['off_cpu_s']} -> {row['on_cpu_s']} s (gain {row['cpu_gain']}x), "
              f"one decode {row['one_decode_s']} s, added latency {row['added_latency_s']} s, "
              f"WER on vs off {row['wer_on_vs_off']}", flush=True)
    report = {"model": args.model, "seconds": args.seconds, "threads": args.threads, "repeats": args.repeats, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
