"""tasks/analysis/ (stats.py, bootstrap.py, regression.py): the bootstrap and the regressions, on hand-built lakes,
checked against statsmodels fitted directly and against hand counts."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from lake_fixtures import LakeBuilder, status_of
from tasks.analysis import bootstrap, stats
from tasks.lake.lake import Lake

GEO = ["euclid", "coord", "vector"]


def regression_lake(tmp_path, models=("m1", "m2"), n_families: int = 60, seed: int = 11) -> tuple[LakeBuilder, pd.DataFrame]:
    """Geometry-like families with features that drive correctness; returns the lake and the data as written."""
    rng = random.Random(seed)
    lake, rows = LakeBuilder(tmp_path), []
    for f in range(n_families):
        for variant in GEO:
            tokens, density, numbers = rng.randint(10, 80), round(rng.uniform(0.02, 0.3), 4), rng.randint(1, 9)
            item = lake.item(f"F{f}", variant, suite="geometry", task="length", category="length",
                             n_tokens=tokens, symbol_density=density, n_numbers=numbers)
            for m, model in enumerate(models):
                logit = 2.0 - 0.03 * tokens - 4 * density + 0.1 * numbers - 0.6 * GEO.index(variant) - 0.5 * m
                correct = rng.random() < 1 / (1 + np.exp(-logit))
                lake.trial(item, model, status_of(correct), "5" if correct else "4")
                rows.append({"model": model, "variant": variant, "n_tokens": tokens, "symbol_density": density,
                             "n_numbers": numbers, "correct": int(correct), "family_id": f"F{f}"})
    lake.flush()
    return lake, pd.DataFrame(rows)


def _terms(lake: LakeBuilder, **where) -> dict[str, dict]:
    clause = " AND ".join(f"{k} = ?" for k in where)
    rows = lake.query(f"SELECT * FROM computed_regression WHERE status = 'ok' AND {clause}", list(where.values()))
    return {r["term"]: r for r in rows}


def test_logistic_regression_per_model_matches_statsmodels(tmp_path):
    lake, data = regression_lake(tmp_path)
    stats.compute_stats(lake.lake, resamples=50, seed=0)
    direct = smf.logit("correct ~ C(variant, Treatment('euclid')) + n_tokens + symbol_density + n_numbers",
                       data[data["model"] == "m1"]).fit(disp=0)
    ours = _terms(lake, model="m1", fit="per_model")
    names = {"Intercept": "intercept", "C(variant, Treatment('euclid'))[T.coord]": "variant[coord]",
             "C(variant, Treatment('euclid'))[T.vector]": "variant[vector]",
             "n_tokens": "n_tokens", "symbol_density": "symbol_density", "n_numbers": "n_numbers"}
    assert set(ours) == set(names.values())
    for theirs, mine in names.items():
        assert ours[mine]["coef"] == pytest.approx(direct.params[theirs], rel=1e-6)
        assert ours[mine]["std_err"] == pytest.approx(direct.bse[theirs], rel=1e-6)
        assert ours[mine]["p_value"] == pytest.approx(direct.pvalues[theirs], rel=1e-5)
        assert ours[mine]["n"] == len(data[data["model"] == "m1"])
    assert ours["intercept"]["reference_variant"] == "euclid"


def test_pooled_regression_has_model_fixed_effects(tmp_path):
    lake, data = regression_lake(tmp_path)
    stats.compute_stats(lake.lake, resamples=50, seed=0)
    direct = smf.logit("correct ~ C(variant, Treatment('euclid')) + n_tokens + symbol_density + n_numbers"
                       " + C(model, Treatment('m1'))", data).fit(disp=0)
    ours = _terms(lake, model="(all)", fit="pooled")
    assert ours["model[m2]"]["coef"] == pytest.approx(direct.params["C(model, Treatment('m1'))[T.m2]"], rel=1e-6)
    assert ours["n_tokens"]["std_err"] == pytest.approx(direct.bse["n_tokens"], rel=1e-6)
    assert ours["model[m2]"]["n"] == len(data)


def test_unfittable_regressions_are_skipped_with_a_reason(tmp_path):
    lake = LakeBuilder(tmp_path)
    for f in range(6):  # m-all: always correct (one class); m-sep: correct exactly when n_tokens < 30
        for variant, tokens in (("a", 10 + (3 * f) % 7), ("b", 40 + (5 * f) % 11)):
            item = lake.item(f"F{f}", variant, task="identity", n_tokens=tokens, n_numbers=f,
                             symbol_density=0.05 + 0.03 * ((7 * f) % 5))
            lake.trial(item, "m-all", "correct", "5")
            lake.trial(item, "m-sep", status_of(tokens < 30), "5" if tokens < 30 else "4")
    lake.flush()
    summary = stats.compute_stats(lake.lake, resamples=20, seed=0)
    reasons = {(s["model"]): s["reason"] for s in summary["skipped_regressions"]}
    assert reasons["m-all"].startswith("one outcome class only")
    assert "separation" in reasons["m-sep"]
    rows = lake.query("SELECT model, status, reason, term FROM computed_regression WHERE model = 'm-all'")
    assert rows == [{"model": "m-all", "status": "skipped", "reason": reasons["m-all"], "term": None}]


def _interval_rows(lake: LakeBuilder, scope: str = "all") -> dict[tuple, tuple]:
    rows = lake.query("SELECT * FROM computed_bootstrap WHERE scope = ?", [scope])
    return {(r["metric"], r["model"], r["task"], r["category"], r["variant"], r["variant_b"], r["bin"]):
            (r["estimate"], r["ci_lo"], r["ci_hi"]) for r in rows}


def test_bootstrap_is_reproducible_for_a_seed_and_differs_for_another(tmp_path):
    lake, _ = regression_lake(tmp_path, n_families=30)
    stats.compute_stats(lake.lake, resamples=200, seed=1)
    first = _interval_rows(lake)
    stats.compute_stats(lake.lake, resamples=200, seed=1)
    again = _interval_rows(lake)
    stats.compute_stats(lake.lake, resamples=200, seed=2)
    other = _interval_rows(lake)
    assert first == again and len(first) > 10
    assert first.keys() == other.keys()
    assert any(first[k][1:] != other[k][1:] for k in first)
    assert all(first[k][0] == other[k][0] for k in first)  # estimates do not depend on the seed


def test_bootstrap_estimates_and_gap(tmp_path):
    lake, data = regression_lake(tmp_path, models=("m1",), n_families=40)
    stats.compute_stats(lake.lake, resamples=300, seed=3)
    rows = _interval_rows(lake)
    acc = data.groupby("variant")["correct"].mean()
    (estimate, lo, hi) = rows[("gap", "m1", "length", None, "euclid", "coord", None)]
    assert estimate == acc["euclid"] - acc["coord"]  # unrounded difference of the two accuracies
    assert lo <= estimate <= hi
    [by_bin] = lake.query("SELECT accuracy FROM accuracy_by_bin WHERE variant = 'vector'")
    assert rows[("accuracy", "m1", "length", None, "vector", None, "5-30")][0] == pytest.approx(by_bin["accuracy"])


def test_stored_intervals_are_the_class_bootstrap_of_the_per_family_arrays(tmp_path):
    """SQL counts the classes (sql/intermediate/family_cell_classes.sql): the stored accuracy and gap
    intervals are, to the bit, family_bootstrap over the per-family arrays counted here from the
    trials as written, with the estimate's stream."""
    lake, data = regression_lake(tmp_path, models=("m1",), n_families=40)
    stats.compute_stats(lake.lake, resamples=300, seed=3)
    stored = {(r["metric"], r["variant"], r["variant_b"]): (r["ci_lo"], r["ci_hi"], r["n_valid_resamples"])
              for r in lake.query("SELECT * FROM computed_bootstrap WHERE metric IN ('accuracy', 'gap')")}
    per_family = data.pivot_table(index="family_id", columns="variant", values="correct", aggfunc=["sum", "count"])
    part = ("m1", "geometry", "length")
    for a, b in [("euclid", "coord"), ("euclid", "vector"), ("coord", "vector")]:
        arrays = [per_family[(f, v)].to_numpy(float) for v in (a, b) for f in ("sum", "count")]
        rng = bootstrap.estimate_rng(3, ("gap", *part, "direct", a, b))
        assert stored[("gap", a, b)] == bootstrap.family_bootstrap(bootstrap.gap, arrays, 300, rng, 0.95)
    for v in GEO:
        arrays = [per_family[(f, v)].to_numpy(float) for f in ("sum", "count")]
        rng = bootstrap.estimate_rng(3, ("accuracy", *part, v, "direct", "5-30"))
        assert stored[("accuracy", v, None)] == bootstrap.family_bootstrap(bootstrap.ratio, arrays, 300, rng, 0.95)


