"""The materialised views (issue #27): every mart read through the lake tables that `refresh` keeps
up to date equals the same mart computed from the raw lake, on random lakes (seeded: several
models, samples, parser and scorer versions, rescoring, reparsing, imports, overlapping runs, runs
answered from the ledger, late answers, items stored after their scores), after each incremental
refresh and after a full one; an interrupted refresh leaves every table whole (its previous rows,
or its new ones: each table is a transaction) and the views reading the raw lake, and the next
completes it; the views read the raw lake while a source changed since the last refresh; old lakes
open and refresh to the same marts."""

from __future__ import annotations

import contextlib
import json
import math
import pickle
import random
import shutil
import subprocess
import sys

import duckdb
import pytest
from conftest import REPO, process_env
from lake_fixtures import LakeBuilder
from test_duckdb_pin import FIXTURE, assert_same_marts

from tasks.lake import refresh as refresh_module
from tasks.lake import slices
from tasks.lake.engine import connect
from tasks.lake.lake import Lake
from tasks.lake.materialised import is_current, materialised_names
from tasks.lake.refresh import refresh
from tasks.lake.sql import SQL_DIR, materialised_statements, sql_defines
from tasks.lake.views import query

# Every view of sql/marts (table macros are read through the views that call them with defaults).
MARTS = sorted(name for path in (SQL_DIR / "marts").glob("*.sql") for name in sql_defines(path)
               if "CREATE OR REPLACE VIEW" in path.read_text(encoding="utf-8"))
# What the marts read between the materialised views and themselves, with arguments the marts do
# not pass: a variant list or a run is computed from family_trials, not read from family_units or
# family_unit_counts.
BETWEEN = ["paired_outcomes", "family_units_over()", "family_units_over(variant_list := ['begin', 'end'])",
           "family_units_over(for_run := 'run2')", "invariance_over(variant_list := ['coord', 'euclid'])",
           "family_unit_counts_of(for_run := 'run2')", "invariance_over(for_run := 'run2', pool_tasks := true)",
           "flip_patterns_over(variant_list := ['end', 'begin'], pool_tasks := true)"]
FAMILIES = [("symmetry", "identity", ["end", "begin", "middle"], "integer"),
            ("geometry", "length", ["euclid", "coord", "vector"], "math")]


def _rows(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple]:
    def plain(value):  # sums in another order differ in the last bits; NaN is never equal to itself
        return ("nan" if math.isnan(value) else round(value, 9)) if isinstance(value, float) else value
    return sorted((tuple(plain(v) for v in row) for row in con.execute(f"SELECT * FROM {relation}").fetchall()), key=repr)


def _connection(lake: Lake, materialised: bool) -> duckdb.DuckDBPyConnection:
    con = connect(limits=lake.limits)
    lake.attach(con, read_only=True)
    lake.create_views(con, None, materialised=materialised)
    return con


def assert_materialised_equals_raw(lake: Lake, opened: tuple | None = None,
                                   raw_rows: dict[str, list[tuple]] | None = None) -> dict[str, list[tuple]]:
    """Each materialised view, what the marts read of them (:data:`BETWEEN`) and every mart, read
    through the lake tables, as from the raw lake; returns the raw side's rows per relation.

    ``opened``: the (materialised, raw) connections to read through, open since an earlier check
    (each query reads the lake's newest snapshot; creating the views is most of a check's cost);
    by default opened for this check. ``raw_rows``: the raw side's rows of an earlier check, when
    only refreshes have written to the lake since (they write the materialised tables alone, so
    the raw lake is the same): not read again, as a raw query costs about 80 ms of CPU (3 ms of
    them reading the tables, the rest the views above them) against 30 ms through the tables."""
    with contextlib.ExitStack() as stack:
        if opened is None:
            sides = (True,) if raw_rows else (True, False)
            opened = [stack.enter_context(contextlib.closing(_connection(lake, m))) for m in sides]
        mat, raw = (*opened, None)[:2]
        assert is_current(mat)
        raw_rows = dict(raw_rows or {})
        for relation in [*materialised_names(), *BETWEEN, *MARTS]:
            if relation not in raw_rows:
                raw_rows[relation] = _rows(raw, relation)
            assert _rows(mat, relation) == raw_rows[relation], relation
        return raw_rows


