"""The property tasks over a group: ``closure``, ``identity``, ``inverse``, ``associativity``.

Each is written once against :class:`~tasks.suites.symmetry.group.Group` and runs on every group
named in the ``groups`` parameter. The key entity is n, the number of ones.
"""

from __future__ import annotations

import random
import re
from fractions import Fraction
from typing import Any

from tasks.records import Item
from tasks.suites.base import GeneratorError, TaskSpec, bins_from_edges, family_id, find_bin, rng_for
from tasks.suites.symmetry.common import PROMPT_STYLES, SUITE, choices, int_range, positive_ratios, styled_items
from tasks.suites.symmetry.group import Group, group_from_name

VERSION = "1.0"
PLACEMENTS = ("end", "begin", "middle", "random")
N_BINS = [[5, 30], [30, 55], [55, 80], [80, 105], [105, 130], [130, 150]]
_SPLIT_NAME = re.compile(r"split_(\d+)_(\d+)")

_COMMON_DEFAULTS: dict[str, Any] = {
    "n_min": 5,
    "n_max": 150,
    "n_step": 5,
    "groups": ["integers", "mod7"],
    "prompt_styles": ["direct", "cot"],
    "bins": N_BINS,
}


def _groups(params: dict[str, Any]) -> list[Group]:
    names = list(params["groups"])
    if not names:
        raise GeneratorError("groups: at least one group is needed, e.g. 'integers' or 'mod7'")
    return [group_from_name(name) for name in names]


def _styles(params: dict[str, Any]) -> list[str]:
    return choices(params, "prompt_styles", list(PROMPT_STYLES))


def closure_family(group: Group, n: int) -> str:
    """The family id of the closure item with n ones (also the associativity baseline)."""
    return family_id(SUITE, "closure", group=group.name, n=n)


