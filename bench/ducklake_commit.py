"""Commit time of a 1,000-response chunk to the lake (``write_table``, one DuckLake transaction)
on each catalog and storage, in one run. Prints a Markdown table for bench/results.md (the
Parquet lake before DuckLake was measured beside it there, on the release that still had it).

DuckLake: a SQLite catalog with local data, a SQLite catalog with data on S3, a PostgreSQL catalog
with local data. S3 is moto's server on 127.0.0.1 (tests/s3_server.py) and PostgreSQL Debian's
server on a temporary folder (tests/postgres_server.py), both started and stopped here.

python bench/ducklake_commit.py [--commits N]
"""

import argparse
import contextlib
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import postgres_server  # noqa: E402
import s3_server  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402
from tasks.lake.schemas import SCHEMAS  # noqa: E402
from tasks.lake.writes import write_table  # noqa: E402

TARGET = "≤ 50 ms median"


def chunk(k: int, n: int = 1000) -> pa.Table:
    """``n`` responses shaped like a sweep's: ids, model, ~200 characters of text, tokens, cost."""
    now = dt.datetime.now(dt.timezone.utc)
    rows = [{"response_id": f"r{k}-{i:04d}-{'x' * 48}", "request_id": f"q{k}-{i:04d}-{'y' * 48}",
             "run_id": "bench", "model": "fake/model", "status": "ok", "text": f"The answer is {i}. " * 12,
             "error": None, "attempts": 1, "latency_s": 0.05, "prompt_tokens": 40, "completion_tokens": 30,
             "created_at": now, "cost_usd": 0.0001} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=SCHEMAS["responses"])


def committer(lake: Lake, chunks: list[pa.Table]) -> Callable[[int], None]:
    """Commit chunk k to ``lake`` as the pipeline does (its tables created beforehand)."""
    lake.ensure()
    return lambda k: write_table(lake, "responses", chunks[k])


@contextlib.contextmanager
def servers(tmp: Path) -> Iterator[tuple[s3_server.S3Server, postgres_server.PostgresServer]]:
    """moto (its credentials in this process's AWS_* variables) and PostgreSQL, stopped on exit."""
    s3 = s3_server.start(tmp / "moto.log")
    try:
        os.environ.update({k: v for k, v in s3.env().items() if k.startswith("AWS_")})
        pg = postgres_server.start()
        try:
            yield s3, pg
        finally:
            postgres_server.stop(pg)
    finally:
        s3_server.stop(s3)


def measure(tmp: Path, commits: int) -> dict[str, list[tuple[float, float]]]:
    """Every setup's commit times (wall, and this process's CPU), each on a lake of its own; the
    setups take turns, commit by commit, so that a change in the shared machine's load falls on
    all of them alike."""
    chunks = [chunk(k) for k in range(commits)]
    with servers(tmp) as (s3, pg):
        setups = {
            "SQLite catalog, local data": committer(Lake(str(tmp / "sqlite-local")), chunks),
            "SQLite catalog, data on S3 (moto)": committer(Lake(s3.lake("ducklake"),
                                                                catalog=f"sqlite:{tmp / 'sqlite-s3.sqlite'}"), chunks),
            "PostgreSQL catalog, local data": committer(Lake(str(tmp / "pg-data"),
                                                             catalog=f"postgres:{pg.create_database('bench')}"), chunks),
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
        for k in range(commits):
            for name, commit_one in setups.items():
                t, cpu = time.perf_counter(), time.process_time()
                commit_one(k)
                times[name].append((time.perf_counter() - t, time.process_time() - cpu))
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = os.getloadavg()
        results = measure(Path(tmp), args.commits)
    after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before: {before[0]:.1f}, {before[1]:.1f}, {before[2]:.1f}; "
          f"after: {after[0]:.1f}, {after[1]:.1f}, {after[2]:.1f}; {args.commits} commits each\n")
    print("| DuckLake | median ms | max ms | CPU median ms | target |\n|---|---|---|---|---|")
    for name, times in results.items():
        wall, cpu = [t[0] * 1000 for t in times], [t[1] * 1000 for t in times]
        print(f"| {name} | {statistics.median(wall):.0f} | {max(wall):.0f} | {statistics.median(cpu):.0f} | {TARGET} |")


if __name__ == "__main__":
    main()
