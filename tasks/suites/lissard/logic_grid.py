"""Logic grid: houses in a row, one person each, attribute categories, numbered clues.

Key entity: houses (2 up to the number of values per vocabulary category, 8). The default bins
are the one-value bins 2, 3, 4, 5 (this project reads the paper's "1-2 ... 4-5" as 2..5 houses;
docs/suites.md#lissard).

Construction: a random hidden solution, then random clues that are true in it are added until
:func:`count_solutions` (a forward-checking backtracking search, written here) finds exactly one
solution; clues that are redundant for uniqueness are then removed in random order, so no clue
can be dropped without losing the unique solution. The question asks for the house number of the
holder of one random attribute; the gold is that house number in the hidden solution.
``attributes`` (default 4, as in the paper's example) sets the number of categories.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from tasks.suites.base import GeneratorError
from tasks.suites.lissard.common import OUTPUT_RULE, Problem, join_and, vocabulary

DESCRIPTION = "House logic puzzle with a unique solution; key entity: houses."
DEFAULTS = {"bins": [[2, 2], [3, 3], [4, 4], [5, 5]], "shots": 1, "attributes": 4}
MIN_KEY = 2

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")

INSTRUCTION = (
    "Solve the logic puzzle. Every puzzle has exactly one solution. Answer with the house number "
    "only, in digits. " + OUTPUT_RULE
)

Attr = tuple[int, int]  # (category index in the puzzle, value index within that category)

# Relations between the houses p (first attribute) and q (second attribute), 0-based, left to right.
BINARY: dict[str, Callable[[int, int], bool]] = {
    "same": lambda p, q: p == q,
    "different": lambda p, q: p != q,
    "left": lambda p, q: p < q,
    "right": lambda p, q: p > q,
    "next": lambda p, q: abs(p - q) == 1,
    "directly_left": lambda p, q: q == p + 1,
}
UNARY: dict[str, Callable[[int, int], bool]] = {
    "at": lambda p, house: p == house,
    "not_at": lambda p, house: p != house,
}
SENTENCES = {
    "at": "{a} lives in the {house} house.",
    "not_at": "{a} does not live in the {house} house.",
    "same": "{a} and {b} live in the same house.",
    "different": "{a} and {b} live in different houses.",
    "left": "{a} lives somewhere to the left of {b}.",
    "right": "{a} lives somewhere to the right of {b}.",
    "next": "{a} and {b} live next to each other.",
    "directly_left": "{a} lives directly left of {b}.",
}
# Relational clues are favoured: position clues alone make the puzzle a lookup.
WEIGHTS = {"at": 1, "not_at": 1, "same": 2, "different": 1, "left": 2, "right": 1, "next": 1, "directly_left": 1}


@dataclass(frozen=True)
class Clue:
    """One clue: a relation ``kind`` between attribute ``a`` and attribute ``b`` or a ``house``."""

    kind: str
    a: Attr
    b: Attr | None = None
    house: int | None = None


def count_solutions(houses: int, categories: int, clues: list[Clue], limit: int = 2) -> int:
    """Number of assignments satisfying ``clues`` (each category a permutation), counted up to ``limit``."""
    domains = {(c, v): frozenset(range(houses)) for c in range(categories) for v in range(houses)}
    neighbours: dict[Attr, list[tuple[Attr, Callable[[int, int], bool]]]] = {x: [] for x in domains}
    for clue in clues:
        if clue.kind in UNARY:
            test = UNARY[clue.kind]
            domains[clue.a] = frozenset(p for p in domains[clue.a] if test(p, clue.house))
        else:
            relation = BINARY[clue.kind]
            neighbours[clue.a].append((clue.b, relation))
            neighbours[clue.b].append((clue.a, lambda p, q, r=relation: r(q, p)))
    if any(not d for d in domains.values()):
        return 0
    return _search(domains, neighbours, set(), limit)


def _search(domains, neighbours, assigned: set[Attr], limit: int) -> int:
    free = [x for x in domains if x not in assigned]
    if not free:
        return 1
    var = min(free, key=lambda x: len(domains[x]))
    found = 0
    for house in sorted(domains[var]):
        pruned = _assign(domains, neighbours, var, house)
        if pruned is not None:
            found += _search(pruned, neighbours, assigned | {var}, limit - found)
            if found >= limit:
                break
    return found


def _assign(domains, neighbours, var: Attr, house: int):
    """Domains after putting ``var`` in ``house`` (forward checking), or None on a wipe-out."""
    new = dict(domains)
    new[var] = frozenset((house,))
    for other in new:
        if other[0] == var[0] and other != var:
            new[other] = new[other] - {house}
    for other, relation in neighbours[var]:
        new[other] = frozenset(q for q in new[other] if relation(house, q))
    if any(not d for d in new.values()):
        return None
    return new


def random_clue(rng: random.Random, solution: list[list[int]]) -> Clue:
    """A random clue that is true in ``solution`` (``solution[c][v]`` is the house of value v)."""
    categories, houses = len(solution), len(solution[0])
    occupant = [[0] * categories for _ in range(houses)]
    for c, row in enumerate(solution):
        for v, h in enumerate(row):
            occupant[h][c] = v
    kinds = [k for k in WEIGHTS if categories > 1 or k not in ("same", "different")]
    kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]

    def holder(h: int, c: int | None = None) -> Attr:
        c = rng.randrange(categories) if c is None else c
        return (c, occupant[h][c])

    if kind in UNARY:
        h = rng.randrange(houses)
        house = h if kind == "at" else rng.choice([x for x in range(houses) if x != h])
        return Clue(kind, holder(h), house=house)
    if kind == "same":
        c1, c2 = rng.sample(range(categories), 2)
        h = rng.randrange(houses)
        return Clue(kind, holder(h, c1), holder(h, c2))
    if kind == "different":
        c1, c2 = rng.sample(range(categories), 2)
        h1, h2 = rng.sample(range(houses), 2)
        return Clue(kind, holder(h1, c1), holder(h2, c2))
    pairs = [(p, q) for p in range(houses) for q in range(houses) if p != q and BINARY[kind](p, q)]
    p, q = rng.choice(pairs)
    return Clue(kind, holder(p), holder(q))


def unique_clues(rng: random.Random, solution: list[list[int]]) -> list[Clue]:
    """True clues until the solution is unique, then without the ones uniqueness does not need."""
    houses, categories = len(solution[0]), len(solution)
    clues: list[Clue] = []
    while count_solutions(houses, categories, clues) > 1:
        clue = random_clue(rng, solution)
        if clue not in clues:
            clues.append(clue)
    for clue in rng.sample(clues, len(clues)):
        fewer = [c for c in clues if c != clue]
        if count_solutions(houses, categories, fewer) == 1:
            clues = fewer
    return clues


def render(houses: int, chosen: list[dict[str, Any]], clues: list[Clue], target: Attr) -> str:
    """The puzzle text: setting, one line per category, numbered clues, question."""

    def desc(attr: Attr) -> str:
        return chosen[attr[0]]["values"][attr[1]]["desc"]

    def sentence(clue: Clue) -> str:
        text = SENTENCES[clue.kind].format(
            a=desc(clue.a),
            b=desc(clue.b) if clue.b else "",
            house=ORDINALS[clue.house] if clue.house is not None else "",
        )
        return text[0].upper() + text[1:]

    lines = [
        f"There are {houses} houses next to each other, numbered 1 on the left and {houses} on the "
        "right. There is one person living in each house. The people in these houses have "
        "different characteristics:"
    ]
    for category in chosen:
        ones = join_and([f"one {value['one']}" for value in category["values"]])
        lines.append(f"- {category['intro']}: {ones}")
    lines.append("Clues:")
    lines += [f"{i}. {sentence(clue)}" for i, clue in enumerate(clues, start=1)]
    lines.append(f"What is the number of the house where {desc(target)} lives?")
    return "\n".join(lines)


def make_problem(rng: random.Random, key: int, params: dict[str, Any]) -> Problem:
    """A puzzle with ``key`` houses whose solution is unique."""
    vocab = vocabulary("logic_grid")["categories"]
    max_houses = min(len(ORDINALS), min(len(c["values"]) for c in vocab))
    if not 2 <= key <= max_houses:
        raise GeneratorError(f"bins: logic_grid supports 2 to {max_houses} houses, got {key}")
    categories = int(params["attributes"])
    if not 1 <= categories <= len(vocab):
        raise GeneratorError(f"attributes: must be 1 to {len(vocab)}, got {categories}")
    chosen = [
        {**category, "values": rng.sample(category["values"], key)}
        for category in rng.sample(vocab, categories)
    ]
    solution = [rng.sample(range(key), key) for _ in range(categories)]
    clues = unique_clues(rng, solution)
    target = (rng.randrange(categories), rng.randrange(key))
    return Problem(
        question=render(key, chosen, clues, target),
        gold=str(solution[target[0]][target[1]] + 1),
        params={"attributes": categories, "clues": len(clues)},
    )

