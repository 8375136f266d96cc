"""The metric views of sql/ (intermediate and marts layers) against hand-counted fixtures and independent computations
(scipy's exact binomial test for McNemar, statsmodels for Wilson and Holm, numpy for the linear fits).
Real Parquet and DuckDB."""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from lake_fixtures import LakeBuilder, status_of
from tasks.lake.lake import Lake
from tasks.lake.sql import SQL_LAYERS, sql_code, sql_defines, sql_files
from tasks.lake.views import query

GEO = ["euclid", "coord", "vector"]


def geometry_families(lake: LakeBuilder, model: str = "m1") -> None:
    """Seven families over euclid/coord/vector with hand-known outcomes (see the tests)."""
    # (family, {variant: (status, predicted)}); gold 5 everywhere.
    families = {
        "F1": {"euclid": ("correct", "5"), "coord": ("correct", "5"), "vector": ("correct", "5")},
        "F2": {"euclid": ("correct", "5"), "coord": ("wrong", "6"), "vector": ("correct", "5")},
        "F3": {"euclid": ("wrong", "7"), "coord": ("wrong", "7"), "vector": ("wrong", "7")},
        "F4": {"euclid": ("wrong", "7"), "coord": ("unparsable", None), "vector": ("wrong", "7")},
        "F5": {"euclid": ("correct", "5"), "coord": ("correct", "5")},  # vector missing
        "F6": {"euclid": ("correct", "5"), "coord": ("wrong", "4"), "vector": ("error", None)},
        "F7": {"euclid": ("correct", "5"), "coord": ("correct", "5"), "vector": ("wrong", "9")},
    }
    for family, answers in families.items():
        for variant, (status, predicted) in answers.items():
            item = lake.item(family, variant, suite="geometry", task="length", category="length", gold="5")
            lake.trial(item, model, status, predicted)


def test_invariance_and_consistency_hand_counted(tmp_path):
    lake = LakeBuilder(tmp_path)
    geometry_families(lake)
    lake.flush()
    [row] = lake.query("SELECT * FROM invariance")
    assert row["k"] == 3 and list(row["variants"]) == GEO  # conventional order, not alphabetical
    assert (row["n_units"], row["n_complete"], row["n_excluded"], row["n_excluded_error"]) == (7, 5, 2, 1)
    assert row["n_families"] == 5
    assert row["n_invariant"] == 1 and row["invariance_at_k"] == pytest.approx(1 / 5)  # F1
    assert row["n_consistent"] == 2 and row["consistency_at_k"] == pytest.approx(2 / 5)  # F1, F3 (F4 unparsable)
    # trial counts over complete families F1-F4, F7; errors over all
    assert (row["n_scored"], row["n_correct"], row["n_wrong"], row["n_unparsable"], row["n_error"]) == (15, 7, 7, 1, 1)


def test_invariance_over_a_chosen_variant_subset(tmp_path):
    lake = LakeBuilder(tmp_path)
    geometry_families(lake)
    lake.flush()
    [row] = lake.query("SELECT * FROM invariance_over(variant_list := ['euclid', 'coord'])")
    # F5 and F6 are complete on euclid+coord; invariant: F1, F5, F7; consistent: F1, F3, F5, F7
    assert (row["k"], row["n_complete"], row["n_excluded"]) == (2, 7, 0)
    assert row["n_invariant"] == 3 and row["n_consistent"] == 4


def test_flip_patterns_hand_counted(tmp_path):
    lake = LakeBuilder(tmp_path)
    geometry_families(lake)
    lake.flush()
    rows = lake.query("SELECT pattern, n, share, n_with_unparsable, n_complete, n_excluded FROM flip_patterns")
    assert [r["pattern"] for r in rows] == ["CCC", "CCW", "CWC", "WCC", "CWW", "WCW", "WWC", "WWW"]
    counts = {r["pattern"]: r["n"] for r in rows}
    assert counts == {"CCC": 1, "CCW": 1, "CWC": 1, "WCC": 0, "CWW": 0, "WCW": 0, "WWC": 0, "WWW": 2}
    assert {r["pattern"]: r["share"] for r in rows}["WWW"] == pytest.approx(2 / 5)
    assert {r["pattern"]: r["n_with_unparsable"] for r in rows}["WWW"] == 1
    assert all(r["n_complete"] == 5 and r["n_excluded"] == 2 for r in rows)


