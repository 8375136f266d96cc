"""Time every metric view of a warehouse's catalog, each on a fresh read-only connection.

    python bench/views.py --catalog WAREHOUSE/invarbench.duckdb --repeats 3

Each repeat opens the catalog anew and attaches the lake with the ``attach.sql`` beside it, as the
DuckDB shell does (binding the views is part of a user's query), and fetches
every row of ``SELECT * FROM <view>``. Views named in METRIC_VIEWS but absent from the catalog are
reported as missing rather than failing, so the script survives views being renamed or moved.
Prints one JSON line: ``{"views": {name: [seconds, ...]}, "missing": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

# The metric views users query (README: "Metric views"), plus the base they all read.
METRIC_VIEWS = [
    "trial_scores", "accuracy_by_bin", "accuracy_by_n", "lenient_accuracy_by_bin", "breaking_point",
    "invariance", "invariance_by_suite", "flip_patterns", "flip_patterns_by_suite", "paired_tests",
    "mcnemar_pairs", "model_pairs", "surface_regression_linear", "computed_bootstrap",
    "computed_regression", "attractors", "attractor_counts", "associativity_calls", "score_changes",
]
# Row-level views: counted, not fetched (fetching 10,000,000 rows measures the client, not the view).
COUNTED = {"trial_scores"}


def time_views(catalog: str, repeats: int) -> dict:
    """Seconds per repeat for every metric view present in ``catalog``."""
    import duckdb

    attach = (Path(catalog).parent / "attach.sql").read_text(encoding="utf-8")  # the lake, as the shell attaches it
    con = duckdb.connect(catalog, read_only=True)
    present = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    con.close()
    out: dict[str, list[float]] = {}
    failed: dict[str, str] = {}
    for view in [v for v in METRIC_VIEWS if v in present]:
        out[view] = []
        for _ in range(repeats):
            started = time.perf_counter()
            con = duckdb.connect(catalog, read_only=True)
            con.execute(attach)
            sql = f"SELECT count(*) FROM {view}" if view in COUNTED else f"SELECT * FROM {view}"
            try:
                con.execute(sql).fetchall()
            except duckdb.Error as exc:  # out of memory at 10M is a result, not the end of the figure
                failed[view] = f"{type(exc).__name__} after {time.perf_counter() - started:.0f} s: {str(exc).splitlines()[0]}"
                break
            finally:
                con.close()
            out[view].append(time.perf_counter() - started)
    return {"views": out, "failed": failed, "missing": [v for v in METRIC_VIEWS if v not in present]}


def main() -> None:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(time_views(args.catalog, args.repeats)))


if __name__ == "__main__":
    main()
