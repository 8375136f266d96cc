"""Bad input, across commands, meets one ``error:`` line at once: exit 2, no traceback, nothing
written, no flow started (issue #32).

One warehouse is built for the module (a real import of a small file); each case then runs the
CLI in-process (typer's runner) on it and checks the exit code, that stderr is one line naming
the problem, and that no file under the warehouse changed (a flow would have added a run row).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import write_config
from flows.cli import app

FAMILIES = ("id,category,euclid,coord,vector,answer\n"
            "p1,length,AB = 3 and BC = 4 at a right angle. Find AC.,A = (0 0) C = (3 4). Find |AC|.,"
            "a = (3 0) b = (0 4). Find |a + b|.,5\n")
RESPONSES = "prompt,target,prediction\nWhat is 2+3?,5,Answer: 5\nWhat is 2+2?,4,Answer: 5\n"

# (case id, command line with {d} = the case folder and {cfg} = its configuration, text the one line must hold)
CASES = [
    # import-responses: files
    ("resp-missing-file", "import-responses {d}/nosuch.csv --model m -c {cfg}", "no such file"),
    ("resp-unknown-type", "import-responses {d}/responses.txt --model m -c {cfg}", "unsupported file type '.txt'"),
    ("resp-missing-column", "import-responses {d}/no_target.csv --model m -c {cfg}",
     "missing column 'target' (or 'gold', 'answer', 'out'); columns found: 'prompt', 'prediction'"),
    ("resp-empty", "import-responses {d}/empty.csv --model m -c {cfg}", "no rows to import"),
    ("resp-not-utf8", "import-responses {d}/latin1.csv --model m -c {cfg}", "line 2: not valid UTF-8"),
    ("resp-too-many-fields", "import-responses {d}/wide.csv --model m -c {cfg}", "line 2: 4 fields, the header has 3"),
    ("resp-bad-bin", "import-responses {d}/bad_bin.csv --model m -c {cfg}", "'[lo, hi]'"),
    ("resp-outside-bin", "import-responses {d}/outside_bin.csv --model m -c {cfg}", "key_entities 9 is outside its bin"),
    ("resp-empty-gold", "import-responses {d}/empty_gold.csv --model m -c {cfg}", "line 2, column 'target': empty"),
    ("resp-bad-json", "import-responses {d}/bad.jsonl --model m -c {cfg}", "line 1: not valid JSON"),
    ("resp-json-array", "import-responses {d}/array.jsonl --model m -c {cfg}", "expected a JSON object, got list"),
    ("resp-two-golds", "import-responses {d}/two_golds.csv --model m -c {cfg}", "both give the gold"),
    ("resp-conflict", "import-responses {d}/conflict.csv --model m -c {cfg}", "different gold, bin or key_entities"),
    # import-responses of another tool's files whose samples match no stored item
    ("resp-lm-eval-unmapped", "import-responses {d}/lm_eval --format lm-eval -c {cfg}", "maps to a stored item"),
    ("resp-inspect-unmapped", "import-responses {d}/inspect --format inspect -c {cfg}", "maps to a stored item"),
    ("resp-null-prompt", "import-responses {d}/null.jsonl --model m -c {cfg}", "column 'prompt': missing value"),
    ("resp-bad-parquet", "import-responses {d}/broken.parquet --model m -c {cfg}", "not a readable Parquet file"),
    ("resp-blank-model", "import-responses {d}/responses.csv --model ' ' -c {cfg}", "--model: a model name is needed"),
    ("resp-no-model", "import-responses {d}/responses.csv -c {cfg}", "--model: a model name is needed"),
    # import-families: files and flags
    ("fam-missing-file", "import-families {d}/nosuch.csv -c {cfg}", "no such file"),
    ("fam-missing-columns", "import-families {d}/fam_short.csv -c {cfg}",
     "missing columns 'coord'; 'vector'; columns found: 'ID', 'Category', 'Euclid', 'Answer'"),
    ("fam-unknown-category", "import-families {d}/fam_category.csv -c {cfg}", "unknown category 'size'"),
    ("fam-bad-answer", "import-families {d}/fam_answer.csv -c {cfg}", "cannot parse 'about five'"),
    ("fam-empty-text", "import-families {d}/fam_empty.csv -c {cfg}", "column 'vector': empty"),
    ("fam-bad-json", "import-families {d}/fam.json -c {cfg}", "invalid JSON"),
    ("fam-unknown-type", "import-families {d}/fam.txt -c {cfg}", "unknown file type '.txt'"),
    ("fam-unknown-style", "import-families {d}/families.csv --prompt-styles direct,shouty -c {cfg}",
     "--prompt-styles: "),
    # configurations
    ("cfg-missing", "sweep -c {d}/nosuch.toml", "does not exist"),
    ("cfg-not-toml", "sweep -c {d}/broken.toml", "not valid TOML"),
    ("cfg-unknown-key", "sweep -c {d}/unknown_key.toml", "sweep.sampels"),
    ("cfg-negative-step", "sweep -c {d}/negative_step.toml", "n_step: -10 must be at least 1"),
    ("cfg-unknown-model", "sweep -c {d}/unknown_model.toml", "nosuchmodel"),
    ("cfg-unknown-dataset", "sweep -c {d}/unknown_dataset.toml", "no stored dataset deadbeef"),
    ("cfg-bad-memory-limit", "sweep -c {d}/bad_memory.toml", "warehouse.memory_limit: 'lots' is not a size"),
    ("cfg-spill-in-s3", "sql 'SELECT 1' -c {d}/spill_url.toml", "warehouse.spill_dir: 's3://b/spill' is a URL"),
    # sweep flags
    ("sweep-unknown-suite", "sweep -c {cfg} --suite nosuch", "--suite: "),
    ("sweep-unknown-task", "sweep -c {cfg} --task nosuch", "nosuch"),
    ("sweep-unknown-dataset", "sweep -c {cfg} --dataset deadbeef", "no stored dataset deadbeef"),
    ("sweep-bad-samples", "sweep -c {cfg} --samples x", "Invalid value for '--samples'"),
    ("sweep-zero-samples", "sweep -c {cfg} --samples 0", "sweep.samples"),
    ("sweep-unknown-model", "sweep -c {cfg} --models nosuch", "nosuch"),
    # rescore: unknown names
    ("rescore-unknown-run", "rescore -c {cfg} --run nosuch", "--run nosuch: nothing stored by that name"),
    ("rescore-unknown-model", "rescore -c {cfg} --model nosuch", "--model nosuch: nothing stored by that name"),
    ("rescore-unknown-suite", "rescore -c {cfg} --suite nosuch", "--suite nosuch: nothing stored by that name"),
    ("rescore-bad-date", "rescore -c {cfg} --since 2020-13-01", "--since 2020-13-01: expected a date"),
    # generate
    ("gen-no-suite", "generate --out {d}/out.jsonl -c {cfg}", "Missing option '--suite'"),
    ("gen-bad-suffix", "generate --suite symmetry --out {d}/[x].csv -c {cfg}", "{d}/[x].csv: the file must end in"),
    ("gen-unknown-suite", "generate --suite nosuch --out {d}/out.jsonl -c {cfg}", "nosuch"),
    # read-only commands and others
    ("runs-bad-format", "runs -c {cfg} --format xml", "--format xml: expected table, csv or json"),
    ("runs-bad-limit", "runs -c {cfg} --limit 0", "--limit"),
    ("sql-bad-format", "sql 'SELECT 1' -c {cfg} --format yaml", "--format yaml: expected table, csv or json"),
    ("compact-bad-days", "compact -c {cfg} --expire-days soon", "Invalid value for '--expire-days'"),
    ("unknown-command", "frobnicate", "No such command 'frobnicate'"),
    ("unknown-option", "runs --colour -c {cfg}", "No such option: --colour"),
]


def write_files(d: Path, wh: Path) -> Path:
    """The bad files and configurations of the cases; returns the good configuration."""
    texts = {
        "responses.csv": RESPONSES, "responses.txt": RESPONSES, "empty.csv": "prompt,target,prediction\n",
        "no_target.csv": "prompt,prediction\nWhat is 2+3?,Answer: 5\n",
        "wide.csv": "prompt,target,prediction\nWhat is 2+3?,5,Answer: 5,extra\n",
        "bad_bin.csv": "prompt,target,prediction,bin\nWhat is 2+3?,5,Answer: 5,two to three\n",
        "outside_bin.csv": "prompt,target,prediction,bin,key_entities\nWhat is 2+3?,5,Answer: 5,1-3,9\n",
        "empty_gold.csv": "prompt,target,prediction\nWhat is 2+3?,,Answer: 5\n",
        "bad.jsonl": '{"prompt": "What is 2+3?", \n', "array.jsonl": '["What is 2+3?", "5", "5"]\n',
        "two_golds.csv": "prompt,target,gold,prediction\nWhat is 2+3?,5,5,Answer: 5\n",
        "conflict.csv": "prompt,target,prediction\nWhat is 2+3?,5,Answer: 5\nWhat is 2+3?,6,Answer: 5\n",
        "null.jsonl": '{"prompt": null, "target": "5", "prediction": "5"}\n', "broken.parquet": "not parquet",
        "families.csv": FAMILIES, "fam.txt": FAMILIES, "fam.json": "[{\"id\": ",
        "fam_short.csv": "ID,Category,Euclid,Answer\np1,length,AB = 3. Find AB.,3\n",
        "fam_category.csv": FAMILIES.replace(",length,", ",size,"),
        "fam_answer.csv": FAMILIES.replace(",5\n", ",about five\n"),
        "fam_empty.csv": FAMILIES.replace(",a = (3 0) b = (0 4). Find |a + b|.,", ",,"),
        "broken.toml": "[sweep\nmodels = 1\n",
    }
    for name, text in texts.items():
        (d / name).write_text(text, encoding="utf-8")
    for tool in ("lm_eval", "inspect"):  # real files of those tools, made from items this lake lacks
        shutil.copytree(Path(__file__).parent / "fixtures" / tool, d / tool)
    (d / "latin1.csv").write_bytes("prompt,target,prediction\nQuelle ann\u00e9e ?,5,5\n".encode("latin-1"))
    base = {"warehouse": {"path": str(wh)}, "sweep": {"models": ["m"], "report": False},
            'models."m"': {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"},
            "suites.symmetry": {"tasks": ["closure"]}}
    write_config(d / "unknown_key.toml", {**base, "sweep": {**base["sweep"], "sampels": 2}})
    write_config(d / "negative_step.toml", {**base, "suites.symmetry.params.closure": {"n_step": -10}})
    write_config(d / "unknown_model.toml", {**base, "sweep": {**base["sweep"], "models": ["nosuchmodel"]}})
    write_config(d / "unknown_dataset.toml", {**base, "sweep": {**base["sweep"], "datasets": ["deadbeef"]}})
    write_config(d / "bad_memory.toml", {**base, "warehouse": {**base["warehouse"], "memory_limit": "lots"}})
    write_config(d / "spill_url.toml", {**base, "warehouse": {**base["warehouse"], "spill_dir": "s3://b/spill"}})
    return write_config(d / "good.toml", base)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time, but SQLite's side files of a
    catalog that was only read: a sweep looks for an earlier run of its plan (flows/known_sweep.py)
    before a generator rejects a parameter, and a read-only reader of a catalog in WAL mode leaves
    its ``-shm`` index and an empty ``-wal`` (SQLite lets only a writer remove them). A write shows
    in the catalog file itself, a non-empty ``-wal`` or a new data file."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
            if p.is_file() and not p.name.endswith("-shm") and not (p.name.endswith("-wal") and p.stat().st_size == 0)}


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A case folder (its name has a space) and a warehouse holding one import."""
    d = tmp_path_factory.mktemp("bad input")
    wh = d / "wh"
    cfg = write_files(d, wh)
    result = CliRunner().invoke(app, ["import-responses", str(d / "responses.csv"), "--model", "m", "-c", str(cfg)])
    assert result.exit_code == 0, result.output
    return d, cfg, wh


def split(command: str, d: Path, cfg: Path) -> list[str]:
    import shlex

    return [a.format(d=d, cfg=cfg) for a in shlex.split(command)]


@pytest.mark.parametrize("command,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(place, command, expected):
    d, cfg, wh = place
    before = snapshot(d)
    result = CliRunner().invoke(app, split(command, d, cfg))
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert expected.format(d=d) in lines[0]
    assert "Traceback" not in result.output and result.stdout == ""
    assert snapshot(d) == before


def test_the_table_covers_forty_cases_across_commands():
    commands = {c[1].split()[0] for c in CASES}
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)
    assert {"import-responses", "import-families", "sweep", "rescore", "generate", "runs", "sql"} <= commands
