"""Every mart in-process and warm (issue #27): the seconds and CPU of ``SELECT * FROM <mart>`` on one
connection opened as ``invarbench sql`` opens it, after ``--warmup`` runs of the same query (one by default).

    python bench/marts_warm.py --config <warehouse>/bench.toml --repeats 3 [--warmup 1] [--marts invariance,...]

The connection is the product's (``open_catalog``: the catalog's views, the lake attached read-only,
the ``[warehouse]`` memory limit and spill folder), so the marts read the materialised tables when
they are current (printed as ``current``). Per mart: the wall and CPU seconds (the process's, every
DuckDB thread included) of each timed run, the rows, and the process's peak resident memory so far
(``ru_maxrss``: a high-water mark over the marts run before it too). One JSON line per mart.

``--fetch``: how the rows come back: ``rows`` (``fetchall``, Python objects: what the product's
Python code pays), ``arrow`` (an Arrow table: the query without Python objects, whose conversion
grows with the rows, a ``TIMESTAMPTZ`` value costing about 4 microseconds) or ``count`` (only
``count(*)`` of the mart: DuckDB's work alone).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def marts() -> list[str]:
    """Every view of sql/marts (table macros are read through the views that call them)."""
    from tasks.lake.sql import SQL_DIR, sql_defines

    return sorted(name for path in (SQL_DIR / "marts").glob("*.sql") for name in sql_defines(path)
                  if "CREATE OR REPLACE VIEW" in path.read_text(encoding="utf-8"))


# How a mart's rows are fetched (--fetch): each returns how many rows it had.
FETCH = {
    "rows": lambda con, sql: len(con.execute(sql).fetchall()),
    "arrow": lambda con, sql: con.execute(sql).to_arrow_table().num_rows,
    "count": lambda con, sql: con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0],
}


def _timed(con, sql: str, fetch: str = "rows") -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    rows = FETCH[fetch](con, sql)
    return time.perf_counter() - wall, time.process_time() - cpu, rows


def main() -> None:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs of each mart first")
    parser.add_argument("--marts", default="", help="comma-separated; default every mart")
    parser.add_argument("--fetch", choices=sorted(FETCH), default="rows",
                        help="rows: fetchall (default); arrow: an Arrow table; count: count(*) only")
    args = parser.parse_args()

    from tasks.config import load_config
    from tasks.lake.catalog import build_catalog, open_catalog
    from tasks.lake.lake import Lake
    from tasks.lake.materialised import is_current

    cfg = load_config(args.config, suites=False)
    lake = Lake.of(cfg)
    if not cfg.catalog_path.exists():
        build_catalog(cfg.catalog_path, lake)
    con = open_catalog(cfg.catalog_path, lake)
    print(json.dumps({"current": is_current(con)}), flush=True)
    for mart in args.marts.split(",") if args.marts else marts():
        sql = f"SELECT * FROM {mart}"
        for _ in range(args.warmup):  # the lake's files read once, the views bound
            _timed(con, sql, args.fetch)
        runs = [_timed(con, sql, args.fetch) for _ in range(args.repeats)]
        print(json.dumps({"mart": mart, "wall_s": [round(r[0], 3) for r in runs],
                          "cpu_s": [round(r[1], 3) for r in runs], "rows": runs[-1][2],
                          "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}), flush=True)
    con.close()


if __name__ == "__main__":
    main()