def place(n: int, fillers: int, one: int, filler: int, placement: str, rng: random.Random) -> list[int]:
    """n copies of ``one`` and ``fillers`` copies of ``filler``, arranged by ``placement``.

    ``end`` appends the fillers, ``begin`` puts them first, ``middle`` inserts them after
    floor(n/2) ones, ``random`` puts them at positions drawn from ``rng``.
    """
    ones, extra = [one] * n, [filler] * fillers
    if placement == "end":
        return ones + extra
    if placement == "begin":
        return extra + ones
    if placement == "middle":
        return ones[: n // 2] + extra + ones[n // 2 :]
    if placement == "random":
        positions = set(rng.sample(range(n + fillers), fillers))
        return [filler if i in positions else one for i in range(n + fillers)]
    raise GeneratorError(f"placements: unknown placement {placement!r}; known: {', '.join(PLACEMENTS)}")


def _generate_closure(params: dict[str, Any], seed: int) -> list[Item]:
    bins = bins_from_edges(params["bins"])
    items = []
    for group in _groups(params):
        for n in int_range(params, "n"):
            terms = [group.one] * n
            question = group.question(group.render(terms))
            items += styled_items(
                CLOSURE, question, _styles(params), family=closure_family(group, n), variant="none",
                key_entities=n, bin=find_bin(n, bins), gold=group.evaluate(terms), seed=seed,
                params={"group": group.name, "length": len(terms)}, category=group.name,
            )
    return items


def _placement_items(spec: TaskSpec, params: dict[str, Any], seed: int, inverse: bool) -> list[Item]:
    """Items of ``identity`` (fillers are the identity) or ``inverse`` (fillers are the inverse of one).

    The random placement is drawn per (n, filler count), not per group, so both groups are asked
    the same random expression.
    """
    bins = bins_from_edges(params["bins"])
    ratios = positive_ratios(params, "ratios", at_most=1.0 if inverse else None)
    placements = choices(params, "placements", PLACEMENTS)
    items = []
    for group in _groups(params):
        filler = group.inverse(group.one) if inverse else group.identity
        for n in int_range(params, "n"):
            for ratio in ratios:
                fillers = int(Fraction(str(ratio)) * n)  # floor, exact for decimal ratios
                if fillers == 0:
                    raise GeneratorError(f"ratios: {ratio} adds no element for n={n}; raise n_min or the ratio")
                family = family_id(SUITE, spec.name, group=group.name, n=n, ratio=ratio)
                for placement in placements:
                    rng = rng_for(SUITE, spec.name, seed, n, fillers)
                    terms = place(n, fillers, group.one, filler, placement, rng)
                    question = group.question(group.render(terms))
                    item_params = {
                        "group": group.name,
                        "ratio": ratio,
                        "fillers": fillers,
                        "filler_positions": [i for i, t in enumerate(terms) if t == filler],
                        "length": len(terms),
                    }
                    if inverse:
                        item_params["balanced"] = fillers == n
                    items += styled_items(
                        spec, question, _styles(params), family=family, variant=placement, key_entities=n,
                        bin=find_bin(n, bins), gold=group.evaluate(terms), seed=seed, params=item_params,
                        category=group.name,
                    )
    return items


def _generate_identity(params: dict[str, Any], seed: int) -> list[Item]:
    return _placement_items(IDENTITY, params, seed, inverse=False)


def _generate_inverse(params: dict[str, Any], seed: int) -> list[Item]:
    return _placement_items(INVERSE, params, seed, inverse=True)


def split_fraction(name: str) -> Fraction:
    """The share of the first segment named by a split: ``split_3_8`` is 3/8."""
    match = _SPLIT_NAME.fullmatch(name)
    if match is None:
        raise GeneratorError(f"splits: {name!r} is not of the form split_<a>_<b>")
    a, b = int(match.group(1)), int(match.group(2))
    if not 0 < a < b:
        raise GeneratorError(f"splits: {name!r} needs 0 < a < b")
    return Fraction(a, b)


def segment_lengths(n: int, fraction: Fraction) -> tuple[int, int]:
    """(first, second) segment lengths: first = round(n·fraction), halves rounded up, at least 1."""
    first = max(1, int(n * fraction + Fraction(1, 2)))
    if first >= n:
        raise GeneratorError(f"splits: {fraction} of n={n} leaves no second segment; raise n_min")
    return first, n - first


def _generate_associativity(params: dict[str, Any], seed: int) -> list[Item]:
    bins = bins_from_edges(params["bins"])
    if not params["splits"]:
        raise GeneratorError("splits: at least one split is needed, e.g. 'split_3_8'")
    splits = [(name, split_fraction(name)) for name in params["splits"]]
    items = []
    for group in _groups(params):
        for n in int_range(params, "n", lowest=2):
            family = family_id(SUITE, "associativity", group=group.name, n=n)
            baseline = {"task": "closure", "variant": "none", "family_id": closure_family(group, n)}
            for name, fraction in splits:
                first, second = segment_lengths(n, fraction)
                chain = [
                    ("segment_1", group.question(group.render([group.one] * first))),
                    ("segment_2", group.question(group.render([group.one] * second))),
                    ("combine", group.question("{segment_1.value}+{segment_2.value}")),
                ]
                items += styled_items(
                    ASSOCIATIVITY, group.question(group.render([group.one] * n)), _styles(params), family=family,
                    variant=name, key_entities=n, bin=find_bin(n, bins), gold=group.evaluate([group.one] * n),
                    seed=seed, params={
                        "group": group.name,
                        "split": str(fraction),
                        "segment_lengths": [first, second],
                        "baseline": baseline,
                    },
                    category=group.name, chain=chain,
                )
    return items


CLOSURE = TaskSpec(
    suite=SUITE,
    name="closure",
    version=VERSION,
    defaults=dict(_COMMON_DEFAULTS),
    generate=_generate_closure,
    description="1+1+...+1 with n ones; gold n (reduced in the group).",
    smoke={"n_min": 5, "n_max": 25, "n_step": 10, "groups": ["integers", "mod7"], "prompt_styles": ["direct", "cot"]},
)

IDENTITY = TaskSpec(
    suite=SUITE,
    name="identity",
    version=VERSION,
    defaults={**_COMMON_DEFAULTS, "ratios": [0.25, 0.5, 0.75, 1.0], "placements": list(PLACEMENTS)},
    generate=_generate_identity,
    description="n ones plus floor(r·n) identity elements placed at the end, beginning, middle or at random; gold n.",
    smoke={"n_min": 8, "n_max": 8, "groups": ["integers"], "ratios": [0.5], "prompt_styles": ["direct"]},
)

INVERSE = TaskSpec(
    suite=SUITE,
    name="inverse",
    version=VERSION,
    defaults={**_COMMON_DEFAULTS, "ratios": [1.0, 0.5], "placements": list(PLACEMENTS)},
    generate=_generate_inverse,
    description="n ones plus m = floor(r·n) inverses (r = 1 balanced, r < 1 unbalanced), four placements; gold n - m.",
    smoke={"n_min": 6, "n_max": 6, "groups": ["integers"], "ratios": [1.0, 0.5], "prompt_styles": ["direct"]},
)

ASSOCIATIVITY = TaskSpec(
    suite=SUITE,
    name="associativity",
    version=VERSION,
    defaults={**_COMMON_DEFAULTS, "splits": ["split_3_8", "split_1_4"]},
    generate=_generate_associativity,
    description="the closure expression in two segments, then a+b of the model's own answers; gold n.",
    smoke={"n_min": 12, "n_max": 12, "groups": ["integers"], "prompt_styles": ["direct"]},
)
