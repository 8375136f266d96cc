"""Cost per response and run, and the budget that stops a sweep, against a fake provider on loopback."""

from __future__ import annotations

import json

import pytest

from conftest import fake_model_config, run_cli
from fakes import FakeServer
from flows.sweep import sweep
from tasks.config import load_config
from tasks.errors import ConfigError
from tasks.lake.lake import Lake
from tasks.models.config import ModelConfig
from tasks.models.cost import Budget, _Cap, response_cost
from tasks.models.pricing import price
from tasks.report.data import load
from tasks.report.html import cost_section

# The fake provider reports 10 prompt and 5 completion tokens for every answer.
P_TOK, C_TOK = 10, 5


def lake_query(tmp_path, sql, params=None):
    return Lake(str(tmp_path / "wh" / "lake")).read(sql, params)


def test_prices_come_from_config_then_litellm_table_else_unknown():
    table = price(ModelConfig(model="openai/gpt-4o-mini"))
    assert table.source == "litellm" and table.input_per_token > 0 and table.output_per_token > table.input_per_token
    batch = price(ModelConfig(model="openai/gpt-4o-mini"), batch=True)
    assert batch.input_per_token < table.input_per_token  # the table's batch price is lower
    configured = price(ModelConfig(model="openai/gpt-4o-mini", input_cost_per_mtok=2.0, output_cost_per_mtok=8.0))
    assert (configured.input_per_token, configured.output_per_token, configured.source) == (2e-6, 8e-6, "config")
    assert price(ModelConfig(model="openai/no-such-model-anywhere")) is None
    assert price(ModelConfig(model="local/smollm2")).source == "embedded"
    assert response_cost(None, 10, 5) is None and response_cost(table, None, 5) is None
    with pytest.raises(ValueError, match="set both or neither"):
        ModelConfig(model="openai/x", input_cost_per_mtok=1.0)


def test_budget_counts_in_flight_estimates():
    assert Budget().reserve(1e9)  # no caps: anything goes
    capped = Budget([_Cap("sweep.max_cost_usd", 10.0, 2.0), _Cap("models.m.max_cost_usd", 100.0, 0.0)])
    assert capped.reserve(4.0) and capped.reserve(4.0)  # 2 spent + 8 in flight = 10
    assert not capped.reserve(0.5) and "sweep.max_cost_usd = 10" in capped.stopped
    capped.settle(4.0, 1.0)
    assert not capped.reserve(0.1), "once stopped, a budget sends nothing more"
    per_model = Budget([_Cap("models.m.max_cost_usd", 1.0, 0.0)])
    assert per_model.reserve(0.6) and not per_model.reserve(0.6) and "models.m.max_cost_usd" in per_model.stopped


def test_a_budget_needs_a_price(tmp_path):
    cfg = fake_model_config(tmp_path, "http://127.0.0.1:9/v1", sweep_extra={"max_cost_usd": 1.0})
    with pytest.raises(ConfigError, match="models.fake: a budget .* input_cost_per_mtok"):
        load_config(cfg)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_responses_carry_tokens_and_cost(tmp_path):
    with FakeServer() as server:
        known = fake_model_config(tmp_path, server.api_base, name="mini",
                                  model_extra={"model": "openai/gpt-4o-mini"})
        known_run = sweep(str(known))["run_id"]
        unknown = fake_model_config(tmp_path, server.api_base, name="fake")
        unknown_run = sweep(str(unknown))["run_id"]
        priced = fake_model_config(tmp_path, server.api_base, name="priced",
                                   model_extra={"input_cost_per_mtok": 1000.0, "output_cost_per_mtok": 3000.0,
                                                "max_tokens": 97})  # a new request hash: sent again
        priced_summary = sweep(str(priced))

    table = price(ModelConfig(model="openai/gpt-4o-mini"))
    rows = Lake(str(tmp_path / "wh" / "lake")).read("SELECT * FROM cost_by_run ORDER BY model")
    by_model = {r["model"]: r for r in rows}
    assert by_model["mini"]["run_id"] == known_run and by_model["fake"]["run_id"] == unknown_run
    assert by_model["mini"]["cost_usd"] == pytest.approx(5 * (P_TOK * table.input_per_token + C_TOK * table.output_per_token))
    assert by_model["priced"]["cost_usd"] == pytest.approx(5 * (P_TOK * 1000 + C_TOK * 3000) / 1e6)
    # Unknown price: NULL, never 0, and counted as unpriced; tokens are still recorded.
    assert by_model["fake"]["cost_usd"] is None and by_model["fake"]["n_unpriced"] == 5
    assert (by_model["fake"]["prompt_tokens"], by_model["fake"]["completion_tokens"]) == (5 * P_TOK, 5 * C_TOK)
    assert priced_summary["cost"][0]["cost_usd"] == pytest.approx(by_model["priced"]["cost_usd"])

    con = Lake(str(tmp_path / "wh" / "lake")).connect()
    try:
        section = cost_section(load(con, 0.5)["cost"])
    finally:
        con.close()
    total = by_model["mini"]["cost_usd"] + by_model["priced"]["cost_usd"]
    assert section.notes == [f"Total over 3 run(s): {total:.6f} USD; 5 response(s) without a known price."]
    assert "priced" in section.tables[0] and "mini" in section.tables[0]

    listed = run_cli("runs", "--format", "json", "--config", str(priced))
    assert listed.returncode == 0, listed.stderr
    shown = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert shown[priced_summary["run_id"]]["cost_usd"] == pytest.approx(by_model["priced"]["cost_usd"])
    assert shown[unknown_run]["cost_usd"] is None and "fake: 75 tokens, cost unknown" == shown[unknown_run]["cost_by_model"]
    assert shown[known_run]["prompt_tokens"] == 5 * P_TOK


