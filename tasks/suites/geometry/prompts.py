"""Prompt styles of the geometry suite and the items one problem statement becomes.

Styles (the ``prompt_style`` field; the representation is the ``variant``):

* ``direct``: the problem, then a request for the exact value on a final ``Answer:`` line;
* ``json``: the problem, then a request for a JSON object with a ``numeric_answer`` field
  (GeoRepEval's structured output, paper §3.2 and appendix A);
* ``convert_then_solve`` (coord and vector only): two linked requests. Call ``convert`` asks
  for the problem rewritten in classical Euclidean form, without solving it; call ``solve``
  receives only that rewrite (``{convert.text}``) and answers like ``direct``. Two calls rather
  than one prompt ("first convert, then solve") because the intervention is about the
  representation the solver reasons over: a single call still shows the solver the coordinate
  or vector text, and a single reply mixes the conversion with the solution, so the conversion
  could not be inspected or scored on its own. This matches the symmetry suite's
  associativity chain. The convert step is parsed with the ``text`` parser only because every
  step gets a parse: that parse means nothing and no metric should read it.

The instructions contain no digits in the direct and convert styles, so everything numeric in
such a prompt belongs to the problem (the tests read the numbers back from it).
"""

from __future__ import annotations

from typing import Any, Sequence

from tasks.records import Item, Step
from tasks.suites import ANSWER_TYPES
from tasks.suites.base import Bin, GeneratorError, TaskSpec, make_item

STYLES = ("direct", "json", "convert_then_solve")
ANSWER_TYPE = ANSWER_TYPES["geometry"]

_EXACT = (
    "Give the exact value (an integer, a fraction, a simplified radical or a multiple of π; "
    "angles in degrees, ratios as a single number or fraction)."
)
DIRECT = f"{_EXACT}\nEnd your reply with a final line of the form\nAnswer: <exact value>"
JSON = (
    f"{_EXACT}\nReply with only a JSON object of the form "
    '{"reasoning": "<short working>", "numeric_answer": "<exact value, e.g. 2*sqrt(5), 3/2 or 8*pi>"}'
)
CONVERT = (
    "Rewrite the following geometry problem in classical Euclidean form: use named points, "
    "lengths and angles only, with no coordinates, equations or vectors. Keep every given "
    "quantity and the question. Do not solve the problem; reply with the rewritten problem only."
    "\n\nProblem: {problem}"
)
SOLVE = "Solve the following geometry problem.\n\n{convert.text}\n\n" + DIRECT


def check_styles(styles: Sequence[str]) -> list[str]:
    """The requested styles in canonical order; an unknown one is an error naming it."""
    unknown = sorted(set(styles) - set(STYLES))
    if unknown:
        raise GeneratorError(f"geometry: unknown prompt_styles {', '.join(unknown)}; known: {', '.join(STYLES)}")
    if not styles:
        raise GeneratorError("geometry: prompt_styles is empty")
    return [s for s in STYLES if s in styles]


def style_items(
    spec: TaskSpec,
    *,
    family: str,
    representation: str,
    problem: str,
    gold: str,
    styles: Sequence[str],
    key_entities: int,
    bin: Bin,
    seed: int,
    category: str,
    params: dict[str, Any],
) -> list[Item]:
    """The items of one rendering, one per prompt style (convert_then_solve skips ``euclid``)."""
    common = dict(
        family=family, variant=representation, key_entities=key_entities, bin=bin, gold=gold,
        answer_type=ANSWER_TYPE, seed=seed, category=category, params=params,
    )
    items = []
    for style in styles:
        if style == "direct":
            items.append(make_item(spec, prompt_style=style, user=f"{problem}\n\n{DIRECT}", **common))
        elif style == "json":
            items.append(make_item(spec, prompt_style=style, user=f"{problem}\n\n{JSON}", **common))
        elif representation != "euclid":
            convert = CONVERT.replace("{problem}", problem)
            steps = (Step("convert", convert, answer_type="text"), Step("solve", SOLVE, answer_type=ANSWER_TYPE))
            items.append(make_item(spec, prompt_style=style, user=convert, steps=steps, **common))
    return items
