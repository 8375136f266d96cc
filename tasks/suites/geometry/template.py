"""A geometry template, and the figures it states: when a configuration is not a problem of its shape.

A template draws one configuration (a JSON-able dict of exact values written as sympy strings,
:mod:`tasks.suites.geometry.exact`), computes its gold with sympy from that configuration, and
renders it as ``euclid`` (lengths and angles, no coordinates), ``coord`` (coordinates or
equations) and ``vector`` (position vectors, direction vectors, dot or cross products).
Configurations are drawn so that every number in every rendering is readable
(:mod:`tasks.suites.geometry.text`).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Callable

import sympy

from tasks.suites.geometry.exact import Config, Point, cross2, dec_points, shoelace, sub

REPRESENTATIONS = ("euclid", "coord", "vector")


@dataclass(frozen=True)
class Template:
    """One parameterised problem: ``draw`` a configuration, compute its ``gold``, render it.

    ``entities`` is the template's key-entity count (docs/suites.md#key-entities-and-bins): the
    number of geometric objects the problem gives (points, vectors, lines, circles); ``count``, when set, computes it from
    the configuration instead (a regular n-gon counts its n vertices). It is a property of the
    configuration, the same for the three renderings, so that bins compare like with like.

    ``figures`` names the polygons the problem states, each by its vertices in order (``ABC``,
    ``ABCD``); a configuration whose figure is degenerate (see :func:`polygon_problem`) is not a
    problem of that shape and is redrawn.
    """

    name: str
    category: str
    entities: int
    draw: Callable[[random.Random], Config]
    gold: Callable[[Config], sympy.Expr]
    euclid: Callable[[Config], str]
    coord: Callable[[Config], str]
    vector: Callable[[Config], str]
    count: Callable[[Config], int] | None = None
    figures: tuple[str, ...] = ()

    def render(self, config: Config, representation: str) -> str:
        """The problem statement of ``config`` in one representation."""
        return {"euclid": self.euclid, "coord": self.coord, "vector": self.vector}[representation](config)

    def key_entities(self, config: Config) -> int:
        """The key-entity count of one configuration."""
        return self.count(config) if self.count else self.entities

    def figure_problem(self, config: Config) -> str | None:
        """Why a figure of ``config`` is degenerate, or None when every figure is well formed."""
        if not self.figures:
            return None
        points = dec_points(config)
        for figure in self.figures:
            problem = polygon_problem({n: points[n] for n in figure})
            if problem:
                return f"{self.name}: {problem}"
        return None


def stated(
    name: str,
    category: str,
    entities: int,
    draw: Callable[[random.Random], Config],
    gold: Callable[[Config], sympy.Expr],
    statements: tuple[Callable[[Config], str], Callable[[Config], str], Callable[[Config], str]],
    questions: tuple[str, str, str],
    figures: tuple[str, ...] = (),
) -> Template:
    """A template whose rendering in each representation (euclid, coord, vector) is that
    representation's statement of the figure followed by its question (none when empty)."""
    def rendering(statement: Callable[[Config], str], question: str) -> Callable[[Config], str]:
        return lambda c: f"{statement(c)} {question}" if question else statement(c)

    euclid, coord, vector = (rendering(s, q) for s, q in zip(statements, questions))
    return Template(name, category, entities, draw, gold, euclid, coord, vector, figures=figures)


def _is_zero(x: sympy.Expr) -> bool:
    # Coordinates are rationals and integer surds: expanding puts such a number in a canonical
    # form (√2·√3 = √6), exact and far cheaper than simplify.
    return sympy.expand(x) == 0


def _segments_cross(p: Point, q: Point, r: Point, s: Point) -> bool:
    """Whether the segments pq and rs share a point (the polygon check's non-adjacent sides)."""
    def side(a: Point, b: Point, c: Point) -> int:
        value = sympy.expand(cross2(sub(b, a), sub(c, a)))
        return 0 if value == 0 else (1 if value > 0 else -1)

    d1, d2, d3, d4 = side(r, s, p), side(r, s, q), side(p, q, r), side(p, q, s)
    if d1 * d2 < 0 and d3 * d4 < 0:
        return True

    def on(a: Point, b: Point, c: Point) -> bool:  # c on segment ab, given collinear
        return all(min(x, y) <= z <= max(x, y) for x, y, z in zip(a, b, c))

    return any(d == 0 and on(*seg, pt) for d, seg, pt in
               ((d1, (r, s), p), (d2, (r, s), q), (d3, (p, q), r), (d4, (p, q), s)))


def polygon_problem(vertices: dict[str, Point]) -> str | None:
    """Why the plane polygon with these vertices (names to points, in order) is degenerate, or
    None: two vertices coincide (a zero-length side or diagonal), three vertices are collinear
    (a "quadrilateral" that is a triangle, an angle of 180°), two non-adjacent sides meet (not a
    simple polygon), or the area is zero."""
    names = list(vertices)
    for a, b in itertools.combinations(names, 2):
        if all(_is_zero(x - y) for x, y in zip(vertices[a], vertices[b])):
            return f"vertices {a} and {b} coincide"
    for a, b, c in itertools.combinations(names, 3):
        if _is_zero(cross2(sub(vertices[b], vertices[a]), sub(vertices[c], vertices[a]))):
            return f"vertices {a}, {b} and {c} are collinear"
    n = len(names)
    for i in range(n):
        for j in range(i + 2, n):
            if (j + 1) % n == i:
                continue  # adjacent sides share a vertex
            p, q = vertices[names[i]], vertices[names[(i + 1) % n]]
            r, s = vertices[names[j]], vertices[names[(j + 1) % n]]
            if _segments_cross(p, q, r, s):
                return f"sides {names[i]}{names[(i + 1) % n]} and {names[j]}{names[(j + 1) % n]} cross"
    if _is_zero(shoelace([vertices[name] for name in names])):
        return "zero area"
    return None