def test_families_missing_a_variant_are_excluded_and_counted(tmp_path):
    lake = LakeBuilder(tmp_path)
    for family in ("A", "B", "C"):
        for variant in (["end", "begin"] if family == "C" else ["end", "begin", "middle"]):
            lake.trial(lake.item(family, variant, task="identity"), "m1", "correct", "5")
    lake.flush()
    [row] = lake.query("SELECT n_units, n_complete, n_excluded, invariance_at_k FROM invariance")
    assert (row["n_units"], row["n_complete"], row["n_excluded"], row["invariance_at_k"]) == (3, 2, 1, 1.0)


def test_wilson_matches_statsmodels(tmp_path):
    lake = LakeBuilder(tmp_path)
    cells = {"0-10": (0, 5), "10-20": (3, 7), "20-30": (7, 7), "30-40": (12, 40)}
    for bin_label, (k, n) in cells.items():
        lo = int(bin_label.split("-")[0])
        for i in range(n):
            item = lake.item(f"{bin_label}-{i}", bin=bin_label, bin_lo=lo, bin_hi=lo + 10, key_entities=lo)
            lake.trial(item, "m1", status_of(i < k), "5" if i < k else "4")
    lake.trial(lake.item("err", bin="30-40", bin_lo=30, key_entities=30), "m1", "error")  # not in n
    lake.flush()
    for view in ("accuracy_by_bin", "accuracy_by_n"):
        rows = {r["bin"]: r for r in lake.query(f"SELECT * FROM {view}")}
        for bin_label, (k, n) in cells.items():
            lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert rows[bin_label]["n_scored"] == n and rows[bin_label]["n_correct"] == k
            assert rows[bin_label]["wilson_lo"] == pytest.approx(lo, abs=1e-12)
            assert rows[bin_label]["wilson_hi"] == pytest.approx(hi, abs=1e-12)
        assert rows["30-40"]["n_error"] == 1


def mcnemar_p(b: int, c: int) -> float:
    """The exact McNemar p-value by scipy: a two-sided binomial test of b successes in b + c
    discordant pairs at 1/2 (no discordant pair: nothing against the null, p = 1)."""
    return binomtest(int(b), int(b + c), 0.5).pvalue if b + c else 1.0


def _random_patterns(rng: random.Random, n_families: int, variants: list[str]) -> dict[str, dict[str, bool]]:
    # Variant-specific success rates so the pairs differ.
    rates = {v: 0.3 + 0.2 * i for i, v in enumerate(variants)}
    return {f"F{i}": {v: rng.random() < rates[v] for v in variants} for i in range(n_families)}


def test_mcnemar_and_holm_match_statsmodels(tmp_path):
    lake = LakeBuilder(tmp_path)
    variants = ["a", "b", "c"]
    patterns = _random_patterns(random.Random(7), 120, variants)
    for family, outcome in patterns.items():
        for v in variants:
            lake.trial(lake.item(family, v, task="identity"), "m1", status_of(outcome[v]), "5" if outcome[v] else "4")
    lake.flush()
    rows = lake.query("SELECT * FROM mcnemar_pairs ORDER BY variant_a, variant_b")
    assert [(r["variant_a"], r["variant_b"]) for r in rows] == [("a", "b"), ("a", "c"), ("b", "c")]
    expected_p = []
    for r in rows:
        va, vb = r["variant_a"], r["variant_b"]
        table = np.zeros((2, 2), dtype=int)
        for outcome in patterns.values():
            table[0 if outcome[va] else 1, 0 if outcome[vb] else 1] += 1
        assert (r["n_both_correct"], r["b"], r["c"], r["n_both_not_correct"]) == tuple(table.ravel())
        p = mcnemar_p(table[0, 1], table[1, 0])
        assert r["p_value"] == pytest.approx(p, rel=1e-9)
        expected_p.append(p)
    holm = multipletests(expected_p, method="holm")[1]
    assert [r["p_holm"] for r in rows] == pytest.approx(list(holm), rel=1e-9)
    assert all(r["n_tests"] == 3 for r in rows)


