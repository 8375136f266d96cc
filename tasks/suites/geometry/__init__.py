"""Suite ``geometry``: one problem, three representations.

Described in docs/suites.md#geometry; the paper it follows (GeoRepEval) is listed in
docs/suites.md#papers.

Tasks: one per category, ``length``, ``area``, ``angle`` and ``ratio`` (the item's ``category``
field repeats the task name), so that accuracy, bins and breaking points are reported per
category as the paper's tables are. Each task runs that category's templates (see
:data:`TEMPLATES`); imported parallel sets are the separate generator ``geometry.imported``
(:mod:`tasks.suites.geometry.imported`).

Templates live by figure: each category module (:mod:`~tasks.suites.geometry.length`, ``area``,
``angle``, ``ratio``) holds its triangle and polygon templates and lists all the category's
templates in order; :mod:`~tasks.suites.geometry.circles` and :mod:`~tasks.suites.geometry.solids`
hold the circle and solid templates of every category. Their shared pieces: ``template``
(:class:`Template`, :func:`~tasks.suites.geometry.template.stated`, degenerate figures), ``exact``
(values, vector arithmetic), ``placement`` (lattice placements and draws), ``triangles`` (pool,
configurations, measures, phrases, template builders) and ``text`` (how numbers, points, segment
lengths, vectors and equations are written).

A *family* is one template with one seeded configuration; its items are the renderings
``euclid``, ``coord`` and ``vector`` (the ``variant``) crossed with the prompt styles (the
``prompt_style`` field, see :mod:`tasks.suites.geometry.prompts`); all share ``family_id``, the
content hash of (category, template, configuration).

Parameters (defaults in :data:`DEFAULTS`):

* ``families_per_template``: families drawn per template (default 4: about 40 per category,
  160 in all, close to the paper's 158 problems). Draws come from one ``rng_for(...)`` stream per
  (category, template, seed), so n families are a prefix of n + 1 families; configurations
  already drawn, configurations whose gold or printed numbers are not readable, whose figure is
  degenerate (coinciding or three collinear vertices, crossing sides, zero area: see
  ``Template.figures``), or whose rendering repeats one of an earlier family, are redrawn.
* ``prompt_styles``: any of ``direct``, ``json``, ``convert_then_solve`` (default all three;
  convert_then_solve has no ``euclid`` item).
* ``templates``: template names to keep (default all). A name of another category is skipped, so
  one list can drive all four tasks; a name of no category is an error.
* ``bins``: key-entity bin edges (see below).

Key entities: the number of geometric objects the problem gives (points, vectors, lines,
circles; the n vertices of a regular n-gon), fixed per template except for the polygon's n
(``Template.key_entities``). The paper has no difficulty axis; this count is the closest
analogue of the other suites' key entities. Default bins ``1-3`` (one or two objects), ``3-4``,
``4-5``, ``5-13``.

Smoke slice (``TaskSpec.smoke``): the category's first template, one family, ``direct`` only:
three items per category, one per representation.

Gold: computed with sympy from the configuration and stored as
:func:`tasks.scoring.parse.math_expression.canonical_exact` (``str(sympy.simplify(x))``:
``2*sqrt(5)``, ``3/2``, ``8*pi``; angles as whole degrees, ``60``).
"""

from __future__ import annotations

from typing import Any

import sympy

from tasks.records import Item, canonical_json
from tasks.scoring.parse.math_expression import canonical_exact
from tasks.suites.base import (
    GeneratorError,
    TaskSpec,
    bins_from_edges,
    family_id,
    find_bin,
    rng_for,
)
from tasks.suites.geometry import angle, area, length, ratio
from tasks.suites.geometry.exact import Config
from tasks.suites.geometry.prompts import STYLES, check_styles, style_items
from tasks.suites.geometry.template import REPRESENTATIONS, Template
from tasks.suites.geometry.text import readable

SUITE = "geometry"
VERSION = "2"  # 2: families with degenerate figures or a repeated rendering are redrawn
CATEGORIES = ("length", "area", "angle", "ratio")

TEMPLATES: dict[str, tuple[Template, ...]] = {
    "length": length.TEMPLATES,
    "area": area.TEMPLATES,
    "angle": angle.TEMPLATES,
    "ratio": ratio.TEMPLATES,
}

DEFAULTS: dict[str, Any] = {
    "families_per_template": 4,
    "prompt_styles": list(STYLES),
    "templates": [],
    "bins": [[1, 3], [3, 4], [4, 5], [5, 13]],
}

