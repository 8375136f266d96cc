"""Object counting: "I have three onions, two potatoes, and a cabbage." -> 6.

Key entity: the total number of objects listed (the sum of the quantities, every category
included). Each object appears in at most one entry, with a quantity of 1..``max_quantity``
written as a word ("a"/"an" for one); when the vocabulary is too small for a long list, the
largest quantity grows so the total is still reached.

Forms (``form`` parameter):
- ``lissard`` (default): objects from all categories, the question asks for everything.
- ``bigbench``: the question names one category ("How many vegetables do I have?"); between 1
  and all of the objects belong to it, the rest are decoys from the other categories; the gold
  counts the named category only.
"""

from __future__ import annotations

import random
from typing import Any

from tasks.suites.base import GeneratorError
from tasks.suites.lissard.common import OUTPUT_RULE, Problem, join_and, vocabulary

DESCRIPTION = "Count objects listed with word quantities; key entity: objects in the list."
DEFAULTS = {"bins": [[1, 7], [7, 12], [12, 17], [17, 23]], "shots": 4, "form": "lissard", "max_quantity": 3}

FORMS = ("lissard", "bigbench")

INSTRUCTION = (
    "You are given a list of things someone has, with their quantities written in words. Answer the "
    "question with a single number written in digits. " + OUTPUT_RULE
)

_SMALL = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_word(value: int) -> str:
    """English word for 0..99 (``twenty-one``); larger quantities are never needed in one entry."""
    if not 0 <= value < 100:
        raise GeneratorError(f"bins: a quantity of {value} in one entry cannot be written in words")
    if value < 20:
        return _SMALL[value]
    tens, units = divmod(value, 10)
    return _TENS[tens - 2] + (f"-{_SMALL[units]}" if units else "")


def quantity_phrase(obj: dict[str, str], quantity: int) -> str:
    """``an onion`` for one, ``three onions`` otherwise."""
    if quantity == 1:
        return f"{obj['article']} {obj['singular']}"
    return f"{number_word(quantity)} {obj['plural']}"


def split_total(rng: random.Random, total: int, max_parts: int, max_quantity: int) -> list[int]:
    """Random positive quantities summing to ``total``, at most ``max_parts`` of them.

    The cap per entry rises above ``max_quantity`` only when ``max_parts`` entries could not
    otherwise reach the total.
    """
    cap = max(max_quantity, -(-total // max_parts))
    parts = rng.randint(-(-total // cap), min(total, max_parts))
    quantities = [1] * parts
    for _ in range(total - parts):
        open_slots = [i for i, q in enumerate(quantities) if q < cap]
        quantities[rng.choice(open_slots)] += 1
    return quantities


def entries(rng: random.Random, objects: list[dict[str, str]], total: int, max_quantity: int) -> list[str]:
    """Quantity phrases for ``total`` objects drawn from ``objects`` (each object at most once)."""
    if total == 0:
        return []
    quantities = split_total(rng, total, len(objects), max_quantity)
    chosen = rng.sample(objects, len(quantities))
    return [quantity_phrase(obj, q) for obj, q in zip(chosen, quantities)]


def make_problem(rng: random.Random, key: int, params: dict[str, Any]) -> Problem:
    """A list of ``key`` objects and its question, in the form ``params['form']``."""
    form = params["form"]
    if form not in FORMS:
        raise GeneratorError(f"form: expected one of {', '.join(FORMS)}, got {form!r}")
    max_quantity = int(params["max_quantity"])
    if max_quantity < 1:
        raise GeneratorError(f"max_quantity: must be at least 1, got {max_quantity}")
    categories = vocabulary("objects")["categories"]
    if form == "lissard":
        everything = [obj for objs in categories.values() for obj in objs]
        phrases = entries(rng, everything, key, max_quantity)
        question_noun, gold, category = "things", key, ""
    else:
        category = rng.choice(sorted(categories))
        decoys = [obj for name, objs in categories.items() if name != category for obj in objs]
        target = rng.randint(1, key)
        phrases = entries(rng, categories[category], target, max_quantity)
        phrases += entries(rng, decoys, key - target, max_quantity)
        rng.shuffle(phrases)
        question_noun, gold = category, target
    total_clause = " in total" if form == "lissard" else ""
    return Problem(
        question=f"I have {join_and(phrases)}. How many {question_noun} do I have{total_clause}?",
        gold=str(gold),
        params={"form": form, "category": category, "entries": len(phrases)},
    )