def _direct_gap_interval(data: pd.DataFrame, a: str, b: str, resamples: int, seed: int) -> tuple[float, float]:
    """The family bootstrap of a gap written out with numpy alone: multinomial draw counts per
    family, draw-weighted sums, the 2.5th and 97.5th percentiles."""
    per_family = data.pivot_table(index="family_id", columns="variant", values="correct", aggfunc=["sum", "count"])
    num, den = per_family["sum"][[a, b]].to_numpy(float), per_family["count"][[a, b]].to_numpy(float)
    n = len(per_family)
    draws = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=resamples)
    ratios = (draws @ num) / (draws @ den)
    lo, hi = np.percentile(ratios[:, 0] - ratios[:, 1], [2.5, 97.5])
    return float(lo), float(hi)


def test_bootstrap_agrees_with_a_direct_numpy_bootstrap(tmp_path):
    """Independent of the random path: the stored gap interval matches a numpy-only bootstrap of
    the same data within Monte Carlo error (about 0.006 per endpoint at 4000 resamples)."""
    lake, data = regression_lake(tmp_path, models=("m1",), n_families=40)
    stats.compute_stats(lake.lake, resamples=4000, seed=5)
    gaps = lake.query("SELECT * FROM computed_bootstrap WHERE metric = 'gap'")
    rows = {(r["variant"], r["variant_b"]): r for r in gaps}
    assert set(rows) == {("euclid", "coord"), ("euclid", "vector"), ("coord", "vector")}
    for (a, b), row in rows.items():
        lo, hi = _direct_gap_interval(data, a, b, 4000, seed=99)
        assert row["n_valid_resamples"] == 4000
        assert row["ci_hi"] - row["ci_lo"] > 0.1
        assert row["ci_lo"] == pytest.approx(lo, abs=0.03) and row["ci_hi"] == pytest.approx(hi, abs=0.03)


