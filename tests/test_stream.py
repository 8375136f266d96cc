"""A sweep is one stream: several models called at once against loopback servers of their own.

What each server records (arrival times, requests in flight) shows the ordering and the overlap;
nothing here measures wall time. Prefect, DuckDB and Parquet are real; only the providers are fakes.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import asdict

import pytest
from conftest import (
    TEST_CLAIM_SETTLE_S,
    fake_model_config,
    process_env,
    sigkill_sweep_when,
    write_config,
)
from fakes import FakeProvider, FakeServer
from lake_fixtures import spooled_ok

from flows.sweep import sweep
from tasks.config import load_config
from tasks.items.generate import generate_task, item_row
from tasks.lake.lake import Lake
from tasks.models.call import trial_id
from tasks.models.cost import BudgetExceeded
from tasks.models.routes import route_for
from tasks.models.stream import run_calls


def two_model_config(tmp_path, models: dict[str, dict], n_max: int, sweep_extra: dict | None = None):
    """Closure items (n = 5, 10, ..., n_max) on every model of ``models`` (name → model entry)."""
    sections = {
        "warehouse": {"path": str(tmp_path / "wh")},
        "sweep": {"models": list(models), "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S,
                  **(sweep_extra or {})},
        "suites.symmetry": {"tasks": ["closure"]},
        "suites.symmetry.params.closure": {"n_min": 5, "n_max": n_max, "n_step": 5, "groups": ["integers"],
                                           "prompt_styles": ["direct"]},
    }
    for name, entry in models.items():
        sections[f'models."{name}"'] = {"model": "openai/fake-model", "retries": 1, "backoff_s": 0.05,
                                         "timeout_s": 10.0, **entry}
    return write_config(tmp_path / "invarbench.toml", sections)


def lake_query(tmp_path, sql, params=None):
    return Lake(str(tmp_path / "wh" / "lake")).read(sql, params)


def per_model(tmp_path, sql):
    return {r["model"]: r["n"] for r in lake_query(tmp_path, sql)}


@pytest.mark.slow  # a model whose answers take a second, in real time
def test_a_slow_model_does_not_hold_back_a_fast_one(tmp_path):
    """Batches of 2 items, concurrency 4: the fast model has 4 requests in flight (so several
    batches at once: no drain at batch boundaries), runs beside the slow one and ends first. Its
    1 s per answer leaves the next batches time to record and claim their requests (a few
    DuckLake commits, seconds on a loaded machine) while the calls of one are in flight; the slow
    model's 3 s per answer (18 s in all) leave the fast one's 12 far behind however loaded the
    machine (at 1.2 s the slow model finished first at a load of 35)."""
    fast, slow = FakeProvider(delay_s=1.0), FakeProvider(delay_s=3.0)
    with FakeServer(fast) as f, FakeServer(slow) as s:
        cfg = two_model_config(tmp_path, {"slow": {"api_base": s.api_base, "concurrency": 2},
                                          "fast": {"api_base": f.api_base, "concurrency": 4}},
                               n_max=60, sweep_extra={"batch_size": 2, "claim_settle_s": 0.2})
        summary = sweep(str(cfg))
    assert summary["requests"] == 24 and summary["sent"] == 24 and summary["errors"] == 0
    assert len(fast.seen) == len(slow.seen) == 12
    assert fast.max_in_flight == 4, "the fast model's slots stay full across batches of 2"
    assert slow.max_in_flight == 2
    fast_times, slow_times = [x.at for x in fast.seen], [x.at for x in slow.seen]
    # Listed first, the slow model still started before the fast one had finished...
    assert min(slow_times) < max(fast_times)
    # ...and the fast one was done while the slow one still had a third of its requests to send.
    assert sum(t > max(fast_times) for t in slow_times) >= 4
    assert {m["model"] for m in summary["models"]} == {"slow", "fast"}
    assert per_model(tmp_path, "SELECT model, count(*) AS n FROM latest_scores WHERE status = 'correct' GROUP BY model") == {
        "slow": 12, "fast": 12}
    dup = lake_query(tmp_path, "SELECT request_id FROM responses GROUP BY request_id HAVING count(*) > 1")
    assert dup == []
    # Stages overlap: the first batches were scored while the slow model's calls went on.
    [overlap] = lake_query(tmp_path, """
        SELECT (SELECT min(created_at) FROM raw_scores)
             < (SELECT max(created_at) FROM responses WHERE model = 'slow') AS scored_while_calling""")
    assert overlap["scored_while_calling"]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_models_budget_stops_its_calls_while_the_others_go_on(tmp_path):
    """$1 per completion token, 5 tokens per answer, max_tokens 8: a $30 cap on one model lets 5
    of its answers through; the other model, slower and uncapped, answers all 12. Its 0.5 s per
    answer (3 s in all at concurrency 2) leaves the capped model's five quick answers far behind,
    however loaded the machine, so what is counted after them is the uncapped model going on."""
    priced = {"input_cost_per_mtok": 0.0, "output_cost_per_mtok": 1e6, "max_tokens": 8}
    capped, free = FakeProvider(), FakeProvider(delay_s=0.5)
    with FakeServer(capped) as c, FakeServer(free) as f:
        cfg = two_model_config(tmp_path, {
            "capped": {"api_base": c.api_base, "concurrency": 1, "max_cost_usd": 30.0, **priced},
            "free": {"api_base": f.api_base, "concurrency": 2}}, n_max=60)
        with pytest.raises(BudgetExceeded, match="models.capped.max_cost_usd = 30 USD"):
            sweep(str(cfg))
    assert len(capped.seen) == 5 and len(free.seen) == 12
    assert sum(x.at > max(y.at for y in capped.seen) for x in free.seen) >= 3, "the free model went on"
    [run] = lake_query(tmp_path, "SELECT status, message FROM runs")
    assert run["status"] == "failed" and "models.capped.max_cost_usd" in run["message"]
    # What both models answered was parsed and scored before the run ended.
    assert per_model(tmp_path, "SELECT model, count(*) AS n FROM latest_scores WHERE status = 'correct' GROUP BY model") == {
        "capped": 5, "free": 12}


@pytest.mark.slow  # a sweep in a process of its own
def test_resume_after_a_kill_in_the_middle_of_a_multi_model_stream(tmp_path):
    """SIGKILL while two models are both being called; the rerun sends exactly what has no ok
    response, and every request ends with one ok response."""
    a, b = FakeProvider(delay_s=0.3), FakeProvider(delay_s=0.5)
    with FakeServer(a) as sa, FakeServer(b) as sb:
        models = {"a": {"api_base": sa.api_base, "concurrency": 1}, "b": {"api_base": sb.api_base, "concurrency": 1}}
        # The users' one-second claim pause paces the killed sweep, so that the kill lands mid-stream
        # even when the machine is loaded; the sweep that resumes needs no pacing. Answers are
        # written to the lake each second, so that the kill finds some there and some in the spool.
        cfg = two_model_config(tmp_path, models, n_max=100,
                               sweep_extra={"batch_size": 4, "claim_settle_s": 1.0, "flush_s": 1.0})

        def both_answered() -> bool:
            stored = (tmp_path / "wh" / "lake" / "catalog.sqlite").exists() and lake_query(
                tmp_path, "SELECT count(DISTINCT model) AS n FROM responses")[0]["n"] == 2
            return stored and len(a.seen) >= 6 and len(b.seen) >= 4

        sigkill_sweep_when(cfg, process_env(), both_answered, "the two models were not answered in time")
        assert len(a.seen) < 20 and len(b.seen) < 20, "the kill came after a model was done"
        stored = per_model(tmp_path, "SELECT model, count(*) AS n FROM responses WHERE status = 'ok' GROUP BY model")
        assert stored["a"] >= 1 and stored["b"] >= 1
        # answers received but not yet in a file are in the spool: the rerun stores them, not sends them
        stored = Counter(stored) + spooled_ok(Lake(str(tmp_path / "wh" / "lake")))

        a.delay_s = b.delay_s = 0.0
        two_model_config(tmp_path, models, n_max=100, sweep_extra={"batch_size": 4})

        summary = sweep(str(cfg))
    assert summary["requests"] == 40
    assert summary["cached"] == sum(stored.values()) and summary["sent"] == 40 - sum(stored.values())
    assert len(set(a.contents())) == len(set(b.contents())) == 20
    dup = lake_query(tmp_path, "SELECT request_id FROM responses WHERE status = 'ok' GROUP BY request_id HAVING count(*) > 1")
    assert dup == []
    missing = lake_query(tmp_path, """
        SELECT count(*) AS n FROM (SELECT DISTINCT request_id FROM run_requests) r
        ANTI JOIN (SELECT request_id FROM ledger WHERE status = 'ok') l USING (request_id)""")
    assert missing == [{"n": 0}]
    assert per_model(tmp_path, "SELECT model, count(*) AS n FROM latest_scores WHERE status = 'correct' GROUP BY model") == {
        "a": 20, "b": 20}


def test_each_recorded_request_carries_its_trial_s_content_id(tmp_path):
    """A trial's id hashes its item, route, sampling and sample_idx (tasks.models.call.trial_id); the
    stream works out the route's part once per chunk, and every request it records must still
    carry the id of its own item and sample."""
    with FakeServer(FakeProvider()) as fake:
        cfg = load_config(fake_model_config(tmp_path, fake.api_base, n_max=10))
        dataset, items = generate_task("symmetry", "closure", cfg.task_params("symmetry", "closure"), 0)
        rows = [item_row(i, dataset) for i in items]
        run_calls(rows, "fake", cfg.model("fake"), "r1", Lake.of(cfg), samples=2, sweep=cfg.sweep)
    model = cfg.model("fake")
    route, sampling = asdict(route_for(model)), model.sampling()
    want = sorted((r["item_id"], s, trial_id(r["item_id"], route, sampling, s)) for r in rows for s in range(2))
    got = sorted((r["item_id"], r["sample_idx"], r["trial_id"]) for r in lake_query(
        tmp_path, "SELECT item_id, sample_idx, trial_id FROM run_requests WHERE run_id = 'r1'"))
    assert len(rows) > 1 and got == want


def test_consecutive_chunks_are_recorded_looked_up_and_claimed_as_a_group(tmp_path, monkeypatch):
    """A stream takes consecutive chunks together, up to GROUP_TRIALS trials a group: one commit of
    requests, one ledger look-up and one claiming round per group, not per chunk (those reads cost
    per query). Every chunk is still reported done once its answers are in the lake, every request
    is sent once, and a chunk larger than a group is a group of its own."""
    from tasks.models import stream as stream_module
    from tasks.models.cost import Budget

    monkeypatch.setattr(stream_module, "GROUP_TRIALS", 4)
    looked_up, real = [], stream_module.lookup_ledger
    monkeypatch.setattr(stream_module, "lookup_ledger",
                        lambda lake, ids: (looked_up.append(len(ids)) if ids else None) or real(lake, ids))
    provider = FakeProvider()
    with FakeServer(provider) as fake:
        cfg = load_config(fake_model_config(tmp_path, fake.api_base, n_max=50))
        dataset, items = generate_task("symmetry", "closure", cfg.task_params("symmetry", "closure"), 0)
        rows = [item_row(i, dataset) for i in items]
        chunks = [(0, rows[0:2]), (1, rows[2:4]), (2, rows[4:5]), (3, rows[5:10])]
        lake, done = Lake.of(cfg), []
        budget = Budget.for_run(lake, "r1", "fake", None, None)
        stream = stream_module.ModelStream("fake", cfg.model("fake"), "r1", lake, budget, cfg.sweep,
                                           on_chunk=done.append)
        stats = asyncio.run(stream.run(chunks))
    assert len(rows) == 10 and stats.sent == 10 and stats.errors == 0
    assert sorted(looked_up) == [1, 4, 5], "chunks 0-1, 2 and 3 (5 items): one look-up each"
    assert sorted(done) == [0, 1, 2, 3]
    assert len(provider.contents()) == len(set(provider.contents())) == 10
    assert lake_query(tmp_path, "SELECT count(*) AS n, count(DISTINCT request_id) AS d FROM claims") == [{"n": 10, "d": 10}]