def test_exact_mcnemar_p_in_sql_matches_scipy(tmp_path):
    """The SQL macro (the one definition, usable from any DuckDB client) against scipy's exact
    binomial test, from no discordant pair to tens of thousands and p-values far below 1e-100."""
    cases = [(0, 0), (5, 0), (0, 1), (1, 1), (7, 2), (2, 7), (12, 12), (40, 55), (300, 250), (1000, 1000),
             (2500, 2400), (10000, 9700), (30000, 29500), (3000, 1000), (0, 400)]
    lake = LakeBuilder(tmp_path)
    for b, c in cases:
        (row,) = lake.query("SELECT mcnemar_exact_p(?, ?) AS p", [b, c])
        assert row["p"] == pytest.approx(mcnemar_p(b, c), rel=1e-9), (b, c)


def test_model_pairs_on_the_same_items(tmp_path):
    lake = LakeBuilder(tmp_path)
    rng = random.Random(3)
    table = np.zeros((2, 2), dtype=int)
    for i in range(60):
        item = lake.item(f"F{i}", task="closure")
        a, b = rng.random() < 0.7, rng.random() < 0.4
        lake.trial(item, "m-a", status_of(a), "5" if a else "4")
        lake.trial(item, "m-b", status_of(b), "5" if b else "4")
        table[0 if a else 1, 0 if b else 1] += 1
    lake.trial(lake.item("only-a"), "m-a", "correct", "5")  # no partner: not a pair
    lake.flush()
    [row] = lake.query("SELECT * FROM model_pairs")
    assert (row["model_a"], row["model_b"], row["n_pairs"]) == ("m-a", "m-b", 60)
    assert (row["b"], row["c"]) == (table[0, 1], table[1, 0])
    assert row["p_value"] == pytest.approx(mcnemar_p(table[0, 1], table[1, 0]), rel=1e-9)


def test_breaking_point_threshold(tmp_path):
    lake = LakeBuilder(tmp_path)
    accuracies = {0: (4, 4), 10: (3, 5), 20: (2, 5), 30: (4, 5)}  # 1.0, 0.6, 0.4, 0.8
    for lo, (k, n) in accuracies.items():
        for i in range(n):
            item = lake.item(f"b{lo}-{i}", suite="lissard", task="dyck", variant="none", prompt_style="few_shot",
                             bin=f"{lo}-{lo + 10}", bin_lo=lo, bin_hi=lo + 10, key_entities=lo + 1, answer_type="text")
            lake.trial(item, "m1", status_of(i < k), "x", answer_type="text")
    never = lake.item("easy", suite="lissard", task="vowel_grouping", variant="none", prompt_style="few_shot",
                      answer_type="text")
    lake.trial(never, "m1", "correct", "x", answer_type="text")
    lake.flush()
    rows = {r["task"]: r for r in lake.query("SELECT * FROM breaking_point")}
    assert rows["dyck"]["breaking_bin"] == "20-30" and rows["dyck"]["breaking_accuracy"] == pytest.approx(0.4)
    assert rows["dyck"]["n_bins"] == 4 and rows["dyck"]["n_scored"] == 19 and rows["dyck"]["n_wrong"] == 6
    assert rows["vowel_grouping"]["breaking_bin"] is None
    [strict] = lake.query("SELECT * FROM breaking_points(threshold := 0.65) WHERE task = 'dyck'")
    assert strict["breaking_bin"] == "10-20" and strict["threshold"] == 0.65


def test_attractors_report_50_and_100(tmp_path):
    lake = LakeBuilder(tmp_path)
    # gold 52: answers 50 x4, 52 x3, 100 x1, 51 x1, unparsable x1, error x1
    answers = ["50"] * 4 + ["52"] * 3 + ["100", "51"]
    for i, answer in enumerate(answers):
        lake.trial(lake.item(f"f{i}", f"w{i}", task="counting_words", gold="52"), "m1",
                   status_of(answer == "52"), answer)
    lake.trial(lake.item("u", "wu", task="counting_words", gold="52"), "m1", "unparsable")
    lake.trial(lake.item("e", "we", task="counting_words", gold="52"), "m1", "error")
    lake.flush()
    [row] = lake.query("SELECT * FROM attractors")
    assert (row["n_scored"], row["n_correct"], row["n_wrong"], row["n_unparsable"], row["n_error"]) == (10, 3, 6, 1, 1)
    assert row["top_wrong"] == "50" and row["n_top_wrong"] == 4 and row["top_wrong_share"] == pytest.approx(0.4)
    assert row["n_50"] == 4 and row["share_50"] == pytest.approx(0.4)
    assert row["n_100"] == 1 and row["share_100"] == pytest.approx(0.1)
    assert [(d["predicted"], d["n"]) for d in row["predicted_counts"]] == [("50", 4), ("52", 3), ("51", 1), ("100", 1)]


