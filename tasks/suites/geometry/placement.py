"""Placements: where a drawn figure lands on the lattice, and the lattice draws templates share.

A template draws its figure in a convenient position and :func:`place2d` (:func:`place3d`)
moves it by a random lattice symmetry and shift, so families differ in their coordinates while
distances, angles and areas stay as drawn.
"""

from __future__ import annotations

import random
from typing import Sequence

import sympy

from tasks.suites.geometry.exact import Config, I, Point, enc_points

# (p, q) with p² + q² a perfect square: directions whose lattice steps have integer length
PYTHAGOREAN = ((1, 0), (0, 1), (3, 4), (4, 3), (5, 12), (12, 5), (8, 15), (15, 8))
# the Pythagorean directions of length 1 and 5 only
SMALL_STEPS = ((1, 0), (0, 1), (3, 4), (4, 3))

_D4 = ((1, 0, 0, 1), (0, -1, 1, 0), (-1, 0, 0, -1), (0, 1, -1, 0),
       (1, 0, 0, -1), (-1, 0, 0, 1), (0, 1, 1, 0), (0, -1, -1, 0))


def place2d(rng: random.Random, points: dict[str, Point], spread: int = 6) -> dict[str, Point]:
    """Points moved by a random symmetry of the square lattice and a random integer shift.

    Lattice symmetries keep integer and ``k√3``-style coordinates readable while giving every
    family different coordinates; distances, angles and areas do not change. An axis on which
    some coordinate is irrational is not shifted: ``2 + √3`` is not a readable coordinate.
    """
    a, b, c, d = rng.choice(_D4)
    turned = {n: (sympy.nsimplify(a * x + b * y), sympy.nsimplify(c * x + d * y)) for n, (x, y) in points.items()}
    shift = [rng.randint(-spread, spread) for _ in range(2)]
    shift = [s if all(p[i].is_Rational for p in turned.values()) else 0 for i, s in enumerate(shift)]
    return {n: (x + shift[0], y + shift[1]) for n, (x, y) in turned.items()}


def place3d(rng: random.Random, points: dict[str, Point], spread: int = 5) -> dict[str, Point]:
    """Points moved by a random permutation and sign change of the axes and an integer shift."""
    perm = rng.sample(range(3), 3)
    signs = [rng.choice((1, -1)) for _ in range(3)]
    shift = [rng.randint(-spread, spread) for _ in range(3)]
    return {n: tuple(sympy.nsimplify(signs[i] * p[perm[i]] + shift[i]) for i in range(3)) for n, p in points.items()}


def relabel(rng: random.Random, points: Sequence[Point], names: str = "ABC") -> dict[str, Point]:
    """The points under a random assignment of the names (so the asked vertex varies)."""
    order = rng.sample(range(len(points)), len(points))
    return {names[i]: points[j] for i, j in enumerate(order)}


def plane_config(rng: random.Random, points: dict[str, Point]) -> Config:
    """The configuration of a plane figure: its points, moved by :func:`place2d`."""
    return {"points": enc_points(place2d(rng, points))}


def lattice_point(rng: random.Random, spread: int = 6) -> Point:
    """A random lattice point with coordinates in ``[-spread, spread]``."""
    return (I(rng.randint(-spread, spread)), I(rng.randint(-spread, spread)))


def lattice_step(rng: random.Random, directions: Sequence[tuple[int, int]] = PYTHAGOREAN) -> Point:
    """A random lattice vector of integer length: one of ``directions``, random signs."""
    p, q = rng.choice(directions)
    return (I(p * rng.choice((1, -1))), I(q * rng.choice((1, -1))))
