"""Batching across sessions for Gemma, on and off: N concurrent en->de streams, each in its own
thread, fed FLORES-101 devtest sentences word by word (as `speech bench mt` does), with their own
llama contexts (off) or as sequences of one shared context with batched decodes (on).

    nice -n 10 .venv/bin/python benchmarks/mt_batching.py [--sizes 2,4] [--sentences 3] [--threads 2]

Stream k of N translates the sentences k, k+N, k+2N... (`--sentences` each), one stream state
across them (context sentences carry over, as in a session). Per N, off then on: wall seconds,
throughput (source words per wall second), CPU seconds per sentence (every thread of the process:
moves less with other processes' load), update time p50/p90 (an update's wall time, which on
includes the wait for the batch), how many sentences' outputs differ from the unbatched ones (and
their word error rate against them), corpus chrF of each against the FLORES German references, and
the decodes' batch sizes. Run each size alone where a run would pass a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FLORES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "text" / "flores101" / "eng.devtest"


def run_streams(translator, sentences: list[list[str]]) -> dict:  # noqa: ANN001 - LlmTranslator
    """Every stream in its own thread; returns the outputs per stream and the timings."""
    from speech.translate.policy import LocalAgreement
    from speech.translate.simulate import translate_stream
    from speech.translate.simultaneous import SimultaneousTranslation

    outputs: list[list[str]] = [[] for _ in sentences]
    update_ms: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def one(k: int) -> None:
        try:
            tr = SimultaneousTranslation(translator.open("en", "de"), LocalAgreement(), language="de")
            for line in sentences[k]:
                run = translate_stream(tr, line.split())
                outputs[k].append(" ".join(run.target))
                with lock:
                    update_ms.extend(run.update_ms)
            tr.stream.close()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(sentences))]
    t0, c0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if errors:
        raise errors[0]
    return {"outputs": outputs, "wall_s": wall, "cpu_s": cpu, "update_ms": update_ms}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2,4", help="concurrent streams (default 2,4)")
    parser.add_argument("--sentences", type=int, default=3, help="sentences per stream (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads per context (default 2)")
    parser.add_argument("--window", type=float, default=0.02, help="batch_window_s (default 0.02)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/mt_batching.json"))
    args = parser.parse_args()

    from speech.backends import default_registry
    from speech.eval.quality import corpus_scores, word_errors
    from speech.stats import percentile

    if not FLORES.exists():
        raise SystemExit(f"{FLORES} not found: the shared data (../shared/data) is needed")
    lines = FLORES.read_text(encoding="utf-8").splitlines()
    refs = (FLORES.parent / "deu.devtest").read_text(encoding="utf-8").splitlines()
    registry = default_registry()
    sizes = [int(x) for x in args.sizes.split(",")]
    rows = []
    for n in sizes:
        sentences = [[lines[k + n * i] for i in range(args.sentences)] for k in range(n)]
        words = sum(len(s.split()) for stream in sentences for s in stream)
        row: dict = {"streams": n, "sentences": n * args.sentences, "source_words": words}
        results = {}
        for mode, batch in (("off", 0), ("on", n)):
            translator = registry.create("translator", "gemma-270m", threads=args.threads,
                                         batch_sessions=batch, batch_window_s=args.window)
            run_streams(translator, [[lines[-1]]])  # load and warm (one sentence not measured)
            r = results[mode] = run_streams(translator, sentences)
            row[f"{mode}_wall_s"] = round(r["wall_s"], 2)
            row[f"{mode}_words_per_s"] = round(words / r["wall_s"], 2)
            row[f"{mode}_cpu_s_per_sentence"] = round(r["cpu_s"] / (n * args.sentences), 3)
            row[f"{mode}_update_ms_p50"] = round(percentile(r["update_ms"], 50) or 0.0, 1)
            row[f"{mode}_update_ms_p90"] = round(percentile(r["update_ms"], 90) or 0.0, 1)
            if batch:
                sizes_seen: dict[int, int] = {}
                for s in translator.model._pool.schedulers:
                    for size, count in s.stats.sizes.items():
                        sizes_seen[size] = sizes_seen.get(size, 0) + count
                row["on_batch_sizes"] = dict(sorted(sizes_seen.items()))
        off = [o for stream in results["off"]["outputs"] for o in stream]
        on = [o for stream in results["on"]["outputs"] for o in stream]
        row["throughput_gain"] = round(row["off_wall_s"] / row["on_wall_s"], 3)
        row["cpu_gain"] = round(row["off_cpu_s_per_sentence"] / row["on_cpu_s_per_sentence"], 3)
        row["outputs_differing"] = sum(a != b for a, b in zip(off, on))
        references = [refs[k + n * i] for k in range(n) for i in range(args.sentences)]
        row["chrf_off"] = round(corpus_scores(off, references)["chrf"], 1)
        row["chrf_on"] = round(corpus_scores(on, references)["chrf"], 1)
        row["wer_on_vs_off"] = round(word_errors(" ".join(off), " ".join(on)).wer or 0.0, 4)
        row["differences"] = [{"off": a, "on": b} for a, b in zip(off, on) if a != b]
        rows.append(row)
        print(f"{n} streams: off {row['off_wall_s']} s ({row['off_words_per_s']} words/s, "
              f"{row['off_cpu_s_per_sentence']} CPU s/sentence, update p50/p90 {row['off_update_ms_p50']}/"
              f"{row['off_update_ms_p90']} ms); on {row['on_wall_s']} s ({row['on_words_per_s']} words/s, "
              f"{row['on_cpu_s_per_sentence']} CPU s/sentence, update p50/p90 {row['on_update_ms_p50']}/"
              f"{row['on_update_ms_p90']} ms); gain {row['throughput_gain']}x wall, {row['cpu_gain']}x CPU; "
              f"outputs differing {row['outputs_differing']}/{row['sentences']} (WER on vs off {row['wer_on_vs_off']}, chrF off {row['chrf_off']} on {row['chrf_on']}); batch sizes {row['on_batch_sizes']}",
              flush=True)
    report = {"model": "gemma-270m", "pair": "en-de", "threads": args.threads, "window_s": args.window, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