def test_undefined_resamples_are_left_out_and_counted(tmp_path):
    """coord is scored in one of four families: a resample that misses it (probability (3/4)^4)
    has no coord accuracy, so no gap; those resamples are dropped from the interval and counted."""
    lake = LakeBuilder(tmp_path)
    for f in range(4):
        for variant in ("euclid", "coord")[: 2 if f == 0 else 1]:
            correct = f < 2
            lake.trial(lake.item(f"F{f}", variant), "m1", status_of(correct), "5" if correct else "4")
    lake.flush()
    stats.compute_stats(lake.lake, resamples=4000, seed=0)
    rows = {(r["metric"], r["variant"]): r for r in lake.query("SELECT * FROM computed_bootstrap")}
    gap_row = rows[("gap", "euclid")]
    expected = 4000 * (1 - 0.75**4)
    assert abs(gap_row["n_valid_resamples"] - expected) < 5 * np.sqrt(expected * 0.75**4)
    assert gap_row["estimate"] == pytest.approx(0.5 - 1.0)
    # coord is always correct where drawn, euclid's accuracy over four families ranges over [0, 1]
    assert -1.0 <= gap_row["ci_lo"] < gap_row["estimate"] < gap_row["ci_hi"] <= 0.0
    # one family resamples to itself: a point interval, every resample defined
    coord = rows[("accuracy", "coord")]
    assert (coord["estimate"], coord["ci_lo"], coord["ci_hi"], coord["n_valid_resamples"]) == (1.0, 1.0, 1.0, 4000)


def test_invariance_intervals_count_complete_families(tmp_path):
    lake = LakeBuilder(tmp_path)
    for f in range(8):
        for variant in GEO[: 2 if f == 7 else 3]:  # F7 lacks vector
            item = lake.item(f"F{f}", variant, suite="geometry", task="length", category="length")
            correct = f < 4 or variant == "euclid"
            lake.trial(item, "m1", status_of(correct), "5" if correct else "4")
    lake.flush()
    stats.compute_stats(lake.lake, resamples=100, seed=0)
    rows = {(r["metric"], r["task"]): r for r in lake.query(
        "SELECT * FROM computed_bootstrap WHERE metric IN ('invariance', 'consistency')")}
    inv = rows[("invariance", "length")]
    assert (inv["k"], inv["n_units"], inv["n_excluded"], inv["n_families"]) == (3, 7, 1, 7)
    assert inv["estimate"] == pytest.approx(4 / 7) and inv["variant"] == "euclid,coord,vector"
    assert rows[("consistency", "length")]["estimate"] == pytest.approx(4 / 7)
    assert rows[("invariance", "(all)")]["estimate"] == pytest.approx(4 / 7)  # pooled over the suite's tasks
    [view] = lake.query("SELECT invariance_at_k, consistency_at_k FROM invariance")
    assert view == {"invariance_at_k": pytest.approx(4 / 7), "consistency_at_k": pytest.approx(4 / 7)}


