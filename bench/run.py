"""Benchmarks: speed and memory figures of the pipeline's hot paths, printed and written to a file.

These are measurements, never assertions (machines here are shared and noisy). Run with
``make bench``; figures go to ``bench/results/<timestamp>.json`` and are printed as a table.

- generation: items per second for every task's default parameters;
- features: surface features (tiktoken included) per second;
- ledger: a ledger anti-join of a 1,000-request batch against a lake of 20,000 responses;
- parse: integer parses per second;
- local model: load time, and completion tokens per second of one short greedy generation
  (prompt evaluation included);
- memory: peak resident set size of this process.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tasks  # noqa: E402,F401  - offline environment defaults
from tasks.call import lookup_ledger  # noqa: E402
from tasks.features import surface_features  # noqa: E402
from tasks.parse import parse  # noqa: E402
from tasks.store import now_utc, write_rows  # noqa: E402
from tasks.suites import SUITES, suite_tasks  # noqa: E402


def timed(fn, *args):
    """(result, seconds) of one call."""
    started = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - started


def bench_generation() -> list[dict]:
    rows = []
    for suite in SUITES:
        for name, spec in suite_tasks(suite).items():
            items, seconds = timed(spec.run, None, 0)
            rows.append({"figure": f"generate {suite}.{name}", "value": round(len(items) / seconds, 1),
                         "unit": "items/s", "n": len(items)})
    return rows


def bench_features() -> dict:
    text = "In triangle ABC, AB = 3, BC = 4 and the angle ABC is 90 degrees. Find AC. " * 4
    _, seconds = timed(lambda: [surface_features(text + str(i)) for i in range(2000)])
    return {"figure": "surface features", "value": round(2000 / seconds, 1), "unit": "prompts/s", "n": 2000}


def bench_ledger() -> dict:
    lake = tempfile.mkdtemp(prefix="invarbench-bench-")
    ids = [uuid.uuid4().hex for _ in range(20000)]
    for chunk in range(0, len(ids), 2000):
        write_rows(lake, "responses", [
            {"response_id": uuid.uuid4().hex, "request_id": rid, "run_id": "bench", "model": "m", "status": "ok",
             "text": "Answer: 1", "attempts": 1, "latency_s": 0.1, "created_at": now_utc()}
            for rid in ids[chunk:chunk + 2000]])
    batch = ids[:500] + [uuid.uuid4().hex for _ in range(500)]
    hits, seconds = timed(lookup_ledger, lake, batch)
    assert len(hits) == 500
    return {"figure": "ledger anti-join (1k batch vs 20k responses)", "value": round(seconds * 1000, 1),
            "unit": "ms", "n": 1000}


def bench_parse() -> dict:
    texts = [f"Let me count.\n1+1 = 2\nAnswer: {i}" for i in range(5000)]
    _, seconds = timed(lambda: [parse("integer", t) for t in texts])
    return {"figure": "integer parse", "value": round(5000 / seconds, 1), "unit": "parses/s", "n": 5000}


def bench_local_models() -> list[dict]:
    from tasks import local_llm

    rows = []
    messages = [{"role": "user", "content": "Count from one to twenty in words, separated by commas."}]
    for name in local_llm.EMBEDDED:
        _, load_s = timed(local_llm.load, name)
        (text, _, completion_tokens), seconds = timed(local_llm.generate, name, messages, {"max_tokens": 64})
        rows.append({"figure": f"local/{name} load", "value": round(load_s, 2), "unit": "s", "n": 1})
        rows.append({"figure": f"local/{name} generation", "value": round(completion_tokens / seconds, 1),
                     "unit": "tokens/s", "n": completion_tokens})
    return rows


def main() -> None:
    figures = bench_generation() + [bench_features(), bench_ledger(), bench_parse()] + bench_local_models()
    figures.append({"figure": "peak RSS", "value": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                    "unit": "MiB", "n": 1})
    out = ROOT / "bench" / "results" / f"{now_utc():%Y%m%dT%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"at": now_utc().isoformat(), "figures": figures}, indent=2))
    width = max(len(f["figure"]) for f in figures)
    for f in figures:
        print(f"{f['figure']:<{width}}  {f['value']:>12} {f['unit']:<10} (n={f['n']})")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
