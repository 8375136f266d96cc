"""``import-responses --format lm-eval``: lm-evaluation-harness ``--log_samples`` output as lm_eval wrote it.

tests/fixtures/lm_eval/ (see tests/fixtures/README.md) holds two models' real output for two tasks:
``invar_identity`` over an export of :data:`interop_helpers.CONFIG` (two filters, two repeats) and
``gsm8k_mini``, whose documents are no invarbench item. The CLI runs in-process.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from interop_helpers import ACCURACY, FIXTURES, INVARIANCE, exported, invoke, lake, plain_import_marts

SAMPLES = FIXTURES / "lm_eval"
GOOD, BAD = "acme/fake-good", "fake-bad"
# An expert grader on fake-bad's two replies per document (gold 8): "Answer: 9" is wrong, a reply
# without a number has no answer.
BAD_STATUS = {("begin", 0): "wrong", ("begin", 1): "wrong", ("end", 0): "correct", ("end", 1): "correct",
              ("middle", 0): "correct", ("middle", 1): "unparsable", ("random", 0): "correct",
              ("random", 1): "unparsable"}


def _lines(model_dir: str, task: str) -> list[dict]:
    [path] = (SAMPLES / model_dir).glob(f"samples_{task}_*.jsonl")
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _file_answers(model: str, model_dir: str) -> list[dict]:
    """The raw replies of the identity documents, read straight from the samples file."""
    docs = {line["doc_id"]: line for line in _lines(model_dir, "invar_identity")}
    return [{"model": model, "item_id": d["doc"]["id"], "sample_idx": k, "text": text}
            for d in docs.values() for k, text in enumerate(d["resps"][0])]


def _stored(tmp_path: Path) -> list[dict]:
    return lake(tmp_path, """
        SELECT r.model, q.item_id, q.sample_idx, r.text, r.status, q.provider, i.variant, ts.status AS score
        FROM responses r JOIN run_requests q USING (request_id, run_id) JOIN items i USING (item_id)
        JOIN trial_scores ts ON ts.trial_id = q.trial_id ORDER BY ALL""")


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_samples_map_by_content_one_answer_per_document_and_repeat(tmp_path):
    config = exported(tmp_path)
    result = invoke("import-responses", SAMPLES, "--format", "lm-eval", "-c", config)
    assert result.exit_code == 0, result.output
    runs = lake(tmp_path, "SELECT models, n_items, n_requests FROM runs WHERE kind = 'import' AND status = 'completed' "
                          "ORDER BY models")
    # four documents, two repeats: eight answers per model, although every document has a line per filter
    assert runs == [{"models": json.dumps([m]), "n_items": 4, "n_requests": 8} for m in (GOOD, BAD)]
    assert "repeat an imported one" not in result.said  # a document's second filter line is no second answer
    stored = _stored(tmp_path)
    assert {r["provider"] for r in stored} == {"lm-eval"}
    answers = _file_answers(GOOD, "acme__fake-good") + _file_answers(BAD, "fake-bad")
    assert sorted((r["model"], r["item_id"], r["sample_idx"], r["text"]) for r in stored) == sorted(
        (a["model"], a["item_id"], a["sample_idx"], a["text"]) for a in answers)
    assert {r["score"] for r in stored if r["model"] == GOOD} == {"correct"}
    for r in stored:
        if r["model"] == BAD:
            assert r["score"] == BAD_STATUS[(r["variant"], r["sample_idx"])]
    # gsm8k_mini's documents are no stored item: each reported, none silently dropped
    assert "10 sample(s) not imported" in result.said
    assert result.said.count("task gsm8k_mini") == 10 and "no stored item has its prompt" in result.said
    marts = {sql: lake(tmp_path, sql) for sql in (ACCURACY, INVARIANCE)}
    assert marts == plain_import_marts(tmp_path, answers)


def _copy(tmp_path: Path, model_dir: str) -> Path:
    target = tmp_path / "lm eval out" / model_dir
    shutil.copytree(SAMPLES / model_dir, target)
    return target


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_mapping_file_by_doc_id_or_doc_hash_decides_and_the_rest_is_reported(tmp_path):
    config = exported(tmp_path)
    docs = {d["doc_id"]: d for d in _lines("fake-bad", "invar_identity")}
    gsm = {d["doc_id"]: d for d in _lines("fake-bad", "gsm8k_mini")}
    mapping_csv = tmp_path / "map.csv"
    with mapping_csv.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["task", "doc_id", "item_id"])
        w.writerows([["invar_identity", n, docs[n]["doc"]["id"]] for n in (0, 1, 2)])
        w.writerow(["gsm8k_mini", 0, docs[3]["doc"]["id"]])  # a document of another wording, mapped by hand
        w.writerow(["gsm8k_mini", 1, "0000000000000000"])  # an item the warehouse does not hold
    result = invoke("import-responses", _copy(tmp_path, "fake-bad"), "--format", "lm-eval", "--mapping",
                    mapping_csv, "-c", config)
    assert result.exit_code == 0, result.output
    stored = _stored(tmp_path)
    expected = [(docs[n]["doc"]["id"], k, text) for n in (0, 1, 2) for k, text in enumerate(docs[n]["resps"][0])]
    expected.append((docs[3]["doc"]["id"], 0, gsm[0]["resps"][0][0]))
    assert sorted((r["item_id"], r["sample_idx"], r["text"]) for r in stored) == sorted(expected)
    assert "doc 3 of task invar_identity is not in the mapping file" in result.said
    assert "item 0000000000000000 is not in the warehouse" in result.said
    assert "5 sample(s) not imported" in result.said  # identity doc 3, gsm8k docs 1-4

    # the same by doc_hash, as JSON: a second model folder so the requests are new
    mapping_json = tmp_path / "map.json"
    mapping_json.write_text(json.dumps([{"task": "invar_identity", "doc_hash": d["doc_hash"], "item_id": d["doc"]["id"]}
                                        for d in docs.values()]), encoding="utf-8")
    good = _copy(tmp_path, "acme__fake-good")
    result = invoke("import-responses", good, "--format", "lm-eval", "--mapping", mapping_json, "-c", config)
    assert result.exit_code == 0, result.output
    assert len([r for r in _stored(tmp_path) if r["model"] == GOOD]) == 8


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_older_layouts_missing_fields_and_loglikelihood_tasks(tmp_path):
    """Lines without hashes or filter, ``arguments`` as lists (lm-eval < 0.4.3), no results file
    (the model is the folder's name), and a multiple-choice task's lines (no generated answer)."""
    config = exported(tmp_path)
    folder = tmp_path / "older out" / "org__older-model"
    folder.mkdir(parents=True)
    lines = []
    for d in {d["doc_id"]: d for d in _lines("fake-bad", "invar_identity")}.values():
        gen = d["arguments"]["gen_args_0"]
        lines.append({"doc_id": d["doc_id"], "doc": d["doc"], "target": d["target"],
                      "arguments": [[gen["arg_0"], gen["arg_1"]]], "resps": d["resps"],
                      "filtered_resps": d["filtered_resps"]})
    date = "2024-05-01T10-00-00.000001"
    (folder / f"samples_old_identity_{date}.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    choice = {"doc_id": 0, "doc": {"question": "2+2?", "choices": ["3", "4"]}, "target": 1,
              "arguments": [["2+2?", " 3"], ["2+2?", " 4"]], "resps": [[["-2.1", "False"]], [["-0.3", "True"]]],
              "filtered_resps": [["-2.1", "False"], ["-0.3", "True"]], "filter": "none", "acc": 1.0}
    (folder / f"samples_choice_{date}.jsonl").write_text(json.dumps(choice) + "\n", encoding="utf-8")
    result = invoke("import-responses", tmp_path / "older out", "--format", "lm-eval", "-c", config)
    assert result.exit_code == 0, result.output
    stored = _stored(tmp_path)
    assert {r["model"] for r in stored} == {"org__older-model"} and len(stored) == 8
    assert "task choice is loglikelihood: no generated answer" in result.said


def test_unreadable_samples_are_refused_and_nothing_is_written(tmp_path):
    config = exported(tmp_path)
    folder = _copy(tmp_path, "fake-bad")
    [path] = folder.glob("samples_invar_identity_*.jsonl")
    first, *rest = path.read_text(encoding="utf-8").splitlines()
    broken = json.loads(rest[0])
    del broken["resps"]
    path.write_text("\n".join([first, json.dumps(broken), *rest[1:]]) + "\n", encoding="utf-8")
    bad_map = tmp_path / "map.csv"
    bad_map.write_text("task,item_id\ninvar_identity,abc\n", encoding="utf-8")
    cases = [([folder], "line 2: no 'resps'"),
             ([SAMPLES, "--mapping", bad_map], "row 1: needs task, item_id and doc_id or doc_hash"),
             ([tmp_path / "empty"], "no such file or folder")]
    for args, message in cases:
        result = invoke("import-responses", *args, "--format", "lm-eval", "-c", config)
        assert result.exit_code == 2 and message in result.said, (args, result.output)
    assert lake(tmp_path, "SELECT count(*) AS n FROM runs WHERE kind = 'import'") == [{"n": 0}]