def test_compute_stats_is_robust_to_tiny_and_empty_data(tmp_path):
    empty = LakeBuilder(tmp_path / "empty")
    summary = stats.compute_stats(empty.lake, resamples=10)
    assert (summary["bootstrap_rows"], summary["regression_rows"]) == (0, 0)
    one = LakeBuilder(tmp_path / "one")
    one.trial(one.item("F"), "m1", "error")
    one.flush()
    summary = stats.compute_stats(one.lake, resamples=10)
    [row] = one.query("SELECT metric, estimate, ci_lo, n_error FROM computed_bootstrap")
    assert row == {"metric": "accuracy", "estimate": None, "ci_lo": None, "n_error": 1}
    assert [s["reason"] for s in summary["skipped_regressions"]] == ["no scored trials", "one model only: nothing to pool"]


def test_run_scope_uses_only_that_runs_trials(tmp_path):
    lake = LakeBuilder(tmp_path)
    lake.trial(lake.item("F1"), "m1", "correct", "5", run_id="r1")
    lake.trial(lake.item("F2"), "m1", "wrong", "4", run_id="r2")
    lake.flush()
    stats.compute_stats(lake.lake, run_id="r1", resamples=10)
    stats.compute_stats(lake.lake, resamples=10)
    scoped = lake.query("SELECT scope, estimate, n_scored FROM computed_bootstrap WHERE metric = 'accuracy' ORDER BY scope")
    assert scoped == [{"scope": "all", "estimate": 0.5, "n_scored": 2}, {"scope": "r1", "estimate": 1.0, "n_scored": 1}]


def test_a_stored_computation_is_current_until_what_it_read_changes(tmp_path):
    lake = LakeBuilder(tmp_path)
    for family in ("F1", "F3"):  # two files per table
        lake.trial(lake.item(family), "m1", "correct", "5")
        lake.flush()
    assert stats.stored_computation(lake.lake, resamples=10, seed=0) is None  # nothing computed yet
    summary = stats.compute_stats(lake.lake, resamples=10, seed=0)
    assert stats.stored_computation(lake.lake, resamples=10, seed=0) == summary["computation_id"]
    assert stats.stored_computation(lake.lake, resamples=20, seed=0) is None  # other settings
    assert stats.stored_computation(lake.lake, resamples=10, seed=1) is None
    stats.compute_stats(lake.lake, run_id="r1", resamples=10, seed=0)  # another scope changes nothing
    assert stats.stored_computation(lake.lake, resamples=10, seed=0) == summary["computation_id"]
    copy = shutil.copytree(lake.lake.location, tmp_path / "copied" / "lake")  # a copied warehouse keeps them
    assert stats.stored_computation(Lake(str(copy)), resamples=10, seed=0) == summary["computation_id"]
    # compaction (the small commits, inlined in the catalog, written out to files) keeps every row,
    # and so the statistics
    lake.lake.compact()
    assert lake.query("SELECT count(*) AS n FROM ducklake_list_files('lake', 'computed_bootstrap')")[0]["n"] > 0
    assert stats.stored_computation(lake.lake, resamples=10, seed=0) == summary["computation_id"]
    lake.trial(lake.item("F2"), "m1", "wrong", "4")
    lake.flush()  # new scores: the stored statistics no longer describe the lake
    assert stats.stored_computation(lake.lake, resamples=10, seed=0) is None


