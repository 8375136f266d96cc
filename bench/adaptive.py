"""Adaptive concurrency against a provider whose real limit is 8 requests in flight.

The provider (tests/fakes.py on loopback) answers 429 with Retry-After: 1 to every request that
arrives while more than 8 are in flight. The same 60 requests are sent with ``concurrency = 64``
twice: with additive-increase / multiplicative-decrease (the default), and fixed. The figure is
the share of attempts answered 429; it is written to ``bench/results/adaptive.md``. A measurement,
not a test: the test (tests/test_adaptive.py) asserts only that the sweep completes and shrinks.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from tasks.environment import apply_defaults  # noqa: E402

apply_defaults()  # offline environment defaults before litellm or Prefect load
from fakes import FakeProvider, FakeServer  # noqa: E402
from tasks.items.generate import generate_task, item_row  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402
from tasks.models.config import ModelConfig  # noqa: E402
from tasks.models.stream import run_calls  # noqa: E402

LIMIT = 8
CONCURRENCY = 64


def measure(adaptive: bool, rows: list[dict]) -> dict:
    """Send ``rows`` once; return attempts, 429s, errors, seconds and the concurrency reached."""
    state = FakeProvider(delay_s=0.05)
    state.fault = lambda content, attempt: "429" if state.in_flight > LIMIT else None
    with FakeServer(state) as server, tempfile.TemporaryDirectory() as tmp:
        cfg = ModelConfig(model="openai/fake-model", api_base=server.api_base, concurrency=CONCURRENCY, retries=20,
                          backoff_s=0.05, timeout_s=30, adaptive_concurrency=adaptive)
        started = time.perf_counter()
        stats = run_calls(rows, f"bench-{'aimd' if adaptive else 'fixed'}", cfg, f"bench-{adaptive}", Lake(tmp))
        seconds = time.perf_counter() - started
    attempts = len(state.seen)
    conc = next(iter(stats.concurrency.values()))
    return {"mode": "AIMD" if adaptive else "fixed", "attempts": attempts, "throttled_429": conc["throttled"],
            "share_429": conc["throttled"] / attempts, "errors": stats.errors, "seconds": seconds,
            "min_concurrency": conc["min"], "final_concurrency": conc["final"]}


def main() -> None:
    """Run both modes and write the table."""
    dataset, items = generate_task("symmetry", "closure", {"n_min": 5, "n_max": 1500, "n_step": 5,
                                                           "groups": ["integers"], "prompt_styles": ["direct"]}, 0)
    rows = [item_row(i, dataset) for i in items]
    results = [measure(True, rows), measure(False, rows)]
    lines = [f"# Adaptive concurrency: {len(rows)} requests, concurrency {CONCURRENCY}, provider limit {LIMIT} in flight",
             "", "| mode | attempts | 429s | share of 429s | errors | seconds | min concurrency | final concurrency |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['mode']} | {r['attempts']} | {r['throttled_429']} | {r['share_429']:.1%} | {r['errors']} | "
              f"{r['seconds']:.1f} | {r['min_concurrency']} | {r['final_concurrency']} |" for r in results]
    out = ROOT / "bench" / "results" / "adaptive.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n\nMeasured on a shared 2-core machine; seconds are indicative only.\n",
                   encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
