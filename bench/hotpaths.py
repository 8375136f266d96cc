"""Hot paths in isolation, supporting the whole-pipeline figures: ``python bench/hotpaths.py``.

Prints one JSON line (``{"figures": [...]}``) that bench/run.py adds to the results as
supporting figures:

- generation: items per second for every task's default parameters;
- features: surface features (tiktoken included) per second;
- ledger: a ledger anti-join of a 1,000-request batch against a lake of 20,000 responses;
- parse: parses per second of each answer type;
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

from tasks.environment import apply_defaults  # noqa: E402

apply_defaults()  # offline environment defaults before litellm or Prefect load
from tasks.items.features import surface_features  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402
from tasks.lake.writes import write_rows  # noqa: E402
from tasks.models.call import lookup_ledger  # noqa: E402
from tasks.records import now_utc  # noqa: E402
from tasks.scoring.parse import parse  # noqa: E402
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
    lake = Lake(tempfile.mkdtemp(prefix="invarbench-bench-"))
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


def bench_parse() -> list[dict]:
    samples = {
        "integer": [f"Let me count.\n1+1 = 2\nAnswer: {i}" for i in range(5000)],
        "text": [f"Let me see.\nOutput: w{i} x{i % 7}" for i in range(5000)],
        # Exact forms go through sympy: the slow path of a rescore of geometry responses.
        "math": [f"So it is\nAnswer: {['3/2', '2*sqrt(5)', '12', '8*pi'][i % 4]}" for i in range(500)],
    }
    rows = []
    for answer_type, texts in samples.items():
        _, seconds = timed(lambda: [parse(answer_type, t) for t in texts])
        rows.append({"figure": f"{answer_type} parse", "value": round(len(texts) / seconds, 1), "unit": "parses/s",
                     "n": len(texts)})
    return rows


def main() -> None:
    """Run every hot-path benchmark; print one JSON line."""
    figures = bench_generation() + [bench_features(), bench_ledger()] + bench_parse()
    figures.append({"figure": "peak RSS", "value": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                    "unit": "MiB", "n": 1})
    print(json.dumps({"figures": figures}))


if __name__ == "__main__":
    main()
