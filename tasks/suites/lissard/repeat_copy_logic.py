"""Repeat copy logic: follow a repetition instruction with conditions and write the exact text.

Key entity: repetitions (any integer from 1). Instructions come from the templates in
``data/repeat_copy.json`` (alternation, "every second time", "but not on the last", first/last
substitutions, framing, counting). The gold is never typed: :func:`evaluate` runs the template's
rules for repetitions 1..n, so odd and even counts are handled by the same code path.
Conventions where the paper is silent: repetitions are numbered from 1, so "every second time"
means repetitions 2, 4, 6, ...; all pieces of the answer are joined by single spaces.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from tasks.suites.base import GeneratorError
from tasks.suites.lissard.common import OUTPUT_RULE, Problem, vocabulary

DESCRIPTION = "Write the text a repetition instruction asks for; key entity: repetitions."
DEFAULTS = {"bins": [[1, 9], [9, 17], [17, 25], [25, 33]], "shots": 1}

INSTRUCTION = (
    "Follow the instruction exactly. Write only the words it asks you to say, in order, separated "
    "by single spaces, without quotation marks or punctuation. " + OUTPUT_RULE
)

CONDITIONS: dict[str, Callable[[int, int], bool]] = {
    "odd": lambda i, n: i % 2 == 1,
    "even": lambda i, n: i % 2 == 0,
    "third": lambda i, n: i % 3 == 0,
    "first": lambda i, n: i == 1,
    "last": lambda i, n: i == n,
    "not_first": lambda i, n: i != 1,
    "not_last": lambda i, n: i != n,
}


def templates() -> list[dict[str, Any]]:
    """The instruction templates of the vocabulary file."""
    return vocabulary("repeat_copy")["templates"]


def template_by_id(template_id: str) -> dict[str, Any]:
    """One template by its id; an unknown id is an error naming it."""
    for template in templates():
        if template["id"] == template_id:
            return template
    raise GeneratorError(f"unknown repeat-copy template {template_id!r}")


def evaluate(template: dict[str, Any], slots: dict[str, str], n: int) -> str:
    """The exact text a template asks for with ``n`` repetitions (the gold answer)."""
    pieces = [text.format(**slots) for text in template.get("before", [])]
    for i in range(1, n + 1):
        for rule in template["each"]:
            holds = CONDITIONS[rule["when"]](i, n) if "when" in rule else True
            text = rule["say"] if holds else rule.get("else")
            if text is not None:
                pieces.append(text.format(**slots, i=i))
    pieces += [text.format(**slots) for text in template.get("after", [])]
    return " ".join(pieces)


def instruction_text(template: dict[str, Any], slots: dict[str, str], n: int) -> str:
    """The template's instruction with slots and the repetition count filled in."""
    times = "1 time" if n == 1 else f"{n} times"
    return template["text"].format(**slots, n=n, times=times)


def fill_slots(rng: random.Random, template: dict[str, Any]) -> dict[str, str]:
    """Distinct values for the template's slots, each from its named pool."""
    pools = vocabulary("repeat_copy")["pools"]
    used: set[str] = set()
    slots: dict[str, str] = {}
    for slot, pool in template["slots"].items():
        value = rng.choice([w for w in pools[pool] if w not in used])
        used.add(value)
        slots[slot] = value
    return slots


def make_problem(rng: random.Random, key: int, params: dict[str, Any]) -> Problem:
    """A random template with ``key`` repetitions."""
    template = rng.choice(templates())
    slots = fill_slots(rng, template)
    return Problem(
        question=instruction_text(template, slots, key),
        gold=evaluate(template, slots, key),
        params={"template": template["id"], "slots": slots},
    )