def _chain_trial(lake: LakeBuilder, group: str, lengths: list[int], answers: dict[str, str | None],
                 final_status: str, family: str) -> None:
    n = sum(lengths)
    item = lake.item(family, "split_3_8", task="associativity", category=group, key_entities=n, gold=str(n),
                     params={"group": group, "segment_lengths": lengths},
                     steps=[{"name": s, "template": "t"} for s in ("segment_1", "segment_2", "combine")])
    modulo = f" modulo {group[3:]}" if group.startswith("mod") else ""
    contents = {"segment_1": f"What is {'+'.join(['1'] * lengths[0])}{modulo}?",
                "segment_2": f"What is {'+'.join(['1'] * lengths[1])}{modulo}?",
                "combine": f"What is {answers['segment_1']}+{answers['segment_2']}{modulo}?\nAnswer: <number>"}
    trial_id = None
    for index, step in enumerate(("segment_1", "segment_2", "combine")):
        if step not in answers:
            continue
        trial_id, request_id, response_id = lake.answered(
            item, "m1", f"Answer: {answers[step]}", step=step, step_index=index, content=contents[step])
        lake.parse(response_id, request_id, answers[step])
    lake.score(trial_id, item, "m1", final_status, answers.get("combine"))


def test_associativity_calls_judge_each_step_against_its_own_answer(tmp_path):
    lake = LakeBuilder(tmp_path)
    # integers 3+5: segment_1 right, segment_2 wrong (4), combine adds its given 3+4 right (7)
    _chain_trial(lake, "integers", [3, 5], {"segment_1": "3", "segment_2": "4", "combine": "7"}, "wrong", "A")
    # mod7 with 5+6 ones: segments 5 and 6 right, combine must be (5+6) mod 7 = 4; answers 11: wrong
    _chain_trial(lake, "mod7", [5, 6], {"segment_1": "5", "segment_2": "6", "combine": "11"}, "wrong", "B")
    # segment_2 unparsable: no combine call
    _chain_trial(lake, "integers", [2, 4], {"segment_1": "2", "segment_2": None}, "unparsable", "C")
    lake.flush()
    steps = {(r["category"], r["key_entities"], r["step"]): r["step_status"]
             for r in lake.query("SELECT * FROM associativity_steps")}
    assert steps[("integers", 8, "segment_1")] == "correct"
    assert steps[("integers", 8, "segment_2")] == "wrong"
    assert steps[("integers", 8, "combine")] == "correct"
    assert steps[("mod7", 11, "segment_1")] == "correct" and steps[("mod7", 11, "segment_2")] == "correct"
    assert steps[("mod7", 11, "combine")] == "wrong"
    assert steps[("integers", 6, "segment_2")] == "unparsable" and steps[("integers", 6, "combine")] == "not_run"
    calls = {(r["category"], r["step"]): r for r in lake.query("SELECT * FROM associativity_calls")}
    combine = calls[("integers", "combine")]
    assert (combine["n_trials"], combine["n_scored"], combine["n_correct"], combine["n_not_run"]) == (2, 1, 1, 1)
    item = calls[("integers", "item")]
    assert (item["n_scored"], item["n_correct"], item["n_wrong"], item["n_unparsable"]) == (2, 0, 1, 1)


def test_surface_regression_linear_matches_numpy(tmp_path):
    lake = LakeBuilder(tmp_path)
    rng = random.Random(5)
    xs, ys = [], []
    for i in range(40):
        tokens = rng.randint(5, 60)
        correct = rng.random() < 1 - tokens / 80
        lake.trial(lake.item(f"F{i}", n_tokens=tokens), "m1", status_of(correct), "5" if correct else "4")
        xs.append(tokens)
        ys.append(1.0 if correct else 0.0)
    lake.trial(lake.item("err", n_tokens=1000), "m1", "error")  # left out of the fit
    lake.flush()
    [row] = lake.query("SELECT * FROM surface_regression_linear")
    slope, intercept = np.polyfit(xs, ys, 1)
    r2 = np.corrcoef(xs, ys)[0, 1] ** 2
    assert row["slope_n_tokens"] == pytest.approx(slope, rel=1e-9)
    assert row["intercept_n_tokens"] == pytest.approx(intercept, rel=1e-9)
    assert row["r2_n_tokens"] == pytest.approx(r2, rel=1e-9)
    assert (row["n_scored"], row["n_error"]) == (40, 1)


