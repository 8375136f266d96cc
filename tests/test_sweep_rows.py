"""What a sweep keeps of its item rows (issue #26, bench/results.md "Sweep memory" and
"items-compact"): Arrow tables from generation to storage, never every row as a dict; the lake
gets each new chunk's whole rows, surface features included, the rows it got when they were
dicts; the stream gets the same chunks, in the same order, cut to the columns it reads
(``tasks.models.stream.ITEM_COLUMNS``), and builds the same requests from them as from whole rows."""

from __future__ import annotations

import json
from dataclasses import asdict

import pyarrow as pa
import pytest
from conftest import fake_model_config

from flows import sweep_run
from tasks.config import load_config
from tasks.items.compact import ItemRows, consecutive_groups, items_table, unpack
from tasks.items.generate import generate_task, item_row
from tasks.items.validate import dedupe
from tasks.lake.lake import Lake
from tasks.lake.schemas import SCHEMAS
from tasks.models.call import CallStats, step_messages, trial_id
from tasks.models.config import ModelConfig
from tasks.models.routes import route_for
from tasks.models.stream import ITEM_COLUMNS
from tasks.records import Request, step_plan

CHAIN = [{"name": "first", "template": "How many? {x}", "answer_type": "integer", "system": "Count."},
         {"name": "second", "template": "Twice {first.value}?", "answer_type": "integer"}]


def lake_items(tmp_path) -> list[str]:
    return [r["item_id"] for r in Lake(str(tmp_path / "wh" / "lake")).read("SELECT item_id FROM items ORDER BY item_id")]


def requests_of(row: dict, answers: dict) -> list[Request]:
    """Every step's request of ``row``'s trial, built as the stream builds them (tasks.models.stream)."""
    route, sampling = route_for(ModelConfig(model="openai/fake-model")), {"temperature": 0}
    trial = trial_id(row["item_id"], asdict(route), sampling, 0)
    return [Request(trial_id=trial, item_id=row["item_id"], model="fake", step=step["name"], route=route,
                    messages=step_messages(row, step, answers), sampling=sampling, sample_idx=0)
            for step in step_plan(row)]


def rows_as_before(cfg) -> list[dict]:
    """The item rows a sweep stored before its rows were kept in Arrow (tasks.items.compact): each
    generated item's dict row, surface features included, deduplicated as dicts."""
    rows = []
    for suite, task in cfg.selected_tasks():
        dataset, items = generate_task(suite, task, cfg.task_params(suite, task), cfg.sweep.seed)
        rows += [item_row(item, dataset) for item in items]
    return dedupe(rows)[0]


def without_time(rows) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "created_at"} for r in rows]


def into_twos(rows: list) -> list[list]:
    return [rows[i : i + 2] for i in range(0, len(rows), 2)]


@pytest.mark.parametrize("store_rows, stores", [(10_000, [5]), (4, [4, 1])])
def test_the_lake_gets_whole_rows_and_the_stream_the_same_rows_cut(tmp_path, monkeypatch, store_rows, stores):
    """A sweep outside Prefect (its stages plain calls), in chunks of 2, the calls left out; the
    items of consecutive chunks stored together, up to STORE_ROWS rows a write."""
    monkeypatch.setattr(sweep_run, "STORE_ROWS", store_rows)
    cfg = fake_model_config(tmp_path, "http://127.0.0.1:9/v1", sweep_extra={"batch_size": 2})
    before = rows_as_before(load_config(str(cfg)))
    stored: list[list[dict]] = []
    streamed: list[list[dict]] = []
    store = sweep_run.store_items_chunks

    def store_and_keep(lake, rows, first, last):
        stored.append(without_time(rows.to_pylist()))
        return store(lake, rows, first, last)

    def models_on(lake, chunks, cfg, *rest):
        assert all(isinstance(c, ItemRows) and c.table.column_names == list(ITEM_COLUMNS) for c in chunks)
        streamed.extend(list(c) for c in chunks)
        return {m: CallStats() for m in cfg.sweep.models}

    monkeypatch.setattr(sweep_run, "store_items_chunks", store_and_keep)
    monkeypatch.setattr(sweep_run, "run_models", models_on)
    assert sweep_run.perform_sweep(str(cfg))["items"] == len(before) == 5

    chunks = into_twos(before)
    assert [len(s) for s in stored] == stores and all(r["n_tokens"] > 0 for c in stored for r in c)
    assert [r for s in stored for r in s] == without_time(before)
    assert lake_items(tmp_path) == sorted(r["item_id"] for r in before)
    assert streamed == [[{k: r[k] for k in ITEM_COLUMNS} for r in c] for c in chunks]
    assert all(set(r) == set(ITEM_COLUMNS) for c in streamed for r in c)