def test_old_lake_files_without_cost_still_read(tmp_path):
    """Responses written before cost_usd existed (an old lake, imported on first use) read as NULL
    cost (unknown), not as an error."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tasks.lake.schemas import SCHEMAS

    lake = tmp_path / "lake"
    old = pa.schema([f for f in SCHEMAS["responses"] if f.name != "cost_usd"])
    for table in ("responses",):
        folder = lake / table / "day=1970-01-01"
        folder.mkdir(parents=True)
        pq.write_table(old.empty_table(), folder / "merged-schema.parquet")  # every old table folder held one
        row = {n: None for n in old.names} | {"response_id": "r1", "request_id": "q1", "run_id": "old", "model": "m",
                                               "status": "ok", "prompt_tokens": 3, "completion_tokens": 4,
                                               "created_at": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)}
        (lake / table / "day=2024-01-01").mkdir()
        pq.write_table(pa.Table.from_pylist([row], schema=old), lake / table / "day=2024-01-01" / "part-old.parquet")
    Lake(str(lake)).ensure()
    [row] = Lake(str(lake)).read("SELECT * FROM cost_by_run")
    assert (row["run_id"], row["prompt_tokens"], row["cost_usd"], row["n_unpriced"]) == ("old", 3, None, 1)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_budget_stops_the_sweep_and_a_higher_one_resumes(tmp_path):
    """$1 per completion token, 5 tokens per answer, max_tokens 8: a $30 budget allows 5 answers
    (25 spent, the sixth would reach 25 + 8 > 30); the run fails saying so; a $1000 sweep sends the rest once."""
    with FakeServer() as server:
        model = {"input_cost_per_mtok": 0.0, "output_cost_per_mtok": 1e6, "max_tokens": 8, "concurrency": 1}
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra=model,
                                sweep_extra={"max_cost_usd": 30.0})
        first = run_cli("sweep", "--config", str(cfg))
        assert first.returncode == 1, first.stdout + first.stderr
        assert "the budget sweep.max_cost_usd = 30 USD stopped the sweep" in " ".join(first.stderr.split())
        assert len(server.state.seen) == 5
        [run] = lake_query(tmp_path, "SELECT * FROM runs")
        assert run["status"] == "failed" and "budget sweep.max_cost_usd = 30 USD" in run["message"]
        assert lake_query(tmp_path, "SELECT count(*) AS n, sum(cost_usd) AS usd FROM responses WHERE status = 'ok'") == [
            {"n": 5, "usd": 25.0}]
        # The answered ones were parsed and scored before the run ended.
        assert lake_query(tmp_path, "SELECT count(*) AS n FROM latest_scores WHERE status = 'correct'") == [{"n": 5}]

        raised = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra=model,
                                   sweep_extra={"max_cost_usd": 1000.0})
        second = run_cli("sweep", "--config", str(raised))
        assert second.returncode == 0, second.stderr
    contents = server.state.contents()
    assert len(contents) == 10 == len(set(contents)), "each request sent exactly once over both sweeps"
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM ledger WHERE status = 'ok'") == [{"n": 10}]
