"""Inspect AI both ways: ``export --format inspect`` and ``import-responses --format inspect``.

The committed logs (tests/fixtures/inspect/, see its README) were written by Inspect AI itself on an
export of :data:`interop_helpers.CONFIG`; the round trip runs Inspect here too: the ``inspect``
command of the environment that `make install` puts beside Python (``.venv/inspect``, pinned by
constraints-inspect.txt), or ``INSPECT_BIN``. The CLI runs in-process.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import REPO
from interop_helpers import ACCURACY, FIXTURES, INVARIANCE, exported, invoke, lake, plain_import_marts, run_inspect, serve
from test_offline_imports import GUARD

from tasks.interop.inspect import load_log

LOGS = FIXTURES / "inspect"
GOOD, BAD = "openai/fake-good", "openai/fake-bad"
RIGHT = "Adding them up.\nAnswer: 8"
# What an expert grader makes of fake-bad's answers, per variant and epoch (gold 8 everywhere):
# "Answer: 9" is wrong, a reply without a number has no answer.
BAD_STATUS = {("begin", 0): "wrong", ("begin", 1): "wrong", ("end", 0): "correct", ("end", 1): "correct",
              ("middle", 0): "correct", ("middle", 1): "unparsable", ("random", 0): "correct",
              ("random", 1): "unparsable"}


def _json_log_answers() -> list[dict]:
    [path] = LOGS.glob("*.json")
    log = json.loads(path.read_text(encoding="utf-8"))
    return [{"model": log["eval"]["model"], "item_id": s["metadata"]["item_id"], "sample_idx": s["epoch"] - 1,
             "text": s["output"]["completion"]} for s in log["samples"]]


def _stored(tmp_path: Path) -> list[dict]:
    return lake(tmp_path, """
        SELECT r.model, q.item_id, q.sample_idx, r.text, r.status, r.prompt_tokens, r.completion_tokens,
               r.latency_s, q.provider, i.variant, ts.status AS score
        FROM responses r JOIN run_requests q USING (request_id, run_id) JOIN items i USING (item_id)
        JOIN trial_scores ts ON ts.trial_id = q.trial_id ORDER BY ALL""")


def test_export_writes_an_inspect_dataset_and_task(tmp_path):
    config = exported(tmp_path, {"suites.symmetry": {"preset": "smoke", "tasks": ["identity", "associativity"]}})
    out = tmp_path / "inspect export"
    lines = [json.loads(x) for x in (out / "dataset.jsonl").read_text(encoding="utf-8").splitlines()]
    items = {r["item_id"]: r for r in lake(tmp_path, "SELECT * FROM items")}
    assert {i["task"] for i in items.values()} == {"identity", "associativity"}  # every selected item is stored
    assert {x["id"] for x in lines} == {k for k, i in items.items() if i["solver"] == "generate"}
    for x in lines:
        item = items[x["id"]]
        assert (x["input"], x["target"]) == (item["prompt"], item["gold"])
        assert x["metadata"] == {"suite": "symmetry", "task": "identity", "family_id": item["family_id"],
                                 "variant": item["variant"], "prompt_style": item["prompt_style"], "bin": item["bin"],
                                 "key_entities": item["key_entities"], "answer_type": "integer",
                                 "item_id": item["item_id"], "steps": []}
    task_py = (out / "task.py").read_text(encoding="utf-8")
    compile(task_py, "task.py", "exec")
    assert 'json_dataset(str(Path(__file__).parent / "dataset.jsonl"))' in task_py
    # --task narrows as sweep's does
    again = invoke("export", "--format", "inspect", "--task", "symmetry.associativity", "--out", tmp_path / "chain",
                   "-c", config)
    assert again.exit_code == 0, again.output
    assert "2 multi-call (chain) item(s) left out" in again.said
    assert (tmp_path / "chain" / "dataset.jsonl").read_text(encoding="utf-8") == ""


def test_export_drops_and_names_a_family_that_repeats_another_ones_problem(tmp_path):
    """A parallel set written elsewhere may hold one problem twice under two ids (an import keeps
    the file as it is): the export writes it once, as a sweep runs it, and says which it dropped."""
    from conftest import write_config

    geo = tmp_path / "geo sets" / "geo.csv"
    geo.parent.mkdir()
    first = '在直角三角形ABC中，∠C=90°，AC=3，BC=3，求AB的长。,"已知A(0,0)，B(3,3)，求|AB|。","已知向量a=(3,3)，求|a|。",3√2'
    geo.write_text("\ufeffID , Category ,Euclid,Coord,Vector,Answer\n"
                   f"g1,长度,{first}\n"
                   'g2,面积,正方形ABCD的边长为２，求其面积。,"已知A(0,0)，B(2,0)，C(2,2)，D(0,2)，求四边形ABCD的面积。",'
                   '"已知向量AB=(2,0)，AD=(0,2)，求以AB、AD为邻边的平行四边形面积。",４\n'
                   f"g1-copy,长度,{first}\n", encoding="utf-8")
    config = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}, "sweep": {"models": []}})
    imported = invoke("import-families", geo, "-c", config)
    assert imported.exit_code == 0, imported.output
    [dataset] = re.findall(r"as dataset (\w+)", imported.output)
    out = tmp_path / "out"
    result = invoke("export", "--format", "inspect", "--dataset", dataset, "--out", out, "-c", config)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (out / "dataset.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 6 and len({x["metadata"]["family_id"] for x in lines}) == 2
    assert len(re.findall(r"dropped family \w+ of geometry\.imported: it repeats a prompt of family", result.said)) == 1


@pytest.mark.parametrize("args, message", [
    (["--format", "csv"], "--format: unknown format 'csv'"),
    (["--format", "inspect", "--suite", "nope"], "nope"),
])
def test_export_rejects_bad_input_and_writes_nothing(tmp_path, args, message):
    from conftest import write_config

    config = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    result = invoke("export", *args, "--out", tmp_path / "out", "-c", config)
    assert result.exit_code == 2 and message in result.said
    assert not (tmp_path / "out").exists() and not (tmp_path / "wh" / "lake" / "items").exists()


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_committed_logs_import_with_models_epochs_tokens_and_the_marts_of_a_plain_import(tmp_path):
    config = exported(tmp_path)
    result = invoke("import-responses", LOGS, "--format", "inspect", "-c", config)
    assert result.exit_code == 0, result.output
    assert "finish reasons: stop 16" in result.said
    runs = lake(tmp_path, "SELECT kind, status, models, n_items, n_requests, n_errors FROM runs WHERE kind = 'import' "
                          "ORDER BY models")
    assert runs == [{"kind": "import", "status": "completed", "models": json.dumps([m]), "n_items": 4,
                     "n_requests": 8, "n_errors": 0} for m in (BAD, GOOD)]

    stored = _stored(tmp_path)
    assert len(stored) == 16 and {r["provider"] for r in stored} == {"inspect"}
    assert {(r["status"], r["prompt_tokens"], r["completion_tokens"]) for r in stored} == {("ok", 10, 5)}
    assert all(r["latency_s"] > 0 for r in stored)
    good = [r for r in stored if r["model"] == GOOD]
    assert {r["text"] for r in good} == {RIGHT} and {r["score"] for r in good} == {"correct"}
    assert sorted((r["item_id"], r["sample_idx"]) for r in good) == sorted(
        (i["item_id"], e) for i in lake(tmp_path, "SELECT item_id FROM items") for e in (0, 1))
    answers = _json_log_answers()
    bad = {(r["item_id"], r["sample_idx"]): r for r in stored if r["model"] == BAD}
    assert {k: r["text"] for k, r in bad.items()} == {(a["item_id"], a["sample_idx"]): a["text"] for a in answers}
    for r in bad.values():
        assert r["score"] == BAD_STATUS[(r["variant"], r["sample_idx"])]

    marts = {sql: lake(tmp_path, sql) for sql in (ACCURACY, INVARIANCE)}
    answers += [{"model": GOOD, "item_id": r["item_id"], "sample_idx": r["sample_idx"], "text": RIGHT} for r in good]
    assert marts == plain_import_marts(tmp_path, answers)
    assert [r["invariance_at_k"] for r in marts[INVARIANCE]] == [0.0, 1.0]  # fake-bad, fake-good

    again = invoke("import-responses", LOGS, "--format", "inspect", "-c", config)
    assert again.exit_code == 0, again.output
    assert len(_stored(tmp_path)) == 16  # the ledger keeps the first answers
    assert [r["n_cached"] for r in lake(tmp_path, "SELECT n_cached FROM runs WHERE kind = 'import' "
                                                  "AND status = 'completed' ORDER BY started_at")][-2:] == [8, 8]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_logs_without_item_ids_map_by_content_and_the_unmappable_are_reported(tmp_path):
    config = exported(tmp_path)
    [path] = LOGS.glob("*.json")
    log = json.loads(path.read_text(encoding="utf-8"))
    for s in log["samples"]:
        del s["metadata"]["item_id"]  # a log of the user's own Inspect task over the same prompts
    log["samples"][0]["input"] = [{"role": "user", "content": "What is 2+2?"}]
    failed = log["samples"][1]
    failed["error"] = {"message": "APIConnectionError: Connection refused", "traceback": "", "traceback_ansi": ""}
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / path.name).write_text(json.dumps(log), encoding="utf-8")
    (tmp_path / "logs" / "logs.json").write_text(json.dumps({path.name: {"status": "success"}}), encoding="utf-8")
    result = invoke("import-responses", tmp_path / "logs", "--format", "inspect", "-c", config)
    assert result.exit_code == 0, result.output
    first = log["samples"][0]
    assert "1 sample(s) not imported" in result.said
    assert f"sample {first['id']} epoch {first['epoch']}" in result.said and "no stored item has its prompt" in result.said
    answers = {(a["item_id"], a["sample_idx"]): a["text"] for a in _json_log_answers()}
    del answers[(first["id"], first["epoch"] - 1)]
    answers[(failed["id"], failed["epoch"] - 1)] = None  # an errored sample is an error response
    stored = _stored(tmp_path)
    assert {(r["item_id"], r["sample_idx"]): r["text"] for r in stored} == answers
    assert [(r["status"], r["score"]) for r in stored if r["text"] is None] == [("error", "error")]
    assert lake(tmp_path, "SELECT n_errors FROM runs WHERE kind = 'import' AND status = 'completed'") == [
        {"n_errors": 1}]


def test_what_is_not_an_inspect_log_is_refused_and_nothing_is_written(tmp_path):
    config = exported(tmp_path)
    not_log = tmp_path / "other.json"
    not_log.write_text('{"results": []}', encoding="utf-8")
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    cases = [([not_log, "--format", "inspect"], "not an Inspect log"),
             ([broken, "--format", "inspect"], "not a readable Inspect log"),
             ([LOGS, "--format", "inspect", "--model", "x"], "--model: not with --format inspect"),
             ([LOGS, "--format", "inspect", "--mapping", not_log], "--mapping: only for --format lm-eval"),
             ([LOGS, "--format", "helm"], "--format: unknown format 'helm'"),
             ([tmp_path / "missing", "--format", "inspect"], "no such file or folder")]
    for args, message in cases:
        result = invoke("import-responses", *args, "-c", config)
        assert result.exit_code == 2 and message in result.said, (args, result.output)
    assert lake(tmp_path, "SELECT count(*) AS n FROM runs WHERE kind = 'import'") == [{"n": 0}]


def test_logs_of_items_never_stored_are_refused(tmp_path):
    from conftest import write_config

    config = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "ware house")}})
    result = invoke("import-responses", LOGS, "--format", "inspect", "-c", config)
    assert result.exit_code == 2 and "none of 16 sample(s) maps to a stored item" in result.said
    assert "(16: item <id> is not in the warehouse; no stored item has its prompt)" in result.said


def _inspect_bin() -> str:
    """The ``inspect`` command of Inspect's own environment (``make install``), or ``INSPECT_BIN``."""
    found = os.environ.get("INSPECT_BIN") or str(Path(sys.executable).parent.parent / "inspect" / "bin" / "inspect")
    assert Path(found).is_file(), f"Inspect AI's `inspect` command is missing at {found}: run `make install`"
    return found