def test_a_sweep_holds_its_items_as_arrow_not_dicts(tmp_path):
    """Generated, then validated: every chunk a table of the lake's items schema, never a list of
    dicts (0.67 GB of them at 200,000 items, bench/results.md "items-compact"), the validated
    ones with their surface features, the rows those a sweep stored before."""
    cfg = load_config(str(fake_model_config(tmp_path, "http://127.0.0.1:9/v1", sweep_extra={"batch_size": 2})))
    collected = sweep_run.collect_items(cfg)
    assert isinstance(collected[0], pa.Table) and collected[0].schema == SCHEMAS["items"]
    n_items, new_chunks, chunks, _ = sweep_run.prepare_items(cfg, collected)
    assert n_items == 5 and sorted(new_chunks) == [0, 1, 2]
    tables = [unpack(c) for c in chunks]  # packed: pa.ipc with zstd
    assert all(isinstance(c, pa.Buffer) for c in chunks) and all(t.schema == SCHEMAS["items"] for t in tables)
    assert [without_time(t.to_pylist()) for t in tables] == [without_time(c) for c in into_twos(rows_as_before(cfg))]
    assert new_chunks == {i: chunks[i] for i in range(3)}


def test_consecutive_chunks_are_validated_together_up_to_a_number_of_rows(tmp_path, monkeypatch):
    """Great Expectations costs per validation, not per row: chunks of 2, 2 and 1 items with at
    most 4 rows a validation are checked in two validations, every item once."""
    cfg = load_config(str(fake_model_config(tmp_path, "http://127.0.0.1:9/v1", sweep_extra={"batch_size": 2})))
    validated: list[tuple[list[str], int, int]] = []
    monkeypatch.setattr(sweep_run, "VALIDATION_ROWS", 4)
    monkeypatch.setattr(sweep_run, "validate_chunks", lambda rows, first, last: validated.append(
        ([r["item_id"] for r in rows], first, last)))
    _, new_chunks, chunks, _ = sweep_run.prepare_items(cfg)
    assert [(first, last) for _, first, last in validated] == [(0, 1), (2, 2)]
    assert [i for ids, _, _ in validated for i in ids] == [i for c in chunks for i in unpack(c).column("item_id").to_pylist()]
    assert sorted(new_chunks) == [0, 1, 2]


def test_consecutive_groups_keep_order_and_limit():
    assert consecutive_groups([2, 2, 1, 5, 1], 4) == [[0, 1], [2], [3], [4]]
    assert consecutive_groups([1, 1, 1], 0) == [[0], [1], [2]]  # no limit: one each
    assert consecutive_groups([], 4) == []


def test_item_rows_read_as_the_dicts_they_hold():
    rows = [{"item_id": f"i{k}", "prompt": f"p{k}", "n_tokens": k} for k in range(2500)]
    table = items_table(rows)
    assert table.num_rows == 2500 and table.column("item_id").num_chunks == 3  # built a slice at a time
    view = ItemRows(table.select(["item_id", "n_tokens"]))
    assert len(view) == 2500 and list(view) == [{"item_id": r["item_id"], "n_tokens": r["n_tokens"]} for r in rows]
    assert view[-1] == {"item_id": "i2499", "n_tokens": 2499} and view[1:3] == list(view)[1:3]
    with pytest.raises(IndexError):
        view[2500]


def test_a_cut_row_gives_the_requests_of_the_whole_row():
    """Both solvers: a direct item's messages, a chain's steps with an earlier step's answer."""
    base = {"item_id": "i1", "suite": "s", "task": "t", "prompt": "How many? 3", "gold": "3", "answer_type": "integer",
            "family_id": "f", "params": "{}", "n_tokens": 4, "created_at": "2026-12-05T00:00:00Z"}
    direct = {**base, "solver": "generate", "steps": "[]",
              "messages": json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "3?"}])}
    chain = {**base, "item_id": "i2", "solver": "chain", "steps": json.dumps(CHAIN), "messages": "[]"}
    answers = {"first": {"value": 3, "text": "3"}}
    for row in (direct, chain):
        cut = {k: row[k] for k in ITEM_COLUMNS}  # what a sweep keeps for its calls (flows.sweep_run)
        assert requests_of(cut, answers) == requests_of(row, answers)
        assert len(cut) < len(row)
    assert [r.step for r in requests_of(chain, answers)] == ["first", "second"]