def confounded_lake(tmp_path, models=("m1", "m2"), per_task: int = 150, seed: int = 4) -> tuple[LakeBuilder, pd.DataFrame]:
    """Four tasks whose prompts grow longer as they get harder, while within a task the length
    has no effect at all: correctness depends on the task only."""
    rng = random.Random(seed)
    lake, rows = LakeBuilder(tmp_path), []
    for t, (task, accuracy) in enumerate((("closure", 0.85), ("identity", 0.65), ("associativity", 0.4),
                                          ("word_problems", 0.2))):
        for f in range(per_task):
            tokens, density, numbers = rng.randint(20 + 30 * t, 50 + 30 * t), round(rng.uniform(0.02, 0.3), 4), rng.randint(1, 9)
            item = lake.item(f"{task}-{f}", task=task, n_tokens=tokens, symbol_density=density, n_numbers=numbers)
            for model in models:
                correct = rng.random() < accuracy
                lake.trial(item, model, status_of(correct), "5" if correct else "4")
                rows.append({"model": model, "task": task, "n_tokens": tokens, "symbol_density": density,
                             "n_numbers": numbers, "correct": int(correct)})
    lake.flush()
    return lake, pd.DataFrame(rows)


def test_regressions_that_pool_tasks_have_task_fixed_effects(tmp_path):
    lake, data = confounded_lake(tmp_path)
    stats.compute_stats(lake.lake, resamples=20, seed=0)
    m1 = data[data["model"] == "m1"]
    without = smf.logit("correct ~ n_tokens + symbol_density + n_numbers", m1).fit(disp=0)
    assert abs(without.params["n_tokens"] / without.bse["n_tokens"]) > 5  # length "matters" without task effects
    with_fe = smf.logit("correct ~ n_tokens + symbol_density + n_numbers + C(task, Treatment('associativity'))",
                        m1).fit(disp=0)
    ours = _terms(lake, model="m1", fit="per_model")
    assert ours["n_tokens"]["task"] == "(all)" and ours["n_tokens"]["reference_task"] == "associativity"
    assert "C(task)" in ours["n_tokens"]["formula"]
    assert abs(ours["n_tokens"]["coef"]) < 2 * ours["n_tokens"]["std_err"]  # no within-task effect
    assert ours["n_tokens"]["coef"] == pytest.approx(with_fe.params["n_tokens"], rel=1e-6)
    assert ours["n_tokens"]["std_err"] == pytest.approx(with_fe.bse["n_tokens"], rel=1e-6)
    assert ours["task[word_problems]"]["coef"] == pytest.approx(
        with_fe.params["C(task, Treatment('associativity'))[T.word_problems]"], rel=1e-6)
    pooled = _terms(lake, model="(all)", fit="pooled")
    assert {"task[closure]", "task[identity]", "task[word_problems]", "model[m2]"} <= set(pooled)
    assert abs(pooled["n_tokens"]["coef"]) < 2 * pooled["n_tokens"]["std_err"]
    direct = smf.logit("correct ~ n_tokens + symbol_density + n_numbers + C(task, Treatment('associativity'))"
                       " + C(model)", data).fit(disp=0)
    assert pooled["n_tokens"]["coef"] == pytest.approx(direct.params["n_tokens"], rel=1e-6)


def test_per_task_fits_where_the_counts_allow(tmp_path):
    lake, data = confounded_lake(tmp_path, models=("m1",), per_task=60)
    stats.compute_stats(lake.lake, resamples=20, seed=0)
    rows = lake.query("SELECT DISTINCT model, task, fit, status, formula, reference_task FROM computed_regression "
                      "WHERE fit = 'per_task' ORDER BY task")
    assert [r["task"] for r in rows] == ["associativity", "closure", "identity", "word_problems"]
    assert all(r["formula"] == "correct ~ C(variant) + n_tokens + symbol_density + n_numbers" for r in rows)
    assert all(r["reference_task"] is None for r in rows)
    closure = data[data["task"] == "closure"]
    direct = smf.logit("correct ~ n_tokens + symbol_density + n_numbers", closure).fit(disp=0)
    ours = _terms(lake, model="m1", fit="per_task", task="closure")
    assert ours["n_tokens"]["coef"] == pytest.approx(direct.params["n_tokens"], rel=1e-6)
    assert ours["n_tokens"]["n"] == len(closure)
    # a task whose trials are all correct cannot be fitted: skipped with the reason, the others stand
    lone = LakeBuilder(tmp_path / "lone")
    for f in range(30):
        lone.trial(lone.item(f"a{f}", task="closure", n_tokens=10 + f), "m1", "correct", "5")
        ok = f % 3 == 0
        lone.trial(lone.item(f"b{f}", task="identity", n_tokens=12 + (7 * f) % 30, n_numbers=f % 4,
                             symbol_density=0.1 + 0.01 * (f % 5)), "m1", status_of(ok), "5" if ok else "4")
    lone.flush()
    summary = stats.compute_stats(lone.lake, resamples=20, seed=0)
    skipped = {(s["model"], s["reason"]) for s in summary["skipped_regressions"]}
    assert ("m1", "one outcome class only (all correct)") in skipped
    fits = lone.query("SELECT DISTINCT task, fit, status FROM computed_regression WHERE fit = 'per_task' ORDER BY task")
    assert fits == [{"task": "closure", "fit": "per_task", "status": "skipped"},
                    {"task": "identity", "fit": "per_task", "status": "ok"}]


