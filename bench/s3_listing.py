"""How long `invarbench sql "select count(*) from responses"` takes on a lake of 100,000 files in a
local S3-compatible server (moto, in a subprocess on 127.0.0.1), before and after `invarbench
compact`, and how many requests each step makes.

The lake: 100,000 one-row Parquet files, as many small batches would leave behind (runs killed
before their end-of-run compaction, or lakes written before compaction existed) —
``RESPONSES`` files of ``responses`` over ``DAYS`` day partitions, the rest spread over the
other tables. Each file is uploaded with boto3 from a thread pool; moto keeps them in memory.
The CLI runs in a subprocess, as a user would run it: once on the empty lake (to build the
catalog), then the count over the small files, `invarbench compact`, the count over the merged
files, and a count of one day (hive partition pruning). The request counts come from moto's own
request log.

Run: ``python bench/s3_listing.py`` (writes ``bench/results/s3_listing.md``). ``S3_BENCH_FILES=n``
sets the lake's size. moto answers about 150-200 requests per second on 2 cores, so 100,000 files
take about 9 minutes to upload and the compaction (a HEAD, a GET and a DELETE per file) about half
an hour; a real object store serves the same requests in parallel.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tasks.lake.schemas import SCHEMAS  # noqa: E402

TOTAL = int(os.environ.get("S3_BENCH_FILES", 100_000))
RESPONSES = TOTAL // 4
DAYS = 100
BUCKET = "bench"
OUT = REPO / "bench" / "results" / "s3_listing.md"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def body(table: str) -> bytes:
    row = {name: None for name in SCHEMAS[table].names}
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([row], schema=SCHEMAS[table]), buf, compression="zstd")
    return buf.getvalue()


def keys() -> list[tuple[str, str]]:
    """(table, key) of every file: responses first, then the other tables in turn."""
    first = dt.date(2026, 1, 1)
    out = [("responses", f"lake/responses/day={first + dt.timedelta(days=i % DAYS)}/part-{i:08d}.parquet")
           for i in range(RESPONSES)]
    others = [t for t in SCHEMAS if t != "responses"]
    for i in range(TOTAL - RESPONSES):
        table = others[i % len(others)]
        out.append((table, f"lake/{table}/day={first + dt.timedelta(days=i % DAYS)}/part-{i:08d}.parquet"))
    return out


def requests_in(log: Path, since: int) -> tuple[int, dict[str, int]]:
    """The requests moto logged after line ``since``: their number, and their number per kind."""
    lines = log.read_text(errors="replace").splitlines()[since:]
    kinds: dict[str, int] = {}
    for line in lines:
        found = re.search(r'"(GET|PUT|HEAD|DELETE|POST) (\S+) HTTP', line)
        if found:
            method, target = found.groups()
            kind = "LIST" if method == "GET" and "list-type" in target else method
            kinds[kind] = kinds.get(kind, 0) + 1
    return len(lines), kinds


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="s3-bench "))
    log = work / "moto.log"
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
           "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    env.pop("PREFECT_API_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="bench", aws_secret_access_key="bench")
        s3.create_bucket(Bucket=BUCKET)
        bodies = {t: body(t) for t in SCHEMAS}
        cfg = work / "bench.toml"
        cfg.write_text(f'[warehouse]\npath = "{work / "wh"}"\nlake = "s3://{BUCKET}/lake"\n'
                       f'endpoint_url = "{endpoint}"\nregion = "us-east-1"\n', encoding="utf-8")

        def timed(label: str, *args: str) -> None:
            before = len(log.read_text(errors="replace").splitlines())
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "flows.cli", *args, "--config", str(cfg)],
                                  cwd=REPO, env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            assert done.returncode == 0, done.stderr
            n, kinds = requests_in(log, before)
            command = " ".join(f'"{a}"' if " " in a else a for a in args)
            rows.append((label, command, seconds, done.stdout.strip().splitlines()[-1], n, kinds))
            print(rows[-1], flush=True)

        rows: list[tuple] = []
        count = "SELECT count(*) FROM responses"
        one_day = "SELECT count(*) FROM raw_responses WHERE day = DATE '2026-01-01'"
        # The catalog is built on the empty lake: building it binds every view, which over a lake of
        # many small files reads every file of every table (the figure for a large uncompacted
        # lake is the query below, times the tables).
        timed("empty lake (creates the schema files, builds the catalog)", "sql", "--format", "csv", count)
        todo = keys()
        t0 = time.perf_counter()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda tk: s3.put_object(Bucket=BUCKET, Key=tk[1], Body=bodies[tk[0]]), todo,
                          chunksize=500))
        upload_s = time.perf_counter() - t0
        timed(f"{TOTAL:,} small files", "sql", "--format", "csv", count)
        timed("compaction (one merged file per table and day)", "compact")
        timed("compacted", "sql", "--format", "csv", count)
        timed("compacted, one day", "sql", "--format", "csv", one_day)
    finally:
        server.terminate()
        server.wait()

    lines = [
        f"# `invarbench sql` on a lake of {TOTAL:,} files in a local S3-compatible server, before and after compaction",
        "",
        f"Measured {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by `bench/s3_listing.py` on "
        f"{os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f} at the end); moto "
        f"{__import__('moto').__version__} in server mode on 127.0.0.1.",
        "",
        f"Lake: {TOTAL:,} one-row Parquet files, as small batches of killed or pre-compaction runs leave "
        f"them: {RESPONSES:,} in `responses` over {DAYS} day partitions, {TOTAL - RESPONSES:,} over the "
        f"other {len(SCHEMAS) - 1} tables. Uploading them took {upload_s:.0f} s.",
        "",
        "| step | command | wall time (s) | output (last line) | requests | by kind |",
        "| --- | --- | ---: | --- | ---: | --- |",
    ]
    for label, command, seconds, result, n, kinds in rows:
        by_kind = ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.items()))
        lines.append(f"| {label} | `invarbench {command}` | {seconds:.1f} | {result} | {n:,} | {by_kind} |")
    lines += [
        "",
        "Wall time includes starting Python and the CLI (about 2 s). LIST is one ListObjectsV2 page "
        "(up to 1,000 keys); HEAD and GET open and read a file; DELETE removes one.",
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