def test_lenient_accuracy_next_to_exact(tmp_path):
    lake = LakeBuilder(tmp_path)
    outcomes = [("correct", True), ("wrong", True), ("wrong", False), ("unparsable", None)]
    for i, (status, lenient) in enumerate(outcomes):
        item = lake.item(f"L{i}", suite="lissard", task="list_intersection", prompt_style="few_shot",
                         answer_type="text", bin="1-24", bin_lo=1)
        lake.trial(item, "m1", status, "Ann Bob", answer_type="text", lenient=lenient)
    lake.flush()
    [row] = lake.query("SELECT * FROM lenient_accuracy_by_bin")
    assert (row["n_scored"], row["n_correct"], row["n_lenient_correct"]) == (4, 1, 2)
    assert row["accuracy"] == pytest.approx(0.25) and row["lenient_accuracy"] == pytest.approx(0.5)


def test_score_changes_shows_flips_between_versions(tmp_path):
    lake = LakeBuilder(tmp_path)
    item = lake.item("F", gold="5")
    trial = lake.trial(item, "m1", "wrong", "4")
    other = lake.trial(lake.item("G", gold="5"), "m1", "correct", "5")
    lake.score(trial, item, "m1", "correct", "5", scorer_version="score/1+integer/2")
    lake.score(other, item, "m1", "correct", "5", scorer_version="score/1+integer/2")  # unchanged
    lake.flush()
    rows = lake.query("SELECT * FROM score_changes")
    assert [(r["trial_id"], r["previous_status"], r["status"], r["flipped"], r["is_latest"]) for r in rows] == [
        (trial, "wrong", "correct", True, True)]
    assert (rows[0]["previous_scorer_version"], rows[0]["scorer_version"]) == ("score/1+integer/1", "score/1+integer/2")


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_views_work_on_an_empty_lake(tmp_path):
    con = Lake(str(tmp_path / "lake")).connect()
    try:
        for view in ("invariance", "invariance_by_suite", "flip_patterns", "mcnemar_pairs", "model_pairs",
                     "breaking_point", "attractors", "associativity_calls", "score_changes",
                     "surface_regression_linear", "computed_bootstrap", "computed_regression", "accuracy_by_n",
                     "lenient_accuracy_by_bin", "accuracy_by_task_bin", "run_accuracy_by_bin", "outcomes_by_task",
                     "latest_requests"):
            assert query(con, f"SELECT * FROM {view}") == [], view
    finally:
        con.close()


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_connection_for_one_view_creates_what_it_reads_and_no_more(tmp_path):
    """lake.connect(sql) creates the closure of the names sql reads: each view then answers as
    on a connection with every view, and a view it does not read is not created. A lake's
    connections share one DuckDB per process, which creates a view when a connection first reads
    it: the last check opens lakes no connection read before."""
    Lake(str(tmp_path / "lake")).ensure()
    lake = Lake(str(tmp_path / "lake"), read_only=True)
    full = lake.connect()
    try:
        views = [r["view_name"] for r in query(full, "SELECT view_name FROM duckdb_views() WHERE NOT internal")]
        for view in views:
            con = lake.connect(f"SELECT * FROM {view}")
            try:
                assert query(con, f"SELECT * FROM {view}") == query(full, f"SELECT * FROM {view}"), view
            finally:
                con.close()
    finally:
        full.close()
    for lake in (Lake(str(tmp_path / "never written"), read_only=True), Lake(str(tmp_path / "shared"))):
        con = lake.connect("SELECT * FROM runs")
        try:
            created = {r["view_name"] for r in query(con, "SELECT view_name FROM duckdb_views() WHERE NOT internal")}
        finally:
            con.close()
        assert created == {"raw_runs", "runs"}, lake