class RandomLake:
    """A lake written by random events, each one or a few commits, as sweeps, rescores and imports write."""

    def __init__(self, root, seed: int):
        self.rng = random.Random(seed)
        self.b = LakeBuilder(root)
        self.models = [f"m{i}" for i in range(self.rng.randint(2, 3))]
        self.items: list[tuple[str, str, str]] = []  # (item_id, answer_type, gold)
        self.trials: dict[str, dict] = {}  # trial_id -> what a rescore needs
        self.late: list[dict] = []  # responses of requests sent earlier, not stored yet
        self.runs = 0

    def new_items(self) -> list[tuple[str, str, str]]:
        suite, task, variants, answer_type = self.rng.choice(FAMILIES)
        family, style, seed = f"f{len(self.items)}", self.rng.choice(["direct", "json"]), self.rng.randint(0, 1)
        gold = str(self.rng.randint(1, 9))
        made = [(self.b.item(family, v, suite=suite, task=task, prompt_style=style, seed=seed, gold=gold,
                             answer_type=answer_type, category="c"), answer_type, gold)
                for v in self.rng.sample(variants, self.rng.randint(1, len(variants)))]
        self.items += made
        return made

    def answer(self, trial: dict, version: int) -> None:
        """A parse and a score of the trial's response (a value among the gold, a wrong one, none)."""
        value = self.rng.choice([trial["gold"], trial["gold"], "0", None])
        canonical = None if value is None else self.rng.choice([value, value + ".0", None])
        self.b.rows["parses"].append({
            "response_id": trial["response_id"], "request_id": trial["request_id"], "answer_type": trial["type"],
            "parser_version": f"{trial['type']}/{version}", "status": "ok" if value else "unparsable",
            "value": value, "extracted": value, "canonical": canonical, "created_at": self.b.tick()})
        self.score(trial, version, "unparsable" if value is None else "correct" if value == trial["gold"] else "wrong",
                   value)

    def score(self, trial: dict, version: int, status: str, predicted: str | None) -> None:
        self.b.score(trial["trial_id"], trial["item_id"], trial["model"], status, predicted,
                     sample_idx=trial["sample"], run_id=trial["run"], answer_type=trial["type"],
                     scorer_version=f"score/{version}+{trial['type']}/{version}")
        self.b.rows["scores"][-1]["response_ids"] = json.dumps([trial["response_id"]] if trial.get("ok") else [])

    def sweep(self, model: str | None = None) -> None:
        """A run over some stored and some new items; a few answers come later (a batch job)."""
        self.runs += 1
        run, items = f"run{self.runs}", self.new_items()
        if self.items:
            items += self.rng.sample(self.items, min(len(self.items), self.rng.randint(1, 6)))
        for item_id, answer_type, gold in items:
            for m in [model] if model else self.rng.sample(self.models, self.rng.randint(1, len(self.models))):
                for sample in range(self.rng.randint(1, 2)):
                    ok = self.rng.random() > 0.1
                    trial_id, request_id, response_id = self.b.answered(
                        item_id, m, "Answer", sample_idx=sample, run_id=run, status="ok" if ok else "error")
                    trial = {"trial_id": trial_id, "request_id": request_id, "response_id": response_id,
                             "item_id": item_id, "model": m, "sample": sample, "run": run, "type": answer_type,
                             "gold": gold, "ok": ok}
                    self.trials[trial_id] = trial
                    if ok and self.rng.random() < 0.15:
                        self.late.append(self.b.rows["responses"].pop())
                        continue
                    self.answer(trial, 1) if ok else self.score(trial, 1, "error", None)
        if self.rng.random() < 0.2:  # the items stored after the answers (an import's order)
            held = self.b.rows.pop("items", [])
            self.b.flush()
            self.b.rows["items"] = held
        self.b.flush()

    def cached_sweep(self) -> None:
        """A run whose trials were answered before (in the ledger): its requests, nothing else."""
        self.runs += 1
        for trial in self.rng.sample(list(self.trials.values()), min(len(self.trials), self.rng.randint(1, 6))):
            self.b.answered(trial["item_id"], trial["model"], None, sample_idx=trial["sample"], run_id=f"run{self.runs}")
            self.b.rows["responses"].pop()
        self.b.flush()

    def rescore(self, parse_only: bool = False) -> None:
        """New parses (and scores) of a sample of stored answers, with a newer version."""
        answered = [t for t in self.trials.values() if t["ok"]]
        for trial in self.rng.sample(answered, min(len(answered), self.rng.randint(1, 8))):
            self.answer(trial, 2)
            if parse_only:
                self.b.rows["scores"].pop()
        self.b.flush()

    def late_answers(self) -> None:
        for response in self.late:
            response["created_at"] = self.b.tick()
            self.b.rows["responses"].append(response)
            trial = next(t for t in self.trials.values() if t["response_id"] == response["response_id"])
            self.answer(trial, 1)
        self.late = []
        self.b.flush()

    def event(self) -> None:
        """One of the things that happen to a lake, at random."""
        kind = self.rng.choice(["sweep", "sweep", "import", "cached", "rescore", "reparse", "late"])
        if kind == "sweep":
            self.sweep()
        elif kind == "cached":
            self.cached_sweep()
        elif kind == "import":
            self.sweep(model="imported")
        elif kind in ("rescore", "reparse"):
            self.rescore(parse_only=kind == "reparse")
        else:
            self.late_answers()


