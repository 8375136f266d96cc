"""`invarbench import-families`: a parallel set becomes families that run and score like generated ones."""

from __future__ import annotations

import re

import pytest

from conftest import TEST_CLAIM_SETTLE_S, lake_files, run_cli, write_config
from fakes import FakeProvider, FakeServer
from flows.sweep import sweep
from tasks.lake.lake import Lake
from tasks.lake.views import query

CSV = """id,category,euclid,coord,vector,answer
p1,length,"In triangle ABC, AB = 3, BC = 4 and angle ABC = 90°. Find AC.","A = (0, 0), B = (3, 0), C = (3, 4). Find |AC|.","Vectors a = (3, 0) and b = (0, 4). Find |a + b|.",5
p2,length,"A square has side 1. Find its diagonal.","Find the distance from (0, 0) to (1, 1).","Find |u| for u = (1, 1).",sqrt(2)
"""


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_import_then_sweep_scores_like_generated_families(tmp_path):
    source = tmp_path / "set.csv"
    source.write_text(CSV, encoding="utf-8")
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    result = run_cli("import-families", str(source), "--config", str(cfg))
    assert result.returncode == 0, result.stderr
    dataset = re.search(r"as dataset (\w+)", result.stdout).group(1)
    assert "imported 2 families (6 items)" in result.stdout

    again = run_cli("import-families", str(source), "--config", str(cfg))
    assert again.returncode == 0 and dataset in again.stdout

    state = FakeProvider(responder=lambda body: "The answer is below.\nAnswer: 5")
    with FakeServer(state) as server:
        run_cfg = write_config(tmp_path / "run.toml", {
            "warehouse": {"path": str(tmp_path / "wh")},
            "sweep": {"models": ["fake"], "datasets": [dataset], "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S},
            'models."fake"': {"model": "openai/fake", "api_base": server.api_base, "retries": 0},
            "suites": {},
        })
        summary = sweep(str(run_cfg))
    assert summary["items"] == 6 and len(state.seen) == 6
    con = Lake(str(tmp_path / "wh" / "lake")).connect()
    try:
        rows = query(con, """SELECT json_extract_string(params, '$.source_id') AS source, variant, status
                             FROM trial_scores ORDER BY source, variant""")
        n_items = query(con, "SELECT count(*) AS n FROM raw_items")[0]["n"]
    finally:
        con.close()
    assert n_items == 6  # the second import stored nothing new
    assert rows == [{"source": "p1", "variant": v, "status": "correct"} for v in ("coord", "euclid", "vector")] + \
                   [{"source": "p2", "variant": v, "status": "wrong"} for v in ("coord", "euclid", "vector")]


def test_malformed_file_exits_2_and_stores_nothing(tmp_path):
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    bad = tmp_path / "bad.csv"
    bad.write_text(CSV.replace(",vector,", ",vectr,"), encoding="utf-8")
    result = run_cli("import-families", str(bad), "--config", str(cfg))
    assert result.returncode == 2
    assert "vector" in result.stderr and "nothing imported" in result.stderr
    unparsable = tmp_path / "unparsable.csv"
    unparsable.write_text(CSV.replace("sqrt(2)", "about two"), encoding="utf-8")
    result = run_cli("import-families", str(unparsable), "--config", str(cfg))
    assert result.returncode == 2 and "row 2" in result.stderr and "answer" in result.stderr
    assert lake_files(tmp_path / "wh") == []
