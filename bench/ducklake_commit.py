"""Commit time of a 1,000-response chunk to the lake (DuckLake, SQLite catalog, local data), as
``write_table`` commits it. Prints a Markdown table for bench/results.md.

python bench/ducklake_commit.py [--commits N]
"""

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.lake.lake import Lake  # noqa: E402
from tasks.lake.schemas import SCHEMAS  # noqa: E402
from tasks.lake.writes import write_table  # noqa: E402


def chunk(k: int, n: int = 1000) -> pa.Table:
    """``n`` responses shaped like a sweep's: ids, model, ~200 characters of text, tokens, cost."""
    now = dt.datetime.now(dt.timezone.utc)
    rows = [{"response_id": f"r{k}-{i:04d}-{'x' * 48}", "request_id": f"q{k}-{i:04d}-{'y' * 48}",
             "run_id": "bench", "model": "fake/model", "status": "ok", "text": f"The answer is {i}. " * 12,
             "error": None, "attempts": 1, "latency_s": 0.05, "prompt_tokens": 40, "completion_tokens": 30,
             "created_at": now, "cost_usd": 0.0001} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=SCHEMAS["responses"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=21)
    args = parser.parse_args()
    chunks = [chunk(k) for k in range(args.commits)]
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(str(Path(tmp) / "lake"))
        lake.ensure()
        times = []
        for c in chunks:
            t = time.perf_counter()
            write_table(lake, "responses", c)
            times.append(time.perf_counter() - t)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}; {args.commits} commits\n")
    print("| lake | median ms | max ms | target |\n|---|---|---|---|")
    print(f"| DuckLake, SQLite catalog, local data | {statistics.median(times) * 1000:.0f} | "
          f"{max(times) * 1000:.0f} | ≤ 50 ms median |")


if __name__ == "__main__":
    main()