@pytest.mark.slow  # a random lake swept, imported and rescored per seed: 40-50 s of CPU each
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_mart_through_the_materialised_views_equals_the_mart_from_the_raw_lake(tmp_path, monkeypatch, seed):
    made = RandomLake(tmp_path, seed)
    made.sweep()
    with contextlib.ExitStack() as stack:
        opened = None  # the views that read the tables are made once the first refresh has built them
        for step in range(5):
            for _ in range(made.rng.randint(1, 3)):
                made.event()
            done = refresh(made.b.lake)
            assert done["full"] is (step == 0)  # the first builds the tables, the next take in what changed
            assert step == 0 or sum(done["keys"].values()) > 0
            # where the time went: each table, with its seconds (what `invarbench refresh` prints)
            assert list(done["tables"]) == materialised_names()
            assert all(t["seconds"] >= 0 and t["cpu_seconds"] >= 0 for t in done["tables"].values())
            opened = opened or tuple(stack.enter_context(contextlib.closing(_connection(made.b.lake, m)))
                                     for m in (True, False))
            raw_rows = assert_materialised_equals_raw(made.b.lake, opened)
        # from here on only refreshes write (the materialised tables): the raw side stays as read
        assert refresh(made.b.lake, full=True)["full"]
        assert_materialised_equals_raw(made.b.lake, opened, raw_rows)
        # a full rebuild in slices of keys (as a large lake's) gives the same rows: slices of a hash
        # of the key where a scope has many keys (responses, trials), of whole keys where it has few
        monkeypatch.setattr(refresh_module, "ROWS_PER_SLICE", 3)
        monkeypatch.setattr(slices, "GROUPED_KEYS", 20)
        done = refresh(made.b.lake, full=True)
        key = {next(iter(stmt.defines)): ", ".join(stmt.key) for stmt in materialised_statements()}
        scopes = {name: made.b.lake.read(f"SELECT count(*) AS n, count(DISTINCT ({key[name]})) AS k FROM {scope}")[0]
                  for name, (_, scope) in refresh_module.SCOPES.items()}
        # every table whose scope holds more than one slice's rows, of more than one key, was built in slices
        assert all(done["slices"][name] > 1 for name, s in scopes.items() if s["n"] > 3 and s["k"] > 1), (done, scopes)
        assert sum(n > 1 for n in done["slices"].values()) >= len(done["slices"]) // 2
        assert_materialised_equals_raw(made.b.lake, opened, raw_rows)
    assert_materialised_equals_raw(made.b.lake, raw_rows=raw_rows)  # and through views made afresh


