"""Compare two stored computations of the statistics (``computed_bootstrap`` and
``computed_regression``) of one warehouse, row by row: the same rows, the same text and counts,
floats within a tolerance.

    python bench/stats_compare.py --config bench/work/wh-1m/bench.toml [A B] [--rtol 1e-6 --atol 1e-9]
                                  [--monte-carlo Z]

A and B are computation ids (by default the two latest of scope ``all``, oldest first). Rows are
matched by their key (what an estimate or a term is of); each float column's largest absolute and
relative difference is printed; the exit status is 1 when a row or a value differs beyond the
tolerance.

``--monte-carlo Z`` compares two computations whose bootstrap draws differ (another seed, or the
draw by class against the earlier draw of families): the interval endpoints (``ci_lo``,
``ci_hi``) and ``n_valid_resamples`` of ``computed_bootstrap`` within Z standard errors of the
difference of two independent Monte Carlo estimates, everything else (keys, counts, estimates,
the whole of ``computed_regression``) to the float tolerance as without it. A percentile
endpoint of R resamples has a standard error of about 0.68 × width / √R (2.67 σ / √R for a normal
bootstrap distribution, whose 95% width is 3.92 σ), so the endpoints may differ by
Z × √2 × 0.68 × width / √R (width the larger of the two intervals'); ``n_valid_resamples`` by
Z × √(2 R q (1 − q)) + 1 (q the defined share). Discrete distributions (few families) can
exceed it by one atom: the rows beyond it are printed for a look.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from tasks.config import load_config  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402

KEYS = {
    "computed_bootstrap": ["metric", "model", "suite", "task", "category", "prompt_style", "variant", "variant_b", "bin"],
    "computed_regression": ["suite", "model", "task", "fit", "term", "status"],
}
# Differ between any two computations by design.
OWN = {"computation_id", "computed_at", "inputs_sha256"}
# The columns of computed_bootstrap that depend on the draws.
DRAWN = ("ci_lo", "ci_hi", "n_valid_resamples")


def latest_two(con) -> list[str]:
    rows = con.sql("""SELECT computation_id FROM raw_computed_bootstrap WHERE scope = 'all'
                      GROUP BY computation_id ORDER BY max(computed_at) DESC LIMIT 2""").fetchall()
    return [r[0] for r in reversed(rows)]


def compare(con, table: str, a: str, b: str, rtol: float, atol: float, z: float | None = None) -> bool:
    """Print the differences of ``table`` between computations ``a`` and ``b``; True when equal
    (the drawn columns within ``z`` Monte Carlo standard errors when ``z`` is given)."""
    frames = [con.sql(f"SELECT * FROM raw_{table} WHERE computation_id = ?", params=[c]).pl().drop(OWN, strict=False)
              for c in (a, b)]
    keys = KEYS[table]
    left, right = (f.sort(keys, nulls_last=True) for f in frames)
    ok = left.height == right.height and left.select(keys).equals(right.select(keys))
    print(f"{table}: {left.height} rows vs {right.height}; keys {'equal' if ok else 'DIFFER'}")
    if not ok:
        return False
    monte_carlo = z is not None and table == "computed_bootstrap"
    for col in left.columns:
        x, y = left[col], right[col]
        if monte_carlo and col in DRAWN:
            ok = _within_monte_carlo(left, right, col, z) and ok
        elif x.dtype.is_float():
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


def _within_monte_carlo(left: pl.DataFrame, right: pl.DataFrame, col: str, z: float) -> bool:
    """Print how ``col`` (one of DRAWN) differs against its Monte Carlo tolerance (the module's
    docstring); True when every row is within it and the nulls are the same."""
    x, y = left[col].to_numpy().astype(float), right[col].to_numpy().astype(float)
    r = left["resamples"].to_numpy().astype(float)
    if col == "n_valid_resamples":
        q = np.clip(y / r, 0.0, 1.0)
        tol = z * np.sqrt(2 * r * q * (1 - q)) + 1
    else:
        width = np.fmax((left["ci_hi"] - left["ci_lo"]).to_numpy().astype(float),
                        (right["ci_hi"] - right["ci_lo"]).to_numpy().astype(float))
        tol = 1e-12 + z * np.sqrt(2) * 0.68 * np.nan_to_num(width) / np.sqrt(r)
    nulls_equal = bool(np.array_equal(np.isnan(x), np.isnan(y)))
    diff = np.abs(x - y)
    beyond = np.nan_to_num(diff - tol, nan=0.0) > 0
    print(f"  {col} (Monte Carlo, z {z}): max |diff| {np.nanmax(diff) if diff.size else 0.0}, "
          f"max |diff| / tolerance {np.nanmax(diff / tol) if diff.size else 0.0:.3f}, beyond {int(beyond.sum())}, "
          f"nulls {'equal' if nulls_equal else 'DIFFER'}")
    for i in np.flatnonzero(beyond)[:10]:
        print(f"    {left.row(i, named=True)['metric']} {left.select(KEYS['computed_bootstrap']).row(i)}: "
              f"{x[i]} vs {y[i]} (tolerance {tol[i]:.4g})")
    return nulls_equal and not beyond.any()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("ids", nargs="*", help="two computation ids (default: the two latest)")
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--atol", type=float, default=1e-9)
    parser.add_argument("--monte-carlo", type=float, metavar="Z", default=None,
                        help="compare the bootstrap intervals within Z Monte Carlo standard errors")
    args = parser.parse_args()
    con = Lake.of(load_config(args.config, suites=False)).connect("raw_computed_bootstrap raw_computed_regression")
    a, b = args.ids or latest_two(con)
    print(f"A {a}\nB {b}\nrtol {args.rtol}, atol {args.atol}, Monte Carlo z {args.monte_carlo}")
    ok = all([compare(con, table, a, b, args.rtol, args.atol, args.monte_carlo) for table in KEYS])
    print("SAME" if ok else "DIFFERENT")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