MAX_DRAWS_PER_FAMILY = 200


def template_names() -> dict[str, str]:
    """Every template name and its category."""
    return {t.name: category for category, ts in TEMPLATES.items() for t in ts}


def figure_problem(template_name: str, config: Config) -> str | None:
    """Why a stored configuration of ``template_name`` has a degenerate figure, or None (also for
    a template this version does not know): the validation step's check on stored items."""
    for templates in TEMPLATES.values():
        for template in templates:
            if template.name == template_name:
                return template.figure_problem(config)
    return None


def _selected(category: str, names: list[str]) -> tuple[Template, ...]:
    """The category's templates kept by the ``templates`` filter (empty: all)."""
    unknown = sorted(set(names) - set(template_names()))
    if unknown:
        known = ", ".join(sorted(template_names()))
        raise GeneratorError(f"geometry: unknown templates {', '.join(unknown)}; known: {known}")
    return tuple(t for t in TEMPLATES[category] if not names or t.name in names)


def acceptable(category: str, gold: sympy.Expr) -> bool:
    """A readable gold: whole degrees (1..179) for angles, else :func:`readable`."""
    if category == "angle":
        return bool(gold.is_Integer and 0 < gold < 180)
    return bool(gold.is_positive) and readable(gold)


def _renders(template: Template, config: Config) -> dict[str, str] | None:
    """The three renderings, or None when a number in them cannot be printed readably."""
    try:
        return {rep: template.render(config, rep) for rep in REPRESENTATIONS}
    except GeneratorError:
        return None


def draw_families(template: Template, count: int, seed: int) -> list[tuple[Config, sympy.Expr, dict[str, str]]]:
    """``count`` distinct acceptable (configuration, gold, renderings) of a template.

    Distinct means more than another configuration: a family none of whose renderings repeats a
    rendering of an earlier family (two placements of one triangle state the same Euclidean
    problem), and acceptable means a readable gold and well-formed figures; anything else is
    redrawn.
    """
    rng = rng_for(SUITE, template.category, template.name, seed)
    seen: set[str] = set()
    stated: set[str] = set()
    families = []
    for _ in range(MAX_DRAWS_PER_FAMILY * count):
        if len(families) == count:
            break
        config = template.draw(rng)
        key = canonical_json(config)
        if key in seen:
            continue
        seen.add(key)
        if template.figure_problem(config):
            continue
        gold = sympy.nsimplify(template.gold(config))
        texts = _renders(template, config) if acceptable(template.category, gold) else None
        if texts is not None and not stated & set(texts.values()):
            stated.update(texts.values())
            families.append((config, gold, texts))
    if len(families) < count:
        raise GeneratorError(
            f"geometry.{template.category}: template {template.name} gave only {len(families)} distinct families; "
            f"lower families_per_template (asked {count})"
        )
    return families


def generate(spec: TaskSpec, params: dict[str, Any], seed: int) -> list[Item]:
    """All items of one category task (see the module docstring for the parameters)."""
    count = int(params["families_per_template"])
    if count < 1:
        raise GeneratorError("geometry: families_per_template must be at least 1")
    styles = check_styles(params["prompt_styles"])
    bins = bins_from_edges(params["bins"])
    items: list[Item] = []
    for template in _selected(spec.name, list(params["templates"])):
        for config, gold, texts in draw_families(template, count, seed):
            family = family_id(SUITE, spec.name, template=template.name, config=config)
            entities = template.key_entities(config)
            for rep in REPRESENTATIONS:
                items += style_items(
                    spec, family=family, representation=rep, problem=texts[rep], gold=canonical_exact(gold),
                    styles=styles, key_entities=entities, bin=find_bin(entities, bins), seed=seed,
                    category=spec.name, params={"template": template.name, "config": config},
                )
    return items


def _task(category: str) -> TaskSpec:
    """The TaskSpec of one category."""

    def run(params: dict[str, Any], seed: int) -> list[Item]:
        return generate(spec, params, seed)

    spec = TaskSpec(
        suite=SUITE,
        name=category,
        version=VERSION,
        defaults=DEFAULTS,
        generate=run,
        description=f"GeoRepEval {category} problems, each as euclid, coord and vector renderings",
        smoke={"families_per_template": 1, "templates": [TEMPLATES[category][0].name], "prompt_styles": ["direct"]},
    )
    return spec


TASKS: dict[str, TaskSpec] = {category: _task(category) for category in CATEGORIES}
