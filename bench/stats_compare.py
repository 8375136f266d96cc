"""Compare two stored computations of the statistics (``computed_bootstrap`` and
``computed_regression``) of one warehouse, row by row: the same rows, the same text and counts,
floats within a tolerance.

    python bench/stats_compare.py --config bench/work/wh-1m/bench.toml [A B] [--rtol 1e-6 --atol 1e-9]

A and B are computation ids (by default the two latest of scope ``all``, oldest first). Rows are
matched by their key (what an estimate or a term is of); each float column's largest absolute and
relative difference is printed; the exit status is 1 when a row or a value differs beyond the
tolerance.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl  # noqa: E402

from tasks.config import load_config  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402

KEYS = {
    "computed_bootstrap": ["metric", "model", "suite", "task", "category", "prompt_style", "variant", "variant_b", "bin"],
    "computed_regression": ["suite", "model", "task", "fit", "term", "status"],
}
# Differ between any two computations by design.
OWN = {"computation_id", "computed_at", "inputs_sha256"}


def latest_two(con) -> list[str]:
    rows = con.sql("""SELECT computation_id FROM raw_computed_bootstrap WHERE scope = 'all'
                      GROUP BY computation_id ORDER BY max(computed_at) DESC LIMIT 2""").fetchall()
    return [r[0] for r in reversed(rows)]


def compare(con, table: str, a: str, b: str, rtol: float, atol: float) -> bool:
    """Print the differences of ``table`` between computations ``a`` and ``b``; True when equal."""
    frames = [con.sql(f"SELECT * FROM raw_{table} WHERE computation_id = ?", params=[c]).pl().drop(OWN, strict=False)
              for c in (a, b)]
    keys = KEYS[table]
    left, right = (f.sort(keys, nulls_last=True) for f in frames)
    ok = left.height == right.height and left.select(keys).equals(right.select(keys))
    print(f"{table}: {left.height} rows vs {right.height}; keys {'equal' if ok else 'DIFFER'}")
    if not ok:
        return False
    for col in left.columns:
        x, y = left[col], right[col]
        if x.dtype.is_float():
            both = pl.DataFrame({"x": x, "y": y})
            nulls_equal = both.select((pl.col("x").is_null() == pl.col("y").is_null()).all()).item()
            diff = (x - y).abs()
            rel = diff / y.abs()
            bad = (diff > atol + rtol * y.abs()).fill_null(False).sum()
            print(f"  {col}: max |diff| {diff.max()}, max rel {rel.filter(y.abs() > 0).max()}, "
                  f"beyond tolerance {bad}, nulls {'equal' if nulls_equal else 'DIFFER'}")
            ok = ok and nulls_equal and bad == 0
        elif not x.equals(y):
            print(f"  {col}: DIFFERS ({(x != y).sum()} rows)")
            ok = False
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("ids", nargs="*", help="two computation ids (default: the two latest)")
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--atol", type=float, default=1e-9)
    args = parser.parse_args()
    con = Lake.of(load_config(args.config, suites=False)).connect("raw_computed_bootstrap raw_computed_regression")
    a, b = args.ids or latest_two(con)
    print(f"A {a}\nB {b}\nrtol {args.rtol}, atol {args.atol}")
    ok = all([compare(con, table, a, b, args.rtol, args.atol) for table in KEYS])
    print("SAME" if ok else "DIFFERENT")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
