"""What a sweep runs: the ``tasks`` key of a suite and the ``sweep --suite/--task/--dataset``
filters, in the configuration and through the CLI against a loopback fake provider."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from conftest import TEST_CLAIM_SETTLE_S, lake_files, run_cli, write_config
from fakes import FakeProvider, FakeServer
from flows.cli import app
from tasks.config import Config, load_config
from tasks.errors import ConfigError
from tasks.lake.lake import Lake
from tasks.suites import SUITES, suite_tasks

CSV = """id,category,euclid,coord,vector,answer
p1,length,"In triangle ABC, AB = 3, BC = 4 and angle ABC = 90°. Find AC.","A = (0, 0), B = (3, 0), C = (3, 4). Find |AC|.","Vectors a = (3, 0) and b = (0, 4). Find |a + b|.",5
p2,length,"A square has side 3. Find its diagonal.","Find the distance from (0, 0) to (3, 3).","Find |u| for u = (3, 3).",3*sqrt(2)
"""


def test_omitted_tasks_mean_every_task_and_an_empty_list_none(tmp_path):
    cfg = load_config(write_config(tmp_path / "c.toml", {
        "suites.lissard": {"preset": "smoke"},
        "suites.geometry": {"preset": "smoke", "tasks": []},
        "suites.symmetry": {"preset": "smoke", "tasks": ["closure", "identity"]},
    }))
    assert cfg.selected_tasks() == [("lissard", t) for t in suite_tasks("lissard")] + \
        [("symmetry", "closure"), ("symmetry", "identity")]


def test_select_restricts_to_what_the_filters_name(tmp_path):
    cfg = load_config(write_config(tmp_path / "c.toml", {
        "sweep": {"datasets": ["configured-ds"]},
        "suites.symmetry": {"preset": "smoke", "tasks": ["closure"]},
        "suites.symmetry.params.closure": {"n_max": 10},
        "suites.geometry": {"preset": "smoke", "tasks": []},
    }))
    assert cfg.select() is cfg
    only_ds = cfg.select(datasets=["ds1"])
    assert only_ds.selected_tasks() == [] and only_ds.sweep.datasets == ["ds1"]
    # a named suite runs its configured tasks, every task when it is not configured; `tasks = []`
    # means none here as in the sweep, so naming such a suite asks for a task
    suites = cfg.select(suites=["symmetry", "lissard"])
    assert suites.selected_tasks() == [("symmetry", "closure")] + [("lissard", t) for t in suite_tasks("lissard")]
    with pytest.raises(ConfigError, match=r"--suite geometry: the configuration runs none of its tasks \(tasks = \[\]\)"):
        cfg.select(suites=["geometry"])
    assert suites.sweep.datasets == []
    assert suites.task_params("symmetry", "closure")["n_max"] == 10  # configuration kept
    # a task narrows its suite; a bare name is resolved; an unconfigured suite runs its defaults
    tasks = cfg.select(suites=["geometry"], tasks=["area", "lissard.dyck", "symmetry.identity"])
    assert tasks.selected_tasks() == [("geometry", "area"), ("lissard", "dyck"), ("symmetry", "identity")]
    assert tasks.suites["lissard"].preset == "full" and tasks.suites["symmetry"].preset == "smoke"
    assert isinstance(tasks, Config) and tasks.resolved()["suites"]["geometry"]["tasks"] == ["area"]


def test_generate_reads_an_empty_task_list_as_the_sweep_does(tmp_path):
    """`tasks = []` runs none in `generate` too: without --task it is refused, with one it runs."""
    cfg = write_config(tmp_path / "c.toml", {"suites.lissard": {"preset": "smoke", "tasks": []}})
    out = tmp_path / "items.jsonl"
    refused = CliRunner().invoke(app, ["generate", "--suite", "lissard", "--out", str(out), "--config", str(cfg)])
    assert refused.exit_code == 2 and "runs none of its tasks" in refused.output and not out.exists()
    one = CliRunner().invoke(app, ["generate", "--suite", "lissard", "--task", "dyck", "--out", str(out),
                                   "--config", str(cfg)])
    assert one.exit_code == 0, one.output
    assert {line.count('"task": "dyck"') for line in out.read_text().splitlines()} == {1}


def test_select_names_bad_filters(tmp_path, monkeypatch):
    cfg = load_config(write_config(tmp_path / "c.toml", {"suites.symmetry": {"preset": "smoke"}}))
    with pytest.raises(ConfigError, match="--suite: unknown suite 'nosuch'"):
        cfg.select(suites=["nosuch"])
    with pytest.raises(ConfigError, match="--task nosuch: no suite has this task"):
        cfg.select(tasks=["nosuch"])
    with pytest.raises(ConfigError, match="--task geometry.dyck: unknown task 'dyck'"):
        cfg.select(tasks=["geometry.dyck"])
    monkeypatch.setitem(SUITES, "symmetry_again", SUITES["symmetry"])  # two suites with a closure task
    with pytest.raises(ConfigError, match="ambiguous.*symmetry.closure, symmetry_again.closure"):
        cfg.select(tasks=["closure"])


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_sweep_filters_through_the_cli(tmp_path):
    """An imported set runs alone with --dataset; --task runs one task; a bad filter exits 2."""
    source = tmp_path / "set.csv"
    source.write_text(CSV, encoding="utf-8")
    state = FakeProvider(responder=lambda body: "Answer: 5")
    with FakeServer(state) as server:
        cfg = write_config(tmp_path / "cfg.toml", {
            "warehouse": {"path": str(tmp_path / "wh")},
            "sweep": {"models": ["fake"], "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S},
            'models."fake"': {"model": "openai/fake", "api_base": server.api_base, "retries": 0},
            "suites.symmetry": {"preset": "smoke", "tasks": ["closure"]},
            "suites.geometry": {"preset": "smoke"},
        })
        imported = run_cli("import-families", str(source), "--config", str(cfg))
        assert imported.returncode == 0, imported.stderr
        dataset = re.search(r"as dataset (\w+)", imported.stdout).group(1)

        alone = run_cli("sweep", "--config", str(cfg), "--dataset", dataset)
        assert alone.returncode == 0, alone.stderr
        assert len(state.seen) == 6  # two families x three variants, nothing configured
        one_task = run_cli("sweep", "--config", str(cfg), "--task", "symmetry.closure")
        assert one_task.returncode == 0, one_task.stderr
        files = lake_files(tmp_path / "wh")
        bad = run_cli("sweep", "--config", str(cfg), "--task", "nosuch")
        assert bad.returncode == 2 and "--task nosuch: no suite has this task" in bad.stderr
        assert lake_files(tmp_path / "wh") == files  # nothing written
    runs = Lake(str(tmp_path / "wh" / "lake")).read("""
        SELECT r.run_id, list(DISTINCT i.dataset_id ORDER BY i.dataset_id) AS datasets,
               list(DISTINCT i.suite || '.' || i.task ORDER BY i.suite || '.' || i.task) AS tasks, count(*) AS n
        FROM run_trials r JOIN trial_scores t USING (trial_id) JOIN items i ON i.item_id = t.item_id
        GROUP BY r.run_id ORDER BY min(t.scored_at)""")
    assert [(r["datasets"] == [dataset], r["n"]) for r in runs][0] == (True, 6)
    assert runs[1]["tasks"] == ["symmetry.closure"] and dataset not in runs[1]["datasets"]
    smoke_closure = len(state.seen) - 6
    assert runs[1]["n"] == smoke_closure > 0