def test_pairs_are_within_prompt_style_and_sample(tmp_path):
    lake = LakeBuilder(tmp_path)
    for style, sample in itertools.product(("direct", "cot"), (0, 1)):
        for v in ("a", "b"):
            item = lake.item("F", v, prompt_style=style, task="identity")
            lake.trial(item, "m1", status_of(v == "a"), "5" if v == "a" else "4", sample_idx=sample)
    lake.flush()
    rows = lake.query("SELECT prompt_style, n_pairs, b, c FROM mcnemar_pairs ORDER BY prompt_style")
    assert rows == [{"prompt_style": "cot", "n_pairs": 2, "b": 2, "c": 0},
                    {"prompt_style": "direct", "n_pairs": 2, "b": 2, "c": 0}]


def _model_pair_task(lake: LakeBuilder, task: str, only_a: int, only_b: int, both: int, neither: int) -> None:
    """Items of one task answered by m-a and m-b with the given 2x2 counts."""
    cells = [(True, False)] * only_a + [(False, True)] * only_b + [(True, True)] * both + [(False, False)] * neither
    for i, (a, b) in enumerate(cells):
        item = lake.item(f"{task}-{i}", task=task)
        lake.trial(item, "m-a", status_of(a), "5" if a else "4")
        lake.trial(item, "m-b", status_of(b), "5" if b else "4")


def test_model_pairs_holm_runs_over_every_task_of_the_suite(tmp_path):
    """b = 34, c = 18 gives p = 0.0365; with a second model-pair test in the suite, Holm doubles
    it to 0.073 (not significant), where a per-task Holm left it at 0.036."""
    lake = LakeBuilder(tmp_path)
    _model_pair_task(lake, "closure", only_a=34, only_b=18, both=20, neither=8)
    _model_pair_task(lake, "identity", only_a=5, only_b=4, both=30, neither=1)
    _model_pair_task(lake, "dyck_like", only_a=1, only_b=9, both=0, neither=0)
    lake.flush()
    rows = {r["task"]: r for r in lake.query("SELECT * FROM model_pairs WHERE suite = 'symmetry'")}
    p_closure = mcnemar_p(34, 18)
    p_identity = mcnemar_p(5, 4)
    assert rows["closure"]["p_value"] == pytest.approx(p_closure, rel=1e-9)
    assert round(rows["closure"]["p_value"], 3) == 0.036
    # hand Holm over the suite's 3 model-pair tests: sorted p, multipliers 3, 2, 1, running max
    ps = sorted({t: r["p_value"] for t, r in rows.items()}.items(), key=lambda kv: kv[1])
    running, expected = 0.0, {}
    for rank, (task, p) in enumerate(ps):
        running = max(running, min(1.0, (len(ps) - rank) * p))
        expected[task] = running
    assert {t: r["p_holm"] for t, r in rows.items()} == pytest.approx(expected, rel=1e-12)
    assert set(rows) == {"closure", "identity", "dyck_like"}
    assert {r["holm_family"] for r in rows.values()} == {"model pairs in suite symmetry"}
    assert all(r["n_tests"] == 3 for r in rows.values())
    # the same data with the two-test family of the issue: closure and identity alone
    two = LakeBuilder(tmp_path / "two")
    _model_pair_task(two, "closure", only_a=34, only_b=18, both=20, neither=8)
    _model_pair_task(two, "identity", only_a=5, only_b=4, both=30, neither=1)
    two.flush()
    pairs = {r["task"]: r for r in two.query("SELECT * FROM model_pairs")}
    assert round(pairs["closure"]["p_holm"], 3) == 0.073
    assert pairs["closure"]["p_holm"] == pytest.approx(2 * p_closure, rel=1e-12)
    assert pairs["identity"]["p_holm"] == pytest.approx(max(2 * p_closure, p_identity), rel=1e-12)
    assert list(multipletests([p_closure, p_identity], method="holm")[1]) == pytest.approx(
        [pairs["closure"]["p_holm"], pairs["identity"]["p_holm"]], rel=1e-12)


