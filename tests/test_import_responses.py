"""``invarbench import-responses``: round trips per format, and every malformed input rejected.

The files are written here; the CLI runs in-process (typer's runner) on a warehouse under
tmp_path, and the lake is read back with DuckDB. Import calls no model and starts no Prefect.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from conftest import lake_files, write_config
from flows.cli import app
from tasks.import_plan import store_import
from tasks.imports import Record, answer_types, plan_import
from tasks.lake.lake import Lake
from tasks.lake.views import query

# One row per response: (task, prompt, target, prediction, extra columns) → expected score status.
ROWS = [
    ({"task": "closure", "prompt": "1+1+1+1+1", "target": "5", "prediction": "Answer: 5"}, "correct"),
    ({"task": "closure", "prompt": "1+1+1+1+1", "target": "5", "prediction": "Answer: 6"}, "wrong"),  # sample 1
    ({"task": "list_intersection", "prompt": "A: Nan Bo\nB: Cy Di", "target": "None",
      "prediction": "No common names.\nOutput: None"}, "correct"),
    ({"task": "dyck", "prompt": "Close: ( [", "target": "] )", "prediction": "Hmm.\nI am not sure."}, "unparsable"),
    ({"task": "length", "prompt": "Distance from (0,0) to (2,4)?", "target": "2*sqrt(5)",
      "prediction": "Answer: sqrt(20)"}, "correct"),
    ({"task": "capital_sums", "prompt": "Sum of 2 and 40?", "target": "42", "prediction": "It is forty two"}, "correct"),
    ({"task": "capitals", "prompt": "Capital of France?", "target": "Paris", "prediction": "Paris",
      "family_id": "fr", "variant": "en", "key_entities": "1", "bin": "1-3"}, "correct"),
    ({"task": "capitals", "prompt": "Capitale de la France ?", "target": "Paris", "prediction": "Lyon",
      "family_id": "fr", "variant": "fr", "key_entities": "1", "bin": "1-3"}, "wrong"),
]
COLUMNS = ["task", "prompt", "target", "prediction", "family_id", "variant", "key_entities", "bin"]
EXPECTED_TYPES = {"closure": "integer", "list_intersection": "text", "dyck": "text", "length": "math",
                  "capital_sums": "integer", "capitals": "text"}


def records() -> list[dict]:
    return [{c: row.get(c) for c in COLUMNS} for row, _ in ROWS]


def write_csv(path, rows, columns=COLUMNS):
    import csv

    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows([{c: "" if r.get(c) is None else r[c] for c in columns} for r in rows])
    return path


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def write_parquet(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


WRITERS = {"csv": write_csv, "jsonl": write_jsonl, "parquet": write_parquet}


@pytest.fixture
def config(tmp_path):
    return write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "wh")}})


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def lake(tmp_path, sql, params=None):
    con = Lake(str(tmp_path / "wh" / "lake")).connect()
    try:
        return query(con, sql, params)
    finally:
        con.close()


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_round_trip(fmt, tmp_path, config):
    source = WRITERS[fmt](tmp_path / f"responses.{fmt}", records())
    result = invoke("import-responses", str(source), "--model", "ext-model", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "accuracy per task and bin" in result.output and f"imported {len(ROWS)} response(s)" in result.output

    [run] = lake(tmp_path, "SELECT * FROM runs")
    assert (run["kind"], run["status"], run["models"], run["n_items"], run["n_requests"]) == (
        "import", "completed", '["ext-model"]', len(ROWS) - 1, len(ROWS))  # the repeated closure row is one item

    items = lake(tmp_path, "SELECT DISTINCT suite, task, answer_type FROM items")
    assert {(i["task"], i["answer_type"]) for i in items} == set(EXPECTED_TYPES.items())
    assert {i["suite"] for i in items} == {"imported"}

    requests = lake(tmp_path, "SELECT DISTINCT provider, route_model, api_base, model FROM run_requests")
    assert requests == [{"provider": "imported", "route_model": "ext-model", "api_base": "", "model": "ext-model"}]
    responses = lake(tmp_path, "SELECT status, count(*) AS n FROM responses GROUP BY ALL")
    assert responses == [{"status": "ok", "n": len(ROWS)}]

    scored = lake(tmp_path, """
        SELECT i.task, i.variant, ts.sample_idx, ts.status, i.gold, i.family_id, i.bin, i.key_entities
        FROM trial_scores ts JOIN items i USING (item_id) ORDER BY i.task, i.variant, ts.sample_idx""")
    expected = sorted(((row["task"], row.get("variant") or "original", status) for row, status in ROWS))
    got = sorted((s["task"], s["variant"], s["status"]) for s in scored)
    assert got == expected
    assert [s["sample_idx"] for s in scored if s["task"] == "closure"] == [0, 1]
    assert {s["gold"] for s in scored if s["task"] == "list_intersection"} == {"None"}  # a string, never a null
    capitals = [s for s in scored if s["task"] == "capitals"]
    assert {(s["family_id"], s["bin"], s["key_entities"]) for s in capitals} == {("fr", "1-3", 1)}


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_formats_agree_and_a_reimport_stores_nothing_new(tmp_path, config):
    """The same rows in any format are the same items and requests; importing again keeps the ledger."""
    ids = {}
    for fmt, writer in WRITERS.items():
        source = writer(tmp_path / f"r.{fmt}", records())
        assert invoke("import-responses", str(source), "--model", "m", "--config", str(config)).exit_code == 0
    runs = lake(tmp_path, "SELECT run_id, n_cached FROM runs ORDER BY started_at")
    assert [r["n_cached"] for r in runs] == [0, len(ROWS), len(ROWS)]
    for r in runs:
        ids[r["run_id"]] = {x["request_id"] for x in lake(
            tmp_path, "SELECT request_id FROM run_requests WHERE run_id = ?", [r["run_id"]])}
    assert len({frozenset(v) for v in ids.values()}) == 1
    assert lake(tmp_path, "SELECT count(*) AS n FROM responses") == [{"n": len(ROWS)}]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_one_prompt_in_two_items_is_two_requests(tmp_path, config):
    """Two items with one prompt are two requests, each keeping its own reply."""
    rows = [{"task": "a", "prompt": "Same?", "target": "yes", "prediction": "yes"},
            {"task": "b", "prompt": "Same?", "target": "no", "prediction": "yes"}]
    result = invoke("import-responses", str(write_jsonl(tmp_path / "r.jsonl", rows)), "--model", "m",
                    "--config", str(config))
    assert result.exit_code == 0, result.output
    per_request = lake(tmp_path, "SELECT request_id, count(*) AS n FROM responses GROUP BY ALL")
    assert len(per_request) == 2 and {r["n"] for r in per_request} == {1}
    scored = lake(tmp_path, "SELECT i.task, ts.status FROM trial_scores ts JOIN items i USING (item_id) ORDER BY 1")
    assert scored == [{"task": "a", "status": "correct"}, {"task": "b", "status": "wrong"}]


@pytest.mark.slow  # an import end to end (seconds of CPU)
def test_a_file_with_finish_reasons_imports_and_a_cut_reply_is_truncated(tmp_path, config):
    """A CSV written by hand: a BOM, Windows line endings, spaced headers and a finish_reason column.
    Its run completes, and a reply cut at the token limit is truncated, not graded by its last number."""
    source = tmp_path / "outside file.csv"
    source.write_bytes("\ufeffPrompt , Target,Prediction, Finish_Reason\r\n"
                       "What is 12 + 30?,42,42.00,stop\r\n"
                       "What is 12 + 31?,43,Let me compute 12 + 31 = 4,length\r\n".encode())
    result = invoke("import-responses", str(source), "--model", "m", "--config", str(config))
    assert result.exit_code == 0, result.output
    [run] = lake(tmp_path, "SELECT status, n_errors FROM runs")
    assert run == {"status": "completed", "n_errors": 0}
    scored = lake(tmp_path, "SELECT i.gold, ts.status FROM trial_scores ts JOIN items i USING (item_id) ORDER BY i.gold")
    assert scored == [{"gold": "42", "status": "correct"}, {"gold": "43", "status": "truncated"}]


def test_answer_types_of_unknown_tasks_follow_their_golds():
    def rec(task, gold):
        return Record("line 1", {"task": task, "gold": gold})

    assert answer_types([rec("a", "12"), rec("a", "-3"), rec("b", "12"), rec("b", "1.5"), rec("dyck", "7")]) == {
        "a": "integer", "b": "math", "dyck": "text"}
    # golds as people write numbers are compared as values; anything else stays exact text
    assert answer_types([rec("frac", "8/3"), rec("frac", "2\\frac{2}{3}"), rec("root", "3\\sqrt{2}"),
                         rec("root", "π/2"), rec("thousands", "1,250"), rec("city", "Paris"),
                         rec("list", "1,2,3"), rec("point", "(1,2)"), rec("mixed", "yes"), rec("mixed", "1"),
                         rec("unit", "12 cm")]) == {
        "frac": "math", "root": "math", "thousands": "math", "city": "text", "list": "text", "point": "text",
        "mixed": "text", "unit": "text"}


def test_an_imported_numeric_task_is_graded_by_value(tmp_path):
    """Golds and replies written as people write them (a mixed number for 8/3, a thousands
    separator, trailing zeros) score as an expert grader would; a text task stays exact."""
    source = raw(tmp_path / "theirs.csv", (
        "\ufeffQuestion, Answer , Output,Task\r\n"
        '"What is 8/3 as a mixed number?",8/3,"The answer is $2\\frac{2}{3}$",frac\r\n'
        '"What is 1000+250.5?","1,250.5","**Answer: 1250.50**",frac\r\n'
        '"What is 1+2?",3,"Answer: 4",frac\r\n'
        '"Capital of France?",Paris,"Output: paris",city\r\n'))
    lake = Lake(str(tmp_path / "lake"))
    store_import(plan_import(source, "theirs"), lake, "r1")
    scored = lake.read("SELECT i.task, i.gold, ts.status FROM trial_scores ts "
                       "JOIN items i USING (item_id) ORDER BY i.task, i.gold")
    assert [(r["task"], r["gold"], r["status"]) for r in scored] == [
        ("city", "Paris", "wrong"), ("frac", "1,250.5", "correct"), ("frac", "3", "wrong"),
        ("frac", "8/3", "correct")]


def raw(path, content):
    """Write ``content`` (text or bytes) as it is; returns the path."""
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def zero_rows_parquet(path):
    pq.write_table(pa.table({c: pa.array([], pa.string()) for c in ("prompt", "target", "prediction")}), path)
    return path


GOOD = {"prompt": "q", "target": "1", "prediction": "1"}
HEADER = "prompt,target,prediction\n"

# case → (write the file under a folder, text the message must contain)
MALFORMED = {
    "missing target column": (lambda d: write_csv(d / "a.csv", [GOOD], ["prompt", "prediction"]),
                              "missing column 'target' (or 'gold', 'answer', 'out')"),
    "missing prediction column": (lambda d: write_jsonl(d / "a.jsonl", [{"input": "q", "gold": "1"}]),
                                  "missing column 'prediction' (or 'response', 'output', 'pred')"),
    "two prompt columns": (lambda d: write_jsonl(d / "a.jsonl", [{**GOOD, "input": "q"}]),
                           "columns 'prompt' and 'input' both give the prompt"),
    "empty csv": (lambda d: raw(d / "a.csv", b""), "no rows to import"),
    "header only csv": (lambda d: raw(d / "a.csv", HEADER), "no rows to import"),
    "empty jsonl": (lambda d: raw(d / "a.jsonl", "\n"), "no rows to import"),
    "empty parquet": (lambda d: zero_rows_parquet(d / "a.parquet"), "no rows to import"),
    "invalid json line": (lambda d: raw(d / "a.jsonl", json.dumps(GOOD) + '\n{"prompt": "q",\n'),
                          "line 2: not valid JSON"),
    "json line not an object": (lambda d: raw(d / "a.jsonl", json.dumps(GOOD) + "\n[1, 2]\n"),
                                "line 2: expected a JSON object, got list"),
    "invalid utf-8": (lambda d: raw(d / "a.csv", HEADER.encode() + b"q,1,1\nq2,\xff\xfe,2\n"),
                      "line 3: not valid UTF-8"),
    "too many csv fields": (lambda d: raw(d / "a.csv", HEADER + "q,1,1,extra\n"), "line 2: 4 fields, the header has 3"),
    "short csv line": (lambda d: raw(d / "a.csv", HEADER + "q,1,1\nq2,2\n"), "line 3, column 'prediction': missing value"),
    "null prediction": (lambda d: write_jsonl(d / "a.jsonl", [GOOD, {"prompt": "q2", "target": "2"}]),
                        "line 2, column 'prediction': missing value"),
    "list as gold": (lambda d: write_jsonl(d / "a.jsonl", [{**GOOD, "target": [1]}]),
                     "line 1, column 'target': expected text or a number, got list"),
    "blank gold": (lambda d: raw(d / "a.csv", HEADER + "q,1,1\nq2, ,2\n"), "line 3, column 'target': empty"),
    "empty gold names the fill": (lambda d: raw(d / "a.csv", "input,out,bins,pred\nq,a b,1~5,Output: a\nq2,,1~5,x\n"),
                                  "line 3, column 'out': empty (write the answer the task expects; for "
                                  "list_intersection with no common item, that is None)"),
    "two gold columns": (lambda d: write_jsonl(d / "a.jsonl", [{**GOOD, "out": "1"}]),
                         "columns 'target' and 'out' both give the gold"),
    "half-open bin excludes its upper edge": (
        lambda d: write_jsonl(d / "a.jsonl", [{**GOOD, "key_entities": 18, "bin": "[13, 18)"}]),
        "line 1: key_entities 18 is outside its bin '[13, 18)'"),
    "reversed bin": (lambda d: write_jsonl(d / "a.jsonl", [{**GOOD, "bin": "18~13"}]),
                     "line 1, column 'bin': '18~13' is an empty range"),
    "one item with two golds": (lambda d: write_jsonl(d / "a.jsonl", [GOOD, {**GOOD, "target": "2"}]),
                                "line 2: same task, family_id, variant and prompt as line 1 but a different gold"),
    "null gold in parquet": (lambda d: write_parquet(d / "a.parquet", [GOOD, {**GOOD, "target": None}]),
                             "row 2, column 'target': missing value"),
    "key_entities not an integer": (lambda d: write_jsonl(d / "a.jsonl", [{**GOOD, "key_entities": "many"}]),
                                    "line 1, column 'key_entities': 'many' is not an integer"),
    "bad bin label": (lambda d: write_jsonl(d / "a.jsonl", [{**GOOD, "bin": "short"}]),
                      "line 1, column 'bin': 'short' is not a bin label"),
    "key_entities outside its bin": (lambda d: write_jsonl(d / "a.jsonl", [GOOD, {**GOOD, "key_entities": 9, "bin": "1-8"}]),
                                     "line 2: key_entities 9 is outside its bin '1-8'"),
    "not parquet": (lambda d: raw(d / "a.parquet", HEADER), "not a readable Parquet file"),
    "unsupported type": (lambda d: raw(d / "a.txt", "q\n"), "unsupported file type '.txt'"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_exits_2_and_stores_nothing(case, tmp_path, config):
    make, expected = MALFORMED[case]
    source = make(tmp_path)
    result = invoke("import-responses", str(source), "--model", "m", "--config", str(config))
    assert result.exit_code == 2, (case, result.output)
    assert expected in " ".join(result.output.split()), (case, result.output)
    assert str(source) in " ".join(result.output.split())
    assert lake_files(tmp_path / "wh") == []


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_item_identity_is_task_family_variant_and_prompt(tmp_path, config):
    """A family whose euclid and vector variants share their wording stays one complete family;
    only repeated rows of one identity are samples of it."""
    shared = "Points A, B, C with AB = 3 and BC = 4 at a right angle. Find AC."
    rows = [
        {"task": "length", "family_id": "tri", "variant": "euclid", "prompt": shared, "target": "5", "prediction": "Answer: 5"},
        {"task": "length", "family_id": "tri", "variant": "coord", "prompt": "A=(0,0), B=(3,0), C=(3,4). Find AC.",
         "target": "5", "prediction": "Answer: 5"},
        {"task": "length", "family_id": "tri", "variant": "vector", "prompt": shared, "target": "5", "prediction": "Answer: 6"},
        # a second sample of the euclid item, and of the vector item
        {"task": "length", "family_id": "tri", "variant": "euclid", "prompt": shared, "target": "5", "prediction": "Answer: 5"},
        {"task": "length", "family_id": "tri", "variant": "vector", "prompt": shared, "target": "5", "prediction": "Answer: 5"},
        {"task": "length", "family_id": "tri", "variant": "coord", "prompt": "A=(0,0), B=(3,0), C=(3,4). Find AC.",
         "target": "5", "prediction": "Answer: 5.0"},
    ]
    result = invoke("import-responses", str(write_jsonl(tmp_path / "r.jsonl", rows)), "--model", "m",
                    "--config", str(config))
    assert result.exit_code == 0, result.output
    scored = lake(tmp_path, """SELECT i.variant, ts.sample_idx, ts.status FROM trial_scores ts JOIN items i USING (item_id)
                               ORDER BY ts.sample_idx, i.variant""")
    assert [(s["variant"], s["sample_idx"], s["status"]) for s in scored] == [
        ("coord", 0, "correct"), ("euclid", 0, "correct"), ("vector", 0, "wrong"),
        ("coord", 1, "correct"), ("euclid", 1, "correct"), ("vector", 1, "correct")]
    assert lake(tmp_path, "SELECT count(DISTINCT request_id) AS n FROM responses") == [{"n": 6}]
    [row] = lake(tmp_path, "SELECT n_units, n_complete, n_invariant, n_consistent FROM invariance")
    assert row == {"n_units": 2, "n_complete": 2, "n_invariant": 1, "n_consistent": 1}  # sample 0: 5, 5, 6
    flips = {r["pattern"]: r["n"] for r in lake(tmp_path, "SELECT pattern, n FROM flip_patterns WHERE n > 0")}
    assert flips == {"CCC": 1, "CCW": 1}


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_common_bin_spellings_are_normalised_and_reported(tmp_path, config):
    spellings = {"13~18": ("13-18", 13, 18), "[18, 25)": ("18-25", 18, 25), "25-32": ("25-32", 25, 32),
                 "[32, 40]": ("32-40", 32, 40), "7": ("7", 7, 7), " 40 ~ 48 ": ("40-48", 40, 48),
                 "48–56": ("48-56", 48, 56), "56 — 64": ("56-64", 56, 64), "64 to 72": ("64-72", 64, 72)}
    rows = [{"prompt": f"q{i}", "target": "1", "prediction": "1", "bin": b} for i, b in enumerate(spellings)]
    result = invoke("import-responses", str(write_jsonl(tmp_path / "r.jsonl", rows)), "--model", "m",
                    "--config", str(config))
    assert result.exit_code == 0, result.output
    stored = {r["prompt"]: (r["bin"], r["bin_lo"], r["bin_hi"], r["key_entities"])
              for r in lake(tmp_path, "SELECT prompt, bin, bin_lo, bin_hi, key_entities FROM items")}
    assert stored == {f"q{i}": (*v, v[1]) for i, v in enumerate(spellings.values())}
    output = " ".join(result.output.split())
    assert "bins (as written → stored):" in output
    assert all(f"{given.strip()} → {label}" in output for given, (label, *_) in spellings.items())


# MLissard's published result files, in their own shapes: object counting (input, target, bins,
# pred) and list intersection (input, out, ..., bins, pred, token counts) with '/'-separated
# lists in the prompts and replies and space-separated golds.
OBJECT_COUNTING = """input,target,bins,pred
"I have a cabbage, two carrots, and a yam.",4,1~7,Output: 4
"I have three lamps, a car, two stoves, a bed, four chairs, a toaster, and an oven.",13,13~18,Output: 12
"""
LIST_INTERSECTION = """input,out,len_list,total_inter,A,B,bins,pred,total-tokens,prompt-tokens,completion-tokens
"A: river/pilot/amber/quill
B: quill/amber/lunar/tidal",amber quill,4,2,river/pilot/amber/quill,quill/amber/lunar/tidal,1~24,Output: quill/amber,90,80,10
"A: cobalt/ember/frost
B: frost/cobalt/ember",cobalt ember frost,3,3,cobalt/ember/frost,frost/cobalt/ember,1~24,"Output: Frost, Cobalt; ember",90,80,10
"A: maple/cedar/aspen
B: cedar/birch/aspen",aspen cedar,3,2,maple/cedar/aspen,cedar/birch/aspen,1~24,Output: aspen/cedar/birch,90,80,10
"A: onyx/jade
B: ruby/opal",None,2,0,onyx/jade,ruby/opal,1~24,Output: None,90,80,10
"""


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_mlissard_files_import_as_published(tmp_path, config):
    counting = raw(tmp_path / "object_counting_gpt-4.csv", OBJECT_COUNTING)
    result = invoke("import-responses", str(counting), "--model", "gpt-4", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "1~7 → 1-7" in result.output and "13~18 → 13-18" in result.output
    scored = lake(tmp_path, "SELECT bin, status, answer_type FROM trial_scores ORDER BY bin")
    assert scored == [{"bin": "1-7", "status": "correct", "answer_type": "integer"},
                      {"bin": "13-18", "status": "wrong", "answer_type": "integer"}]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_lenient_list_matching_splits_on_slashes_commas_and_semicolons(tmp_path, config):
    source = raw(tmp_path / "list_intersection_llama3-70b.csv", LIST_INTERSECTION)
    result = invoke("import-responses", str(source), "--model", "llama-3", "--config", str(config))
    assert result.exit_code == 0, result.output
    rows = {r["gold"]: (r["status"], r["lenient_correct"]) for r in lake(
        tmp_path, "SELECT gold, status, lenient_correct FROM trial_scores")}
    assert rows == {
        "amber quill": ("wrong", True),  # '/'-separated, other order
        "cobalt ember frost": ("wrong", True),  # ',' and ';', other case
        "aspen cedar": ("wrong", False),  # one item too many
        "None": ("correct", True),
    }
    [acc] = lake(tmp_path, "SELECT accuracy, lenient_accuracy FROM lenient_accuracy_by_bin")
    assert acc == {"accuracy": pytest.approx(1 / 4), "lenient_accuracy": pytest.approx(3 / 4)}
