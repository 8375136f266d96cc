"""One problem counts once: dedupe drops families that repeat a prompt, validation rejects
batches where two families share one, and geometry never draws a degenerate figure."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import sympy

from tasks.items.generate import generate_task, item_row
from tasks.items.validate import ValidationFailed, dedupe, validate_items
from tasks.suites import suite_tasks
from tasks.suites.base import rng_for
from tasks.suites.geometry import TEMPLATES, draw_families, figure_problem
from tasks.suites.geometry.template import polygon_problem

I = sympy.Integer


def _suite_rows(suite: str, seed: int = 0) -> list[dict]:
    rows = []
    for task in suite_tasks(suite):
        dataset, items = generate_task(suite, task, {}, seed)  # {}: the task defaults, the "full" preset
        rows += [item_row(i, dataset) for i in items]
    return rows


def _shared_prompts(rows: list[dict]) -> dict[tuple, set]:
    families = defaultdict(set)
    for r in rows:
        families[(r["suite"], r["prompt"])].add((r["task"], r["family_id"]))
    return {k: v for k, v in families.items() if len(v) > 1}


@pytest.mark.slow  # generates and validates every suite's full preset
def test_full_presets_have_distinct_problems_after_dedupe():
    rows = _suite_rows("geometry") + _suite_rows("symmetry") + _suite_rows("lissard")
    kept, _, dropped = dedupe(rows)
    assert _shared_prompts(kept) == {}
    # geometry redraws a family that repeats a rendering (the issue found 7 repeated prompts):
    # nothing is left for dedupe to drop there
    assert [d for d in dropped if d["suite"] == "geometry"] == []
    assert validate_items(kept, batch_name="full_presets", distinct_problems=True) == len(kept)


def _row(suite: str, task: str, family: str, variant: str, prompt: str) -> dict:
    return {"item_id": f"{suite}-{task}-{family}-{variant}", "suite": suite, "task": task, "family_id": family,
            "variant": variant, "prompt": prompt, "gold": "5", "key_entities": 5, "bin_lo": 5, "bin_hi": 30,
            "answer_type": "integer", "params": "{}"}


def test_dedupe_drops_the_later_family_whole_and_says_so():
    rows = [
        _row("s", "t1", "A", "x", "p1"), _row("s", "t1", "A", "y", "p2"),
        _row("s", "t2", "B", "x", "p3"), _row("s", "t2", "B", "y", "p2"),   # repeats A's p2: dropped whole
        _row("s", "t1", "C", "x", "p4"), _row("s", "t1", "C", "y", "p4"),   # its own variants alike: kept
        _row("s", "t1", "D", "x", "p3"), _row("s", "t1", "D", "y", "p5"),   # shares p3 only with dropped B: kept
        _row("other", "t1", "E", "x", "p1"),                                 # another suite: kept
        _row("s", "t1", "A", "x", "p1"),                                     # identical item
    ]
    kept, identical, dropped = dedupe(rows)
    assert identical == 1
    assert [(r["family_id"], r["variant"]) for r in kept] == [
        ("A", "x"), ("A", "y"), ("C", "x"), ("C", "y"), ("D", "x"), ("D", "y"), ("E", "x")]
    assert dropped == [{"suite": "s", "task": "t2", "family_id": "B", "duplicate_of_task": "t1",
                        "duplicate_of_family": "A", "prompt": "p2"}]


@pytest.mark.parametrize("hashing", ["python", "every prompt alike"])
def test_dedupe_of_a_table_keeps_what_dedupe_of_dicts_keeps(monkeypatch, hashing):
    """A sweep dedupes its items as an Arrow table (tasks.items.compact), an export as dicts,
    both through one decision, prompts compared by hash first: the same rows, counts and report
    from either entry point, whatever the hashes (equal ones are only candidates, decided by the
    prompts' texts); the dicts kept are those given, not copies."""
    from tasks.items import validate
    from tasks.items.compact import items_table

    if hashing != "python":
        monkeypatch.setattr(validate, "hash", lambda value: 0, raising=False)
    rows = [
        _row("s", "t1", "A", "x", "p1"), _row("s", "t1", "A", "y", "p2"),
        _row("s", "t2", "B", "x", "p3"), _row("s", "t2", "B", "y", "p2"),
        _row("s", "t1", "C", "x", "p4"), _row("s", "t1", "C", "y", "p4"),
        _row("s", "t1", "D", "x", "p3"), _row("s", "t1", "D", "y", "p5"),
        _row("other", "t1", "E", "x", "p1"), _row("s", "t1", "A", "x", "p1"), _row("s", "t3", "F", "x", "p6"),
    ]
    table, identical, dropped = validate.dedupe_table(items_table(rows))
    kept, *expected = dedupe(rows)
    assert [r["item_id"] for r in table.to_pylist()] == [r["item_id"] for r in kept]
    assert [id(r) for r in kept] == [id(rows[i]) for i in (0, 1, 4, 5, 6, 7, 8, 10)]
    assert [identical, dropped] == expected and identical == 1 and len(dropped) == 1
    assert validate.dedupe_table(items_table(kept))[0].num_rows == len(kept)


def test_validation_rejects_two_families_sharing_a_prompt():
    rows = [_row("s", "t1", "A", "x", "p1"), _row("s", "t1", "A", "y", "p2"),
            _row("s", "t2", "B", "x", "p2"), _row("s", "t1", "C", "x", "p3")]
    with pytest.raises(ValidationFailed, match=r"families_per_prompt.*failed for 2 of 4 rows"):
        validate_items(rows, batch_name="shared", distinct_problems=True)
    assert validate_items(rows, batch_name="shared_import") == 4  # imports keep a published file as it is
    alike_variants = [_row("s", "t1", "A", "x", "p1"), _row("s", "t1", "A", "y", "p1")]
    assert validate_items(alike_variants, batch_name="alike", distinct_problems=True) == 2


def test_polygon_problem_names_each_degeneracy():
    pt = lambda x, y: (I(x), I(y))  # noqa: E731
    assert polygon_problem({"A": pt(0, 0), "B": pt(4, 0), "C": pt(4, 3), "D": pt(0, 3)}) is None
    assert polygon_problem({"A": pt(0, 0), "B": pt(2, 0), "C": pt(4, 0), "D": pt(0, 3)}) == \
        "vertices A, B and C are collinear"
    assert polygon_problem({"A": pt(1, 1), "B": pt(1, 1), "C": pt(4, 3)}) == "vertices A and B coincide"
    assert polygon_problem({"A": pt(0, 0), "B": pt(4, 3), "C": pt(4, 0), "D": pt(0, 3)}) == "sides AB and CD cross"
    root3 = sympy.sqrt(3)
    assert polygon_problem({"A": (I(0), I(0)), "B": (root3, I(1)), "C": (2 * root3, I(2))}) == \
        "vertices A, B and C are collinear"  # exact, with surds


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_geometry_redraws_degenerate_figures():
    quadrilateral = next(t for t in TEMPLATES["area"] if t.name == "quadrilateral_area")
    raw = [quadrilateral.draw(rng_for("geometry", "area", "quadrilateral_area", s)) for s in range(40)]
    degenerate = [c for c in raw if quadrilateral.figure_problem(c)]
    assert degenerate  # the template's draws do produce "quadrilaterals" with three collinear vertices
    for templates in TEMPLATES.values():
        for template in (t for t in templates if t.figures):  # without figures there is nothing to check
            for seed in range(2):
                for config, _, _ in draw_families(template, 4, seed):
                    assert template.figure_problem(config) is None, (template.name, seed, config)
    assert figure_problem("quadrilateral_area", degenerate[0]).startswith("quadrilateral_area: vertices")


def test_validation_rejects_a_degenerate_geometry_item():
    dataset, items = generate_task("geometry", "area", {"templates": ["quadrilateral_area"],
                                                        "families_per_template": 1, "prompt_styles": ["direct"]}, 0)
    rows = [item_row(i, dataset) for i in items]
    assert validate_items(rows, batch_name="quad_ok", distinct_problems=True) == 3
    bad = dict(rows[0], params=json.dumps({"template": "quadrilateral_area", "config": {"points": {
        "A": ["0", "0"], "B": ["3", "4"], "C": ["6", "0"], "D": ["-3", "-4"]}}}))  # D, A, B on one line
    with pytest.raises(ValidationFailed, match=r"well_formed.*failed for 1 of 3 rows"):
        validate_items([bad] + rows[1:], batch_name="quad_bad")
