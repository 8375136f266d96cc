"""The benchmark's direct warehouse writer (bench/warehouse.py) yields a lake the views read.

The large-warehouse figures (views, rescore, report) are only meaningful if the written lake is
what the pipeline would have written: every table in the lake layout with the SCHEMAS columns,
one request, response, parse and score per trial, and parses of an older parser version so that
a rescore has everything to redo.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import warehouse  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402
from tasks.scoring.parse import parser_version  # noqa: E402


def test_written_warehouse_is_read_by_the_views(tmp_path):
    built = warehouse.build(tmp_path / "wh", rows=480, rows_per_file=100)
    lake = Lake(built["lake"])
    assert built["items"] == 480 // (warehouse.MODELS * warehouse.SAMPLES)
    counts = lake.read("""SELECT (SELECT count(*) FROM items) AS items, (SELECT count(*) FROM run_requests) AS requests,
                                  (SELECT count(*) FROM ledger) AS ledger, (SELECT count(*) FROM trial_scores) AS trials,
                                  (SELECT count(*) FROM responses WHERE status = 'error') AS errors,
                                  (SELECT count(*) FROM latest_parses) AS parses""")[0]
    assert counts["items"] == built["items"]
    assert counts["requests"] == counts["ledger"] == counts["trials"] == built["rows"] == 480
    assert counts["parses"] == 480 - counts["errors"]
    # Several commits per table (rows_per_file), each a data file of the DuckLake table.
    assert lake.read("SELECT count(*) AS n FROM ducklake_list_files('lake', 'responses')")[0]["n"] > warehouse.MODELS
    # Families: symmetry placements in fours, geometry representations in threes.
    sizes = {(r["suite"], r["n"]) for r in lake.read(
        "SELECT suite, count(*) AS n FROM items GROUP BY suite, family_id")}
    assert sizes == {("symmetry", 4), ("geometry", 3), ("lissard", 1)}
    # Every stored parse is of an older version than the current parser's: a rescore redoes all.
    versions = {r["parser_version"] for r in lake.read("SELECT DISTINCT parser_version FROM latest_parses")}
    assert versions.isdisjoint({parser_version(t) for t in ("integer", "text", "math")})
    assert lake.read("SELECT count(*) AS n FROM accuracy_by_bin")[0]["n"] > 0