def test_features_constant_within_tasks_are_dropped_not_confounded(tmp_path):
    """n_numbers is fixed per task: with task effects it has no within-task variation to measure,
    so it is dropped and named instead of taking the task's difficulty."""
    lake = LakeBuilder(tmp_path)
    rng = random.Random(2)
    for t, (task, accuracy) in enumerate((("closure", 0.8), ("identity", 0.3))):
        for f in range(80):
            item = lake.item(f"{task}-{f}", task=task, n_tokens=rng.randint(10, 60), n_numbers=2 + 5 * t,
                             symbol_density=round(rng.uniform(0.02, 0.3), 4))
            correct = rng.random() < accuracy
            lake.trial(item, "m1", status_of(correct), "5" if correct else "4")
    lake.flush()
    stats.compute_stats(lake.lake, resamples=20, seed=0)
    ours = _terms(lake, model="m1", fit="per_model")
    assert "n_numbers" not in ours and ours["intercept"]["dropped"] == "n_numbers"
    assert "task[identity]" in ours


def test_computed_tables_count_every_outcome_as_the_views_do(tmp_path):
    lake = LakeBuilder(tmp_path)
    outcomes = ["correct", "wrong", "unparsable", "truncated", "error"]
    for f in range(12):
        for v, variant in enumerate(GEO):
            item = lake.item(f"F{f}", variant, suite="geometry", task="length", category="length")
            for m, model in enumerate(("m1", "m2")):
                status = outcomes[(f + v + m) % 5] if f < 9 else "correct"  # F9-F11: complete and invariant
                lake.trial(item, model, status, {"correct": "5", "wrong": "4"}.get(status))
    lake.flush()
    stats.compute_stats(lake.lake, resamples=20, seed=0)
    counts = "n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error"
    by_variant = lake.query(f"SELECT model, variant, {counts} FROM accuracy_by_bin ORDER BY ALL")
    assert all(r["n_truncated"] > 0 for r in by_variant)
    assert lake.query(f"SELECT model, variant, {counts} FROM computed_bootstrap WHERE metric = 'accuracy' "
                      "ORDER BY ALL") == by_variant
    gaps = lake.query(f"SELECT model, variant, variant_b, {counts} FROM computed_bootstrap WHERE metric = 'gap'")
    per_variant = {(r["model"], r["variant"]): r for r in by_variant}
    assert len(gaps) == 6
    for gap in gaps:
        a, b = per_variant[(gap["model"], gap["variant"])], per_variant[(gap["model"], gap["variant_b"])]
        assert {c: gap[c] for c in counts.split(", ")} == {c: a[c] + b[c] for c in counts.split(", ")}
    invariance = lake.query(f"SELECT model, {counts} FROM invariance WHERE task = 'length' ORDER BY ALL")
    assert invariance == lake.query(f"SELECT model, {counts} FROM computed_bootstrap WHERE metric = 'invariance' "
                                    "AND task = 'length' ORDER BY ALL")
    assert sum(r["n_truncated"] for r in invariance) > 0
    per_model = lake.query("SELECT model, sum(n_scored) AS n, sum(n_correct) AS n_correct, sum(n_unparsable) "
                           "AS n_unparsable, sum(n_truncated) AS n_truncated, sum(n_error) AS n_error "
                           "FROM accuracy_by_bin GROUP BY model ORDER BY model")
    assert lake.query("SELECT DISTINCT model, n, n_correct, n_unparsable, n_truncated, n_error FROM computed_regression "
                      "WHERE fit = 'per_model' ORDER BY model") == per_model