@pytest.mark.slow  # Inspect AI's own command, in its own environment
def test_round_trip_through_inspect_itself(tmp_path):
    """Export, run the pinned Inspect on the export against a loopback model with the network blocked
    beyond this machine, import its log: the same items, the same answers as the model sent, the
    same marts as a plain import of them."""
    config = exported(tmp_path)
    guard, attempts = tmp_path / "network guard", tmp_path / "network attempts.log"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    attempts.touch()
    server = serve()
    try:
        log = run_inspect(_inspect_bin(), tmp_path / "inspect export" / "task.py", BAD, server.api_base,
                          tmp_path / "inspect logs", "eval",
                          env={"PYTHONPATH": str(guard), "INVARBENCH_NETWORK_LOG": str(attempts)})
    finally:
        server.__exit__(None, None, None)
    assert attempts.read_text(encoding="utf-8") == ""
    pinned = re.search(r"^inspect_ai==(\S+)$", (REPO / "constraints-inspect.txt").read_text(encoding="utf-8"), re.M)[1]
    assert load_log(log)[0]["eval"]["packages"]["inspect_ai"] == pinned
    result = invoke("import-responses", log, "--format", "inspect", "-c", config)
    assert result.exit_code == 0, result.output
    stored = _stored(tmp_path)
    prompts = {i["item_id"]: i["prompt"] for i in lake(tmp_path, "SELECT item_id, prompt FROM items")}
    assert sorted((r["item_id"], r["sample_idx"]) for r in stored) == sorted((k, e) for k in prompts for e in (0, 1))
    # Inspect may run an item's epochs in either order: per item, the replies the model sent
    assert sorted((prompts[r["item_id"]], r["text"]) for r in stored) == sorted(
        (p, reply) for _, p, reply in server.state.responder.sent)
    assert sorted(r["score"] for r in stored) == sorted(BAD_STATUS.values())
    answers = [{"model": BAD, "item_id": r["item_id"], "sample_idx": r["sample_idx"], "text": r["text"]} for r in stored]
    assert {sql: lake(tmp_path, sql) for sql in (ACCURACY, INVARIANCE)} == plain_import_marts(tmp_path, answers)