def test_validation_keeps_no_chunk_in_great_expectations_context():
    """The context lives as long as the worker process: a chunk's data source (its frame) goes with
    its validation, passed or failed (the worker's code, run here to see its context)."""
    from tasks.items import ge_worker, validate

    rows = [{**row, "key_entities": 1, "bin_lo": 1, "bin_hi": 2, "gold": "3", "answer_type": "integer",
             "variant": "x", "steps": "[]", "messages": json.dumps([{"role": "user", "content": row["prompt"]}])}
            for row in ({"item_id": f"i{k}", "suite": "s", "task": "t", "family_id": f"f{k}",
                         "prompt": f"p{k}"} for k in range(3))]
    assert ge_worker.failures(validate.expected_columns(rows, True), "kept_0", True) == []
    bad = [{**rows[0], "gold": None}, *rows[1:]]
    assert ge_worker.failures(validate.expected_columns(bad, False), "kept_1", False) != []
    assert not [name for name in ge_worker._context().data_sources.all() if name.startswith("invarbench_kept")]


def counted_generation(monkeypatch) -> list[str]:
    """The tasks whose items the sweep generates from here on, one entry per generation."""
    generated: list[str] = []
    generate = sweep_run.generate_items

    def counting(suite, task_name, *rest):
        generated.append(f"{suite}.{task_name}")
        return generate(suite, task_name, *rest)

    monkeypatch.setattr(sweep_run, "generate_items", counting)
    return generated


def stored_items(warehouse) -> list[dict]:
    return Lake(str(warehouse / "lake")).read("SELECT * EXCLUDE (created_at) FROM items ORDER BY item_id")


def test_the_flow_takes_the_items_the_cli_collected(tmp_path, monkeypatch):
    """``invarbench sweep`` collects the items to check the generators before Prefect starts; the
    ``sweep`` flow it then runs in this process takes them (flows.sweep_run.hand_over) instead of
    generating them again, and stores what a flow that collects its own items stores."""
    from typer.testing import CliRunner

    import flows.cli.sweep as sweep_cli
    from flows.cli.application import app
    from flows.sweep import sweep

    generated = counted_generation(monkeypatch)
    monkeypatch.setattr(sweep_run, "run_models", lambda lake, chunks, cfg, *rest: {m: CallStats() for m in cfg.sweep.models})
    monkeypatch.setattr(sweep_cli, "spawn_server", lambda: None)
    # the flow in this process, on the tests' Prefect server (no temporary server, no preload)
    monkeypatch.setattr(sweep_cli, "_run_sweep", lambda config, overrides, select, *rest: sweep(
        str(config), overrides, select=select))
    monkeypatch.setattr(sweep_cli, "_print_summary", lambda summary: None)
    (tmp_path / "cli").mkdir()
    result = CliRunner().invoke(app, ["sweep", "--config", str(fake_model_config(tmp_path / "cli", "http://127.0.0.1:9/v1"))])
    assert result.exit_code == 0, result.output
    assert generated == ["symmetry.closure"]  # by the CLI's check only
    assert sweep_run._HANDED == []

    (tmp_path / "flow").mkdir()  # a flow run of its own (another process's: nothing handed over)
    assert sweep(str(fake_model_config(tmp_path / "flow", "http://127.0.0.1:9/v1")))["items"] == 5
    assert generated == ["symmetry.closure"] * 2
    assert stored_items(tmp_path / "cli" / "wh") == stored_items(tmp_path / "flow" / "wh") != []


def test_items_handed_over_for_another_configuration_are_collected_again(tmp_path, monkeypatch):
    cfg = load_config(str(fake_model_config(tmp_path, "http://127.0.0.1:9/v1", sweep_extra={"batch_size": 2})))
    other = load_config(str(fake_model_config(tmp_path, "http://127.0.0.1:9/v1", sweep_extra={"seed": 1})))
    collected = sweep_run.collect_items(cfg)
    generated = counted_generation(monkeypatch)
    sweep_run.hand_over(other, collected)
    again = sweep_run.prepare_items(cfg)
    assert generated == ["symmetry.closure"] and sweep_run._HANDED == []  # collected; the hand-over dropped
    sweep_run.hand_over(cfg, collected)
    taken = sweep_run.prepare_items(cfg)
    assert generated == ["symmetry.closure"] and sweep_run._HANDED == []  # taken, once
    assert [unpack(c).drop(["created_at"]) for c in taken[2]] == [unpack(c).drop(["created_at"]) for c in again[2]]
    assert taken[0] == again[0] == 5