def test_variant_pairs_holm_family_is_model_and_suite(tmp_path):
    """Holm runs over every variant pair of every task and prompt style of one (model, suite);
    another model or another suite is another family."""
    lake = LakeBuilder(tmp_path)
    rng = random.Random(5)
    expected: dict[tuple, list] = {}
    for model in ("m1", "m2"):
        for suite, task, style in (("symmetry", "closure", "direct"), ("symmetry", "identity", "direct"),
                                   ("symmetry", "identity", "cot"), ("lissard", "dyck", "direct")):
            patterns = _random_patterns(rng, 40, ["x", "y"])
            for family, outcome in patterns.items():
                for v in ("x", "y"):
                    item = lake.item(f"{task}-{family}", v, suite=suite, task=task, prompt_style=style)
                    lake.trial(item, model, status_of(outcome[v]), "5" if outcome[v] else "4")
            table = np.zeros((2, 2), dtype=int)
            for outcome in patterns.values():
                table[0 if outcome["x"] else 1, 0 if outcome["y"] else 1] += 1
            expected.setdefault((model, suite), []).append(((task, style), mcnemar_p(table[0, 1], table[1, 0])))
    lake.flush()
    rows = lake.query("SELECT * FROM mcnemar_pairs")
    assert len(rows) == 8
    for (model, suite), tests in expected.items():
        mine = {(r["task"], r["prompt_style"]): r for r in rows if (r["model"], r["suite"]) == (model, suite)}
        holm = multipletests([p for _, p in tests], method="holm")[1]
        for ((task, style), p), adjusted in zip(tests, holm):
            assert mine[(task, style)]["p_value"] == pytest.approx(p, rel=1e-9)
            assert mine[(task, style)]["p_holm"] == pytest.approx(adjusted, rel=1e-9)
            assert mine[(task, style)]["n_tests"] == len(tests)
            assert mine[(task, style)]["holm_family"] == f"variant pairs of model {model} in suite {suite}"


def test_unpaired_answers_are_counted_beside_each_test(tmp_path):
    lake = LakeBuilder(tmp_path)
    geometry_families(lake)  # F5 has no vector answer; F6's vector answer is an error
    for i in range(3):  # answered by m-a only
        lake.trial(lake.item(f"solo-a{i}", task="closure"), "m-a", "correct", "5")
    for i in range(4):  # answered by both
        item = lake.item(f"both{i}", task="closure")
        lake.trial(item, "m-a", "correct", "5")
        lake.trial(item, "m-b", status_of(i < 2), "5" if i < 2 else "4")
    lake.trial(lake.item("solo-b", task="closure"), "m-b", "wrong", "4")
    lake.trial(lake.item("solo-b-error", task="closure"), "m-b", "error")
    lake.flush()
    [models] = lake.query("SELECT * FROM model_pairs")
    assert (models["n_pairs"], models["b"], models["c"]) == (4, 2, 0)
    assert (models["n_unpaired_a"], models["n_unpaired_b"], models["n_unpaired"]) == (3, 2, 5)
    variants = {(r["variant_a"], r["variant_b"]): r for r in lake.query("SELECT * FROM mcnemar_pairs")}
    # euclid-coord: all 7 families paired; euclid-vector and coord-vector: F5 lacks vector, F6's is an error
    assert {k: (r["n_pairs"], r["n_error"], r["n_unpaired_a"], r["n_unpaired_b"]) for k, r in variants.items()} == {
        ("euclid", "coord"): (7, 0, 0, 0), ("euclid", "vector"): (5, 1, 1, 0), ("coord", "vector"): (5, 1, 1, 0)}
    [row] = lake.query("SELECT n_unpaired FROM paired_tests WHERE comparison = 'variants' AND side_b = 'vector' "
                       "AND side_a = 'coord'")
    assert row["n_unpaired"] == 1


def test_sql_layers_load_in_order_and_say_what_a_row_is():
    """A file uses only what its own or an earlier layer defines; every view says its grain."""
    files = sql_files()
    assert files, "no SQL files found"
    layer_of = {p: SQL_LAYERS.index(p.parent.name) for p in files}
    assert [layer_of[p] for p in files] == sorted(layer_of[p] for p in files)
    defined_in = {name: p for p in files for name in sql_defines(p)}
    for path in files:
        code = sql_code(path)
        for name, home in defined_in.items():
            if home != path and re.search(rf"\b{name}\b", code):
                assert layer_of[home] <= layer_of[path], f"{path.name} uses {name} of a later layer ({home})"
        comments = path.read_text(encoding="utf-8")
        for view in re.findall(r"CREATE OR REPLACE VIEW (\w+)", code):
            if not view.startswith("raw_"):
                assert f"-- {view}: one row per" in comments, f"{path}: no header line for {view}"