def _snapshots(lake: Lake) -> int:
    with contextlib.closing(connect()) as con:
        lake.attach(con, read_only=True)
        return con.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0]


def _tables(lake: Lake) -> dict[str, list[tuple]]:
    with contextlib.closing(connect()) as con:
        lake.attach(con, read_only=True)
        return {name: _rows(con, f"lake.main.{name}") for name in materialised_names()}


@pytest.mark.slow  # a random lake and three refreshes (about 10 s of CPU)
def test_a_new_lake_s_first_refresh_is_one_commit_of_the_tables_the_general_path_builds(tmp_path, monkeypatch):
    """A lake's first refresh builds every table and the mark in one commit, with the rows that
    creating them empty and rebuilding each in a transaction of its own gives (and a lake larger
    than a slice, or with more rows than FIRST_BUILD_ROWS, takes that path)."""
    made = RandomLake(tmp_path / "one", 5)
    made.sweep()
    made.sweep(model="imported")
    made.rescore()
    for side in ("general", "sliced", "larger"):
        shutil.copytree(tmp_path / "one", tmp_path / side)
    before = _snapshots(made.b.lake)
    done = refresh(made.b.lake)
    assert done["full"] and list(done["tables"]) == materialised_names()
    assert _snapshots(made.b.lake) == before + 1  # the tables and the mark: one commit
    with contextlib.closing(_connection(made.b.lake, True)) as con:
        assert is_current(con)  # the views read the tables from now on
    built = _tables(made.b.lake)
    assert all(built[name] for name in ["latest_parses", "trial_scores", "family_trials", "item_outcomes"])

    general = Lake(str(tmp_path / "general" / "lake"))
    monkeypatch.setattr(refresh_module, "_first_build", lambda lake, con, have: None)
    assert refresh(general)["full"]
    assert _snapshots(general) > before + 2  # the general path: a commit per table
    assert _tables(general) == built
    monkeypatch.undo()

    sliced_lake = Lake(str(tmp_path / "sliced" / "lake"))
    # a lake larger than a slice (so larger than a first build too): the general path, sliced
    monkeypatch.setattr(refresh_module, "ROWS_PER_SLICE", 3)
    monkeypatch.setattr(refresh_module, "FIRST_BUILD_ROWS", 3)
    assert max(refresh(sliced_lake)["slices"].values()) > 1
    assert _snapshots(sliced_lake) > before + 2
    assert _tables(sliced_lake) == built
    monkeypatch.undo()

    larger = Lake(str(tmp_path / "larger" / "lake"))
    monkeypatch.setattr(refresh_module, "FIRST_BUILD_ROWS", 3)  # a first sweep of many items: a commit per table
    assert refresh(larger)["full"]
    assert _snapshots(larger) > before + 2
    assert _tables(larger) == built


