"""A sweep of known work (flows/known_sweep.py): recorded from an earlier completed run of the same
plan (tasks/runs/plan.py) when the ledger answers every request of it as that run saw it, with the
rows the ordinary path stores; anything else takes the ordinary path.

Real sweeps against the fake OpenAI-compatible server on loopback (tests/fakes.py), real lakes.
"""

from __future__ import annotations

import re
import shutil

import pytest
from conftest import REPO, TEST_CLAIM_SETTLE_S, run_cli, write_config
from fakes import FakeProvider, FakeServer, count_ones_responder, last_user

from flows.known_sweep import known_template, record_known_sweep
from flows.sweep import sweep
from tasks.config import load_config
from tasks.lake.lake import Lake
from tasks.runs.plan import code_digest, find_template, plan_key

# Whole sweeps end to end (seconds of CPU each): make test-fast leaves them out.
pytestmark = pytest.mark.slow


def config(tmp_path, api_base, tasks=("closure", "associativity"), n_max=15):
    """Closure items (one request a trial) and associativity chains (three steps) on one model."""
    return write_config(tmp_path / f"{'-'.join(tasks)}.toml", {
        "warehouse": {"path": str(tmp_path / "wh")},
        "sweep": {"models": ["fake"], "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S, "batch_size": 2},
        'models."fake"': {"model": "openai/fake-model", "api_base": api_base, "retries": 0},
        "suites.symmetry": {"tasks": list(tasks)},
        "suites.symmetry.params.closure": {"n_min": 5, "n_max": n_max, "n_step": 5, "groups": ["integers"],
                                           "prompt_styles": ["direct"]},
        "suites.symmetry.params.associativity": {"n_min": 12, "n_max": 12, "groups": ["integers"],
                                                 "prompt_styles": ["direct"], "splits": ["split_3_8", "split_1_4"]},
    })


def read(tmp_path, sql, params=None):
    return Lake(str(tmp_path / "wh" / "lake")).read(sql, params)


def template_of(cfg):
    return known_template(load_config(str(cfg)))


def recorded_from_template(tmp_path, run_id):
    """Whether run ``run_id`` recorded its requests in one INSERT … SELECT (the known-work path)."""
    con = Lake(str(tmp_path / "wh" / "lake")).connect("")
    try:
        messages = [m for (m,) in con.execute(
            "SELECT commit_message FROM ducklake_snapshots('lake') "
            "WHERE json_extract_string(commit_extra_info, '$.run_id') = ?", [run_id]).fetchall()]
    finally:
        con.close()
    return "requests: rows of a query" in messages


# What a run stores, per table, without what differs between any two runs (ids, times, the process).
STORED = {
    "runs": "SELECT kind, status, config, models, n_items, n_requests, n_sent, n_cached, n_errors, report_path, "
            "message, plan_key, dropped_families FROM runs WHERE run_id = ?",
    "requests": "SELECT * EXCLUDE (run_id, created_at) FROM run_requests WHERE run_id = ? ORDER BY ALL",
    "responses": "SELECT * EXCLUDE (run_id, response_id, created_at) FROM responses WHERE run_id = ? ORDER BY ALL",
    "claims": "SELECT request_id FROM claims WHERE run_id = ? ORDER BY ALL",
    "scores": "SELECT * EXCLUDE (run_id, created_at) FROM all_scores WHERE run_id = ? ORDER BY ALL",
    "headline": "SELECT * EXCLUDE (run_id) FROM run_accuracy_by_bin WHERE run_id = ? ORDER BY ALL",
    "cost": "SELECT * EXCLUDE (run_id) FROM cost_by_run WHERE run_id = ? ORDER BY ALL",
    "trials": "SELECT * EXCLUDE (run_id) FROM run_trials WHERE run_id = ? ORDER BY ALL",
}
# Tables no run names in a column: their rows counted, before and after each run.
COUNTED = ("items", "dataset_items", "parses", "responses", "batch_jobs")


def counts(tmp_path):
    return {t: read(tmp_path, f"SELECT count(*) AS n FROM raw_{t}")[0]["n"] for t in COUNTED}


def test_known_sweep_stores_what_the_ordinary_path_stores(tmp_path):
    """The second `invarbench sweep` of a plan is recorded from the first run (one INSERT … SELECT of
    its requests, no item generated, no call); every table it writes, the marts, the headline and
    the summary equal those of the same cached sweep on the ordinary path (the `sweep` flow), on the
    same lake."""
    state = FakeProvider(responder=count_ones_responder)
    with FakeServer(state) as server:
        cfg = config(tmp_path, server.api_base)
        first = sweep(str(cfg))
        sent = len(state.seen)
        assert first["sent"] == sent > 0 and first["errors"] == 0
        assert template_of(cfg).run_id == first["run_id"]

        before = counts(tmp_path)
        known = run_cli("sweep", "--config", str(cfg))
        assert known.returncode == 0, known.stderr
        assert "0 sent" in known.stdout and "prefect flow run: none" in known.stdout
        after_known = counts(tmp_path)
        ordinary = sweep(str(cfg))  # the flow: items generated, trials streamed, every answer from the ledger
        after_ordinary = counts(tmp_path)
        assert len(state.seen) == sent

    runs = read(tmp_path, "SELECT run_id FROM runs WHERE status = 'completed' ORDER BY started_at, run_id")
    known_id = next(r["run_id"] for r in runs if r["run_id"] not in (first["run_id"], ordinary["run_id"]))
    assert recorded_from_template(tmp_path, known_id) and not recorded_from_template(tmp_path, ordinary["run_id"])
    for table, sql in STORED.items():
        mine, theirs = read(tmp_path, sql, [known_id]), read(tmp_path, sql, [ordinary["run_id"]])
        assert mine == theirs, table
    assert len(read(tmp_path, STORED["requests"], [known_id])) == first["requests"]
    # neither wrote an item, a response, a parse or a batch job: the first run had stored them all
    assert before == after_known == after_ordinary
    # the summary: the same but for the run, its flow run and the streams' wall times
    again = record_known_sweep(load_config(str(cfg)), template_of(cfg))

    def comparable(summary):
        return {**summary, "run_id": None, "flow_run_id": None,
                "models": [{**m, "wall_s": None} for m in summary["models"]]}

    assert comparable(again) == comparable(ordinary)


def test_another_plan_or_code_takes_the_ordinary_path(tmp_path):
    """A template is found by plan key only: another parameter, another sample count or another
    code digest (a generator's source changed by one byte) finds none."""
    with FakeServer() as server:
        cfg = config(tmp_path, server.api_base, tasks=("closure",))
        first = sweep(str(cfg))
        lake, loaded = Lake(str(tmp_path / "wh" / "lake"), read_only=True), load_config(str(cfg))
        assert find_template(lake, plan_key(loaded)).run_id == first["run_id"]
        assert template_of(config(tmp_path, server.api_base, tasks=("closure",), n_max=20)) is None
        assert known_template(loaded.model_copy(update={"sweep": loaded.sweep.model_copy(update={"samples": 2})})) is None

    copy = tmp_path / "code"
    for tree in ("tasks", "flows", "sql"):
        shutil.copytree(REPO / tree, copy / tree, ignore=shutil.ignore_patterns("__pycache__"))
    assert code_digest(copy) == code_digest(REPO)
    generator = next((copy / "tasks" / "suites" / "symmetry").glob("*.py"))
    generator.write_text(generator.read_text() + "\n", encoding="utf-8")
    other = code_digest(copy)
    assert other != code_digest(REPO)
    assert find_template(lake, plan_key(loaded, code=other)) is None


def test_an_answer_missing_from_the_ledger_takes_the_ordinary_path(tmp_path):
    """A run whose request ended in error is no template: the next sweep sends that request again."""
    failing = "What is 1+1+1+1+1+1+1+1+1+1?"  # the closure prompt of n = 10

    state = FakeProvider(fault=lambda content, attempt: "500" if failing in content else None)
    with FakeServer(state) as server:
        cfg = config(tmp_path, server.api_base, tasks=("closure",))
        first = sweep(str(cfg))
        assert first["errors"] == 1
        assert template_of(cfg) is None
        state.fault = lambda content, attempt: None
        again = run_cli("sweep", "--config", str(cfg))
        assert again.returncode == 0, again.stderr
        assert "1 sent" in again.stdout and failing in state.seen[-1].content
        assert template_of(cfg) is not None  # the run that answered it stands for the plan now


def test_a_chain_continued_by_another_plan_takes_the_ordinary_path(tmp_path):
    """A chain stopped at an error in the template, whose step another sweep (another plan) has
    answered since: the template's requests are all answered, but not as it saw them; the sweep
    takes the ordinary path, which records the chain's later steps."""
    def segment_fails(content, attempt):
        return "500" if re.search(r"What is 1(\+1){2}\?", content) else None  # split_1_4's first segment

    state = FakeProvider(responder=count_ones_responder, fault=segment_fails)
    with FakeServer(state) as server:
        both = config(tmp_path, server.api_base)
        first = sweep(str(both))
        assert first["errors"] == 1
        state.fault = lambda content, attempt: None
        sweep(str(config(tmp_path, server.api_base, tasks=("associativity",))))  # sends it, continues the chain
        assert any(re.search(r"What is 1(\+1){2}\?", last_user(s.body)) for s in state.seen[-3:])
        assert template_of(both) is None
        again = run_cli("sweep", "--config", str(both))
        assert again.returncode == 0, again.stderr
        assert "0 sent" in again.stdout
    runs = read(tmp_path, "SELECT run_id, n_requests FROM runs WHERE plan_key IS NOT NULL AND status = 'completed' "
                          "ORDER BY started_at, run_id")
    assert runs[-1]["n_requests"] == first["requests"] + 2  # the chain's two later steps, recorded now
    assert not recorded_from_template(tmp_path, runs[-1]["run_id"])
