"""``invarbench check`` (issue #30, "Damage is contained"): a lake a real sweep wrote (a fake
OpenAI-compatible server, two samples per item, a chained task) checks clean, and so does one that
imported Inspect AI logs and lm-evaluation-harness samples; each way the world damages a lake is
named by its check, with exit code 1; a run left ``running`` by a dead process is only a warning.

Each damage test copies the swept warehouse and damages the copy the way it happens: a response
row written twice, a response whose request was never recorded, a request row edited after it was
written, a data file overwritten or cut short. The CLI runs in-process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TEST_CLAIM_SETTLE_S, run_cli, write_config
from fakes import FakeServer
from interop_helpers import FIXTURES, exported, invoke

from tasks.check import CHECKS, data_files
from tasks.lake.lake import Lake
from tasks.lake.materialised import is_current
from tasks.lake.writes import write_rows
from tasks.runs.lifecycle import this_host

CHECK_NAMES = [c.name for c in CHECKS]


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """A warehouse written by one sweep: closure items sampled twice, and associativity (three
    chained calls per trial) on a fake server."""
    tmp = tmp_path_factory.mktemp("swept")
    with FakeServer() as server:
        cfg = write_config(tmp / "invarbench.toml", {
            "warehouse": {"path": str(tmp / "wh")},
            "sweep": {"models": ["fake"], "samples": 2, "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S},
            "models.fake": {"model": "openai/fake-model", "api_base": server.api_base, "retries": 1},
            "suites.symmetry": {"preset": "smoke", "tasks": ["closure", "associativity"]},
        })
        result = run_cli("sweep", "--config", str(cfg))
        assert result.returncode == 0, result.stderr
    return tmp / "wh"


def copy_of(swept: Path, tmp_path: Path) -> tuple[Path, Lake]:
    """A copy of the swept warehouse, its configuration and its (writable) lake."""
    shutil.copytree(swept / "lake", tmp_path / "wh" / "lake")
    cfg = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    return cfg, Lake(str(tmp_path / "wh" / "lake"))


def lake_bytes(lake: Path) -> dict[Path, bytes]:
    """Every file of a local lake and its bytes, but the SQLite catalog's shared-memory index and
    write-ahead log, which SQLite itself creates for any reader of a WAL database."""
    return {p: p.read_bytes() for p in lake.rglob("*") if p.is_file() and not p.name.endswith(("-shm", "-wal"))}


def check(cfg: Path, *args: str) -> tuple[int, dict]:
    """Exit code of ``invarbench check --json`` and its report, the findings by check name."""
    result = run_cli("check", "--json", "--config", str(cfg), *args)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    return result.returncode, {f["check"]: f for f in report["checks"]} | {"summary": report["summary"]}


def found(findings: dict) -> dict[str, int | str]:
    """The checks that found something: their count, or ``could not run``."""
    return {name: "could not run" if findings[name]["error"] else findings[name]["count"]
            for name in CHECK_NAMES if findings[name]["error"] or findings[name]["count"]}


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_swept_lake_checks_clean_and_check_writes_nothing(swept, tmp_path):
    cfg, lake = copy_of(swept, tmp_path)
    samples = lake.read("SELECT count(*) AS n FROM requests WHERE sample_idx = 1 AND step_index > 0")
    assert samples[0]["n"] > 0  # second samples of chained trials: several answers that are no duplicates
    before = lake_bytes(tmp_path / "wh" / "lake")
    result = run_cli("check", "--config", str(cfg))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the lake is clean: 11 checks, nothing found" in " ".join(result.stdout.split())
    for name in CHECK_NAMES:  # the table names every check
        assert name in result.stdout
    assert lake_bytes(tmp_path / "wh" / "lake") == before
    code, findings = check(cfg)
    assert code == 0 and found(findings) == {}


def test_a_materialised_table_that_differs_from_its_definition_is_named(swept, tmp_path):
    """A stored row of a materialised view lost (as a refresh with a bug, or a hand, would leave
    it): the table is still current (no source of it changed), so the views read it and answer
    without the row; check names the view."""
    cfg, lake = copy_of(swept, tmp_path)
    with lake.connect("") as con:
        assert is_current(con)  # a sweep ends with a refresh
        [(trial,)] = con.execute("SELECT min(trial_id) FROM lake.main.trial_scores").fetchall()
        con.execute("DELETE FROM lake.main.trial_scores WHERE trial_id = ?", [trial])
        assert is_current(con)
    code, findings = check(cfg)
    assert code == 1 and set(found(findings)) == {"materialised_differs"}, found(findings)
    assert {"view": "trial_scores", "rows": 1, "problem": "derived from the raw lake, not stored"} in \
        findings["materialised_differs"]["examples"]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_response_row_written_twice_is_a_request_answered_twice(swept, tmp_path):
    cfg, lake = copy_of(swept, tmp_path)
    [row] = lake.read("SELECT * FROM raw_responses WHERE status = 'ok' ORDER BY response_id LIMIT 1")
    write_rows(lake, "responses", [row])
    code, findings = check(cfg)
    assert code == 1 and found(findings) == {"answered_twice": 1}
    assert findings["answered_twice"]["examples"] == [
        {"request_id": row["request_id"], "ok_rows": 2, "responses": 1, "runs": row["run_id"]}]
    assert "damage: answered_twice (1)" in findings["summary"]


def test_a_second_answer_to_an_answered_request_is_a_request_answered_twice(swept, tmp_path):
    cfg, lake = copy_of(swept, tmp_path)
    [row] = lake.read("SELECT * FROM raw_responses WHERE status = 'ok' ORDER BY response_id LIMIT 1")
    write_rows(lake, "responses", [{**row, "response_id": "paid-again", "run_id": "another-run"}])
    code, findings = check(cfg)
    assert code == 1 and found(findings) == {"answered_twice": 1}
    assert findings["answered_twice"]["examples"][0]["responses"] == 2


def test_a_response_whose_request_is_missing_is_named(swept, tmp_path):
    cfg, lake = copy_of(swept, tmp_path)
    [row] = lake.read("SELECT * FROM raw_responses ORDER BY response_id LIMIT 1")
    write_rows(lake, "responses", [{**row, "response_id": "orphan", "request_id": "f" * 64}])
    code, findings = check(cfg)
    assert code == 1 and found(findings) == {"response_without_request": 1}
    assert findings["response_without_request"]["examples"][0]["response_id"] == "orphan"


def test_a_request_edited_after_it_was_written_no_longer_matches_its_id(swept, tmp_path):
    cfg, lake = copy_of(swept, tmp_path)
    [row] = lake.read("SELECT * FROM raw_requests ORDER BY request_id LIMIT 1")
    messages = json.loads(row["messages"])
    messages[-1]["content"] += " (edited)"
    write_rows(lake, "requests", [{**row, "run_id": "a-later-run", "messages": json.dumps(messages)}])
    code, findings = check(cfg, "--examples", "1")
    assert code == 1 and found(findings) == {"request_id_mismatch": 1}
    [example] = findings["request_id_mismatch"]["examples"]
    assert example["request_id"] == row["request_id"] and example["content_hash"] != row["request_id"]


def test_an_item_edited_after_it_was_written_no_longer_matches_its_id(swept, tmp_path):
    cfg, lake = copy_of(swept, tmp_path)
    [row] = lake.read("SELECT * FROM raw_items ORDER BY item_id LIMIT 1")
    write_rows(lake, "items", [{**row, "gold": row["gold"] + "1"}])
    code, findings = check(cfg)
    assert code == 1 and found(findings) == {"item_id_mismatch": 1}
    assert findings["item_id_mismatch"]["examples"][0]["item_id"] == row["item_id"]


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_an_unreadable_data_file_is_named_and_the_checks_it_stops_say_so(swept, tmp_path, damage):
    cfg, lake = copy_of(swept, tmp_path)
    [target] = [Path(p) for p in data_files(lake) if "/main/responses/" in p][:1]
    data = target.read_bytes()
    target.write_bytes(b"not parquet at all " * 64 if damage == "garbage" else data[: len(data) // 2])
    code, findings = check(cfg)
    assert code == 1
    assert findings["unreadable_files"]["count"] == 1
    assert findings["unreadable_files"]["examples"][0]["file"] == str(target)
    # the checks that read responses cannot: damage too, never a silent pass
    assert found(findings)["answered_twice"] == "could not run"
    assert found(findings)["response_without_request"] == "could not run"
    assert "unreadable_files (1)" in findings["summary"]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_imported_inspect_logs_and_lm_eval_samples_check_clean(tmp_path):
    config = exported(tmp_path)
    for source, fmt in ((FIXTURES / "inspect", "inspect"), (FIXTURES / "lm_eval", "lm-eval")):
        result = invoke("import-responses", source, "--format", fmt, "-c", config)
        assert result.exit_code == 0, result.output
    lake = Lake(str(tmp_path / "ware house" / "lake"))
    assert {r["provider"] for r in lake.read("SELECT DISTINCT provider FROM requests")} == {"inspect", "lm-eval"}
    code, findings = check(config)
    assert code == 0 and found(findings) == {}


def test_a_run_left_running_by_a_dead_process_is_a_warning_not_damage(swept, tmp_path):
    cfg, lake = copy_of(swept, tmp_path)
    [run] = lake.read("SELECT * FROM raw_runs WHERE status = 'completed'")
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(ended.stdout)
    write_rows(lake, "runs", [{**run, "run_id": "killed-run", "status": "running", "host": this_host(), "pid": pid}])
    code, findings = check(cfg)
    assert code == 0 and found(findings) == {"dead_running_run": 1}
    assert findings["dead_running_run"]["severity"] == "warning"
    assert findings["dead_running_run"]["examples"][0]["run_id"] == "killed-run"
    assert "no damage; warnings: dead_running_run (1)" in findings["summary"]


def test_a_warehouse_with_no_lake_is_a_configuration_error(tmp_path):
    cfg = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "nowhere")}})
    result = run_cli("check", "--config", str(cfg))
    assert result.returncode == 2 and "no lake at" in result.stderr
    assert not (tmp_path / "nowhere").exists()