def _view_sql(lake: Lake, view: str) -> str:
    with lake.connect(view) as con:
        return query(con, "SELECT sql FROM duckdb_views() WHERE view_name = ?", [view])[0]["sql"]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_an_interrupted_refresh_leaves_the_previous_state_and_the_next_completes_it(tmp_path, monkeypatch):
    made = RandomLake(tmp_path, 7)
    made.sweep()
    refresh(made.b.lake)
    assert "lake_table('family_trials')" in _view_sql(made.b.lake, "family_trials")  # current: the views read the tables
    with contextlib.closing(_connection(made.b.lake, True)) as con:
        before = {name: _rows(con, name) for name in materialised_names()}
    # a sweep of a new model: every trial, response and family of it is a new key (its rows are all
    # among the rows inserted since the mark), which the failed refresh leaves in the tables before
    # family_trials and the next must not store twice
    made.sweep(model="m9")
    # the views read the raw lake while a source changed since the last refresh: the same answers
    assert "lake_table('family_trials')" not in _view_sql(made.b.lake, "family_trials")
    # a later view's keys cannot be computed: the refresh fails after changing the tables before it
    monkeypatch.setitem(refresh_module.CHANGED_KEYS, "family_trials", "SELECT no_such_column FROM changed_scores")
    with pytest.raises(duckdb.Error):
        refresh(made.b.lake)
    names = materialised_names()
    failed = names.index("family_trials")
    with contextlib.closing(_connection(made.b.lake, True)) as con, \
            contextlib.closing(_connection(made.b.lake, False)) as raw:
        assert not is_current(con)  # the mark did not move: the views read the raw lake
        after = {name: _rows(con, name) for name in names}
        # each table is its own transaction: the failed one and those after it hold their previous
        # rows; each before it, its rows from the raw lake (committed whole, not some of its keys)
        assert {name: after[name] for name in names[failed:]} == {name: before[name] for name in names[failed:]}
        assert {name: after[name] for name in names[:failed]} == {name: _rows(raw, name) for name in names[:failed]}
        assert any(after[name] != before[name] for name in names[:failed])
    monkeypatch.undo()
    assert refresh(made.b.lake)["full"] is False
    assert_materialised_equals_raw(made.b.lake)
    assert "lake_table('family_trials')" in _view_sql(made.b.lake, "family_trials")


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
@pytest.mark.parametrize("fixture", ["old_warehouse", "ducklake_warehouse"])
def test_lakes_of_earlier_releases_refresh_to_the_marts_they_gave(tmp_path, fixture):
    folder = FIXTURE.parent / fixture
    shutil.copytree(folder / "warehouse", tmp_path / "warehouse")
    lake = Lake(str(tmp_path / "warehouse" / "lake"))
    marts = json.loads((folder / "marts.json").read_text())["marts"]
    assert refresh(lake)["full"]  # the first refresh creates the materialised tables
    with contextlib.closing(_connection(lake, True)) as con:
        assert is_current(con)
        assert_same_marts(con, marts)
    assert_materialised_equals_raw(lake)


@pytest.mark.slow  # a refresh process (seconds of start-up)
def test_a_refresh_waits_for_another_process_s_refresh_of_the_lake(tmp_path):
    """Two sweeps of one lake that end together refresh it together. Each table being a
    transaction of its own, both planned from the same mark would insert a new model's rows, and
    DuckLake takes two appends as no conflict: a refresh waits while another process holds the
    lake's refresh lock, then the one after it has nothing to do."""
    made = RandomLake(tmp_path, 3)
    made.sweep()
    refresh(made.b.lake)
    made.sweep(model="m9")  # every trial and family of it a new key
    child = ("import logging, pickle, sys; logging.basicConfig(level=logging.INFO); "
             "from tasks.lake.refresh import refresh; "
             "print(sum(refresh(pickle.loads(bytes.fromhex(sys.argv[1])))['keys'].values()))")
    with made.b.lake.exclusive("refresh"):  # another process's refresh, as it were
        proc = subprocess.Popen([sys.executable, "-c", child, pickle.dumps(made.b.lake).hex()], cwd=REPO,
                                env=process_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = []
        for line in proc.stderr:  # until it says it waits (or ends without waiting: the test fails)
            seen.append(line)
            if "waiting for another process's refresh" in line:
                break
        assert proc.poll() is None, "".join(seen)[-2000:]  # still waiting, the lock being held
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert int(out.split()[-1]) > 0  # it took in the new model's rows once the lock was free
    assert sum(refresh(made.b.lake)["keys"].values()) == 0  # and the refresh after it found them current
    assert_materialised_equals_raw(made.b.lake)
