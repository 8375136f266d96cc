"""Peak memory of the heaviest marts within the ``[warehouse]`` memory limit and without one (issue #27).

    python bench/memory.py --config bench/work/wh-1m/bench.toml --limits 2GB,none

Each (mart, limit) runs in a process of its own, so its peak resident memory (``ru_maxrss``) is that
query's: the process opens the warehouse catalog as ``invarbench sql`` does (``open_catalog``, with
``Limits(limit)``; ``none`` opens it with DuckDB's defaults, 80% of RAM and no spill folder of ours)
and fetches every row of ``SELECT * FROM <mart>``. Prints one JSON line per run:
``{"view", "limit", "seconds", "peak_rss_mb", "rows"}`` (or ``"error"``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HEAVIEST = ("paired_tests", "model_pairs", "flip_patterns")


def measure(config: str, view: str, limit: str) -> dict:
    """One query of ``view`` over the warehouse of ``config`` within ``limit`` (``none``: unlimited)."""
    import duckdb

    from tasks.config import load_config
    from tasks.lake.catalog import build_catalog, open_catalog
    from tasks.lake.engine import Limits
    from tasks.lake.lake import Lake

    cfg = load_config(config, suites=False)
    lake = Lake.of(cfg)
    if not cfg.catalog_path.exists():
        build_catalog(cfg.catalog_path, lake)
    started = time.perf_counter()
    if limit == "none":
        con = duckdb.connect(str(cfg.catalog_path), read_only=True)
        lake.attach(con, read_only=True)
    else:
        con = open_catalog(cfg.catalog_path, Lake(cfg.lake_path, limits=Limits(limit, cfg.warehouse.spill_dir)))
    out = {"view": view, "limit": limit}
    try:
        out["rows"] = len(con.execute(f"SELECT * FROM {view}").fetchall())
    except duckdb.Error as exc:
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    finally:
        con.close()
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return out


def main() -> None:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--views", default=",".join(HEAVIEST))
    parser.add_argument("--limits", default="2GB,none", help="memory limits to compare; none = DuckDB's default")
    parser.add_argument("--one", action="store_true", help="measure the first view and limit in this process")
    args = parser.parse_args()
    views, limits = args.views.split(","), args.limits.split(",")
    if args.one:
        print(json.dumps(measure(args.config, views[0], limits[0])), flush=True)
        return
    for view in views:
        for limit in limits:
            subprocess.run([sys.executable, __file__, "--config", args.config, "--views", view,
                            "--limits", limit, "--one"], check=True)


if __name__ == "__main__":
    main()
