"""A careful user's first hour (issue #32): dataset ids that select exactly what was imported,
other people's column names, messages and help that print what they say.

The CLI runs in-process (typer's runner); files are written the way other tools write them.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from conftest import write_config
from flows.cli import app
from flows.stages import load_datasets
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows

FAMILIES = [
    ("p1", "length", "In triangle ABC, AB = 3, BC = 4 and angle ABC = 90°. Find AC.",
     "A = (0, 0), B = (3, 0), C = (3, 4). Find |AC|.", "Vectors a = (3, 0) and b = (0, 4). Find |a + b|.", "5"),
    ("p2", "length", "A square has side 1. Find its diagonal.", "Find the distance from (0, 0) to (1, 1).",
     "Find |u| for u = (1, 1).", "sqrt(2)"),
]


def families_csv(header: str = "id,category,euclid,coord,vector,answer", extra: str | None = None,
                 newline: str = "\n") -> str:
    """The families as CSV, quoted like a spreadsheet writes them; ``extra`` adds a column."""
    lines = [header + (f",{extra}" if extra else "")]
    for row in FAMILIES:
        lines.append(",".join(f'"{v}"' for v in row) + (",note" if extra else ""))
    return newline.join(lines) + newline


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def dataset_of(result) -> str:
    assert result.exit_code == 0, result.output
    return re.search(r"as dataset (\w+)", result.stdout).group(1)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_dataset_id_selects_exactly_the_items_imported_whatever_the_file_looks_like(tmp_path):
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    lake = Lake(str(tmp_path / "wh" / "lake"))
    plain = tmp_path / "set.csv"
    plain.write_text(families_csv(), encoding="utf-8")
    first = invoke("import-families", str(plain), "-c", str(cfg))
    dataset = dataset_of(first)
    assert "imported 2 families (6 items) as dataset" in first.stdout and "6 new, 0 already stored" in first.stdout

    # A BOM, Windows line endings and an extra column: the same families, the same dataset.
    other = tmp_path / "set-excel.csv"
    other.write_bytes(b"\xef\xbb\xbf" + families_csv(extra="notes", newline="\r\n").encode("utf-8"))
    again = invoke("import-families", str(other), "-c", str(cfg))
    assert dataset_of(again) == dataset and "0 new, 6 already stored" in again.stdout

    # More prompt styles: a new dataset of 12 items, 6 of them already stored under the first id.
    wider = invoke("import-families", str(plain), "--prompt-styles", "direct,json", "-c", str(cfg))
    both = dataset_of(wider)
    assert both != dataset and "(12 items)" in wider.stdout and "6 new, 6 already stored" in wider.stdout

    assert len(load_datasets.fn(lake, [dataset])) == 6
    selected = load_datasets.fn(lake, [both])
    assert len(selected) == 12 and {r["prompt_style"] for r in selected} == {"direct", "json"}
    assert len(load_datasets.fn(lake, [dataset, both])) == 12  # an item in both datasets runs once


def test_items_an_earlier_release_stored_with_their_dataset_id_still_select(tmp_path):
    from tasks.items.generate import generate_task, item_row

    lake = Lake(str(tmp_path / "lake"))
    _, items = generate_task("symmetry", "identity", {}, 0)
    # An earlier release wrote no memberships: the dataset lived in items.dataset_id alone.
    write_rows(lake, "items", [item_row(i, "olddataset") for i in items])
    assert lake.read("SELECT count(*) AS n FROM raw_dataset_items")[0]["n"] == 0
    rows = load_datasets.fn(lake, ["olddataset"])
    assert sorted(r["item_id"] for r in rows) == sorted(i.item_id for i in items)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
@pytest.mark.parametrize("header", [
    "Prompt,Target,Prediction", "prompt, target, prediction", "Question,Answer,Output", " INPUT ,Gold,Response",
])
def test_response_files_with_other_peoples_column_names_import(tmp_path, header):
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    source = tmp_path / "responses.csv"
    source.write_text(f"{header}\nWhat is 2+3?,5,Answer: 5\nWhat is 2+2?,4,Answer: 5\n", encoding="utf-8")
    result = invoke("import-responses", str(source), "--model", "m", "-c", str(cfg))
    assert result.exit_code == 0, result.output
    rows = Lake(str(tmp_path / "wh" / "lake")).read("SELECT gold, status FROM trial_scores ORDER BY gold")
    assert rows == [{"gold": "4", "status": "wrong"}, {"gold": "5", "status": "correct"}]
    assert "ignored columns" not in result.stderr


def test_families_with_capitalised_spaced_column_names_import(tmp_path):
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    source = tmp_path / "set.csv"
    source.write_text(families_csv("ID, Category, Euclid, Coord, Vector, Answer"), encoding="utf-8")
    result = invoke("import-families", str(source), "-c", str(cfg))
    assert result.exit_code == 0, result.output
    assert "imported 2 families (6 items)" in result.stdout


def test_messages_keep_square_brackets(tmp_path):
    out = tmp_path / "[x].jsonl"
    result = invoke("generate", "--suite", "symmetry", "--task", "identity", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"to {out}" in result.stdout and out.exists()
    bad = tmp_path / "bins.csv"
    bad.write_text("prompt,target,prediction,bin\nWhat is 2+3?,5,Answer: 5,two to three\n", encoding="utf-8")
    result = invoke("import-responses", str(bad), "--model", "m", "-c",
                    str(write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})))
    assert result.exit_code == 2 and "'[lo, hi)', '[lo, hi]'" in result.stderr


COMMANDS = ["sweep", "generate", "import-families", "import-responses", "sql", "runs", "compact", "models",
            "rescore", "report"]
# A sentence the docstring or option help wraps: at 200 columns it must print on one line.
ONE_LINE = {
    "sweep": "Without --suite, --task or --dataset the configuration says what runs; with any of them, "
             "only what they name runs.",
    "import-responses": "Nothing is written when a column is missing, the file is empty or a row cannot be decoded "
                        "(exit 2, the message names the row and column).",
    "report": "output folder (default: <warehouse>/reports/<timestamp>/)",
}


@pytest.mark.parametrize("command", [[]] + [[c] for c in COMMANDS], ids=["invarbench"] + COMMANDS)
def test_help_reads_as_sentences(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout and "``" not in result.stdout
    if command and command[0] in ONE_LINE:
        assert ONE_LINE[command[0]] in result.stdout
