"""`invarbench import-families`: a parallel set becomes families that run and score like generated ones."""

from __future__ import annotations

import re

import pytest

from conftest import TEST_CLAIM_SETTLE_S, lake_files, run_cli, write_config
from fakes import FakeProvider, FakeServer
from flows.sweep import sweep
from tasks.lake.lake import Lake
from tasks.lake.views import query
from tasks.suites.geometry.imported import ImportFamiliesError, validate_rows

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
    # written by hand: a coordinate "A(0,0)" in a cell without double quotes splits it
    unquoted = tmp_path / "unquoted.csv"
    unquoted.write_text("id,category,euclid,coord,vector,answer\ng1,长度,求AB的长。,已知A(0,0)，B(3,3)，求|AB|。,"
                        "已知向量a=(3,3)，求|a|。,3√2\n", encoding="utf-8")
    result = run_cli("import-families", str(unquoted), "--config", str(cfg))
    assert result.returncode == 2, result.stderr
    assert "line 2: 9 fields, the header has 6" in result.stderr and "double quotes" in result.stderr
    assert result.stderr.count("unquoted.csv") == 1, result.stderr  # the file named once
    assert lake_files(tmp_path / "wh") == []


def test_a_set_written_in_chinese_imports_like_its_english_twin():
    """The paper's language: Chinese category names (with a full-width slash), full-width digits in
    the answer; a missing form is still a problem named by row and column."""
    texts = {"euclid": "正方形ABCD的边长为２，求其面积。", "coord": "A(0,0)，C(2,2)，求正方形面积。",
             "vector": "AB=(2,0)，AD=(0,2)，求面积。"}
    rows = [{"ID ": "z1", "Category": "面积／体积", **texts, "answer": "４"},
            {"ID ": "z2", "Category": "长度", **texts, "answer": "２√２"},
            {"ID ": "z3", "Category": "角度 / 方向", **texts, "answer": "６０°"},
            {"ID ": "z4", "Category": "比值", **texts, "answer": "１/２"}]
    problems = validate_rows(rows)
    assert [(p.category, p.gold) for p in problems] == [("area", "4"), ("length", "2*sqrt(2)"), ("angle", "60"),
                                                       ("ratio", "1/2")]
    with pytest.raises(ImportFamiliesError, match=r"row 1 \(id 'z1'\), column 'vector': empty"):
        validate_rows([{**rows[0], "vector": " "}])
