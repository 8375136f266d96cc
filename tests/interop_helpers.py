"""Shared by the interop tests and by the script that made their fixtures: a loopback OpenAI-compatible
model with a good and a bad answerer, and Inspect AI run on an export against it.

``python tests/interop_helpers.py INSPECT_BIN OUT_DIR`` rewrites the committed Inspect fixtures
(tests/fixtures/inspect/): an export of :data:`CONFIG` run by Inspect on ``openai/fake-good``
(a .eval log) and ``openai/fake-bad`` (a .json log), two epochs each.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

from fakes import FakeProvider, FakeServer, last_user

# The export the fixtures were made from: the symmetry suite's identity task, its smoke slice
# (one family, four placements of the identity elements).
CONFIG = {"suites.symmetry": {"preset": "smoke", "tasks": ["identity"]}}


class TwoModels:
    """Answers by the request's model: ``fake-good`` sums right; ``fake-bad`` adds one when the
    sum starts with 0, and on its second call of a prompt with 0s in the middle gives no number."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.sent: list[tuple[str, str, str]] = []  # (model, prompt, reply) in order
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        reply = self._answer(body)
        with self.lock:
            self.sent.append((body["model"], last_user(body), reply))
        return reply

    def _answer(self, body: dict) -> str:
        text = last_user(body)
        with self.lock:
            self.calls[(body["model"], text)] += 1
            call = self.calls[(body["model"], text)]
        found = re.search(r"-?\d+(?:\s*[+-]\s*\d+)+", text)
        if found is None:
            return "I do not know."
        expr = found.group(0)
        value = eval(expr)  # noqa: S307 - digits and +/- only, matched above
        if body["model"] == "fake-bad":
            if expr.startswith("0"):
                value += 1
            elif re.search(r"1\+0\+.*\+1", expr) and call == 2:
                return "I would need to count these more carefully."
        return f"Adding them up.\nAnswer: {value}"


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def invoke(*args: str):
    """The CLI in-process; ``.said`` is its output with whitespace runs as one space (rich wraps
    long lines at the terminal's width)."""
    from flows.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, [str(a) for a in args])
    result.said = " ".join(result.output.split())
    return result


def exported(tmp_path: Path, sections: dict | None = None) -> Path:
    """A configuration with a warehouse under ``tmp_path`` (a path with a space) whose items
    (:data:`CONFIG`, or ``sections``) were exported, hence stored; returns the configuration."""
    from conftest import write_config

    config = write_config(tmp_path / "invarbench.toml",
                          {"warehouse": {"path": str(tmp_path / "ware house")}, **(sections or CONFIG)})
    result = invoke("export", "--format", "inspect", "--out", tmp_path / "inspect export", "-c", config)
    assert result.exit_code == 0, result.output
    return config


def lake(tmp_path: Path, sql: str, params: list | None = None, warehouse: str = "ware house") -> list[dict]:
    """Rows of a query over the lake of the warehouse under ``tmp_path``."""
    from tasks.lake.lake import Lake
    from tasks.lake.views import query

    con = Lake(str(tmp_path / warehouse / "lake")).connect()
    try:
        return query(con, sql, params)
    finally:
        con.close()


# The marts a foreign import must give exactly as a plain import of the same answers does.
ACCURACY = """SELECT model, task, variant, bin, n_scored, n_correct, n_wrong, n_unparsable, n_error, accuracy
              FROM accuracy_by_bin ORDER BY ALL"""
INVARIANCE = """SELECT model, task, k, n_units, n_complete, n_invariant, n_consistent, invariance_at_k,
                       consistency_at_k FROM invariance ORDER BY ALL"""


def plain_import_marts(tmp_path: Path, answers: list[dict]) -> dict[str, list[dict]]:
    """Import ``answers`` (model, item_id, sample_idx, text) the plain way (a CSV per model of
    the stored items' prompt, gold, family, variant, bin) into a second warehouse; its marts."""
    import csv

    from conftest import write_config

    items = {r["item_id"]: r for r in lake(tmp_path, "SELECT * FROM items")}
    config = write_config(tmp_path / "plain.toml", {"warehouse": {"path": str(tmp_path / "plain")}})
    for model in sorted({a["model"] for a in answers}):
        path = tmp_path / f"plain {model.replace('/', '_')}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["task", "family_id", "variant", "key_entities", "bin", "prompt", "target", "prediction"])
            for a in sorted((a for a in answers if a["model"] == model), key=lambda a: a["sample_idx"]):
                i = items[a["item_id"]]
                w.writerow([i["task"], i["family_id"], i["variant"], i["key_entities"], i["bin"], i["prompt"],
                            i["gold"], a["text"]])
        result = invoke("import-responses", path, "--model", model, "-c", config)
        assert result.exit_code == 0, result.output
    return {sql: lake(tmp_path, sql, warehouse="plain") for sql in (ACCURACY, INVARIANCE)}


def serve() -> FakeServer:
    """A started loopback server answering with :class:`TwoModels`."""
    return FakeServer(FakeProvider(responder=TwoModels())).__enter__()


def run_inspect(inspect_bin: str, task_file: Path, model: str, api_base: str, log_dir: Path, fmt: str,
                epochs: int = 2, env: dict[str, str] | None = None) -> Path:
    """Run ``inspect eval`` on ``task_file`` against ``api_base``, with ``env`` added to its
    environment; returns the log it wrote."""
    before = set(log_dir.glob(f"*.{fmt}")) if log_dir.exists() else set()
    # Inspect runs in its own environment: none of this process's import paths
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "OPENAI_API_KEY": "dummy", **(env or {})}
    done = subprocess.run([inspect_bin, "eval", task_file.name, "--model", model, "--model-base-url", api_base,
                    "-M", "responses_api=false", "--epochs", str(epochs), "--log-dir", str(log_dir),
                    "--log-format", fmt, "--display", "none"],
                          env=env, cwd=task_file.parent, timeout=600, capture_output=True, text=True)
    assert done.returncode == 0, f"inspect eval failed:\n{done.stdout}\n{done.stderr}"
    [log] = set(log_dir.glob(f"*.{fmt}")) - before
    return log


def main(inspect_bin: str, out: Path) -> None:
    """Export CONFIG's items and run Inspect on them for the committed fixtures."""
    import tempfile

    from conftest import write_config
    from flows.cli import app
    from typer.testing import CliRunner

    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp) / "c.toml", {"warehouse": {"path": f"{tmp}/wh"}, **CONFIG})
        result = CliRunner().invoke(app, ["export", "--format", "inspect", "--out", f"{tmp}/exp", "-c", str(config)])
        assert result.exit_code == 0, result.output
        server = serve()
        try:
            for model, fmt in (("openai/fake-good", "eval"), ("openai/fake-bad", "json")):
                run_inspect(inspect_bin, Path(tmp) / "exp" / "task.py", model, server.api_base, out, fmt)
        finally:
            server.__exit__(None, None, None)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
