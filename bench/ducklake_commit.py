"""Commit time of a 1,000-response chunk: DuckLake on each catalog and storage beside today's
Parquet lake (write_rows) on the same storage, in one run. Prints a Markdown table for
bench/results.md.

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
from tasks.lake.ducklake import DuckLakeStore, commit  # noqa: E402
from tasks.lake.engine import s3_secret  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402
from tasks.lake.schemas import SCHEMAS  # noqa: E402
from tasks.lake.writes import write_rows  # noqa: E402

TARGET = "≤ 50 ms median"


def chunk(k: int, n: int = 1000) -> pa.Table:
    """``n`` responses shaped like a sweep's: ids, model, ~200 characters of text, tokens, cost."""
    now = dt.datetime.now(dt.timezone.utc)
    rows = [{"response_id": f"r{k}-{i:04d}-{'x' * 48}", "request_id": f"q{k}-{i:04d}-{'y' * 48}",
             "run_id": "bench", "model": "fake/model", "status": "ok", "text": f"The answer is {i}. " * 12,
             "error": None, "attempts": 1, "latency_s": 0.05, "prompt_tokens": 40, "completion_tokens": 30,
             "created_at": now, "cost_usd": 0.0001} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=SCHEMAS["responses"])


def ducklake(store: DuckLakeStore, chunks: list[pa.Table], stack: contextlib.ExitStack) -> Callable[[int], None]:
    """Commit chunk k in one DuckLake transaction (the connection open until ``stack`` closes)."""
    con = stack.enter_context(contextlib.closing(store.connect()))
    return lambda k: commit(con, "responses", chunks[k])


def parquet(location: str, chunks: list[pa.Table]) -> Callable[[int], None]:
    """Write chunk k as today's lake does (write_rows takes dicts: converted beforehand)."""
    rows = [c.to_pylist() for c in chunks]
    return lambda k: write_rows(Lake(location), "responses", rows[k])


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


def measure(tmp: Path, commits: int) -> dict[str, list[float]]:
    """Every setup's commit times, each on a lake of its own; the setups take turns, commit by
    commit, so that a change in the shared machine's load falls on all of them alike."""
    chunks = [chunk(k) for k in range(commits)]
    with servers(tmp) as (s3, pg), contextlib.ExitStack() as stack:
        secret = s3_secret(s3.endpoint, s3_server.REGION)
        setups = {
            "DuckLake, SQLite catalog, local data": ducklake(DuckLakeStore.local(tmp / "sqlite-local"), chunks, stack),
            "Parquet lake today, local (write_rows)": parquet(str(tmp / "parquet"), chunks),
            "DuckLake, SQLite catalog, data on S3 (moto)": ducklake(DuckLakeStore(
                f"sqlite:{tmp / 'sqlite-s3.sqlite'}", f"s3://{s3_server.BUCKET}/ducklake/", secret=secret), chunks, stack),
            "Parquet lake today, on S3 (moto)": parquet(s3.lake("parquet"), chunks),
            "DuckLake, PostgreSQL catalog, local data": ducklake(DuckLakeStore(
                f"postgres:{pg.create_database('bench')}", f"{tmp / 'pg-data'}/"), chunks, stack),
        }
        times: dict[str, list[float]] = {name: [] for name in setups}
        for k in range(commits):
            for name, commit_one in setups.items():
                t = time.perf_counter()
                commit_one(k)
                times[name].append(time.perf_counter() - t)
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
    print("| lake | median ms | max ms | target |\n|---|---|---|---|")
    for name, times in results.items():
        print(f"| {name} | {statistics.median(times) * 1000:.0f} | {max(times) * 1000:.0f} | {TARGET} |")


if __name__ == "__main__":
    main()
