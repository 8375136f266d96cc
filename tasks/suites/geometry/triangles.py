"""Triangles: the lattice pool they are drawn from, their configurations, measures and texts.

Most plane templates state a triangle (or a parallelogram completed from one); what they share
about it lives here: drawing it, its sides, area and circle radii, and the phrases that state it.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable

import sympy

from tasks.suites.geometry.exact import Config, I, Point, Z, add, dec_points, dist, enc_points, shoelace, sub
from tasks.suites.geometry.placement import place2d, plane_config, relabel
from tasks.suites.geometry.template import Template, stated
from tasks.suites.geometry.text import in_plane, lengths_text, points_text, position_vectors_text, segment_text

MAX_SIDE = 26


def _lattice_triangles() -> tuple[tuple[int, int, int], ...]:
    """Triangles (b, x, h): A(0,0), B(b,0), C(x,h) with integer sides up to 26 (Heronian), every
    lattice embedding of every such triangle, scaled copies included."""
    found = []
    for b in range(2, MAX_SIDE + 1):
        for h in range(1, MAX_SIDE + 1):
            for x in range(-MAX_SIDE, b + MAX_SIDE + 1):
                ac, bc = x * x + h * h, (x - b) ** 2 + h * h
                ra, rb = math.isqrt(ac), math.isqrt(bc)
                if ra * ra == ac and rb * rb == bc and max(b, ra, rb) <= MAX_SIDE:
                    found.append((b, x, h))
    return tuple(found)


def _sorted_sides(b: int, x: int, h: int) -> tuple[int, int, int]:
    return tuple(sorted((b, math.isqrt(x * x + h * h), math.isqrt((x - b) ** 2 + h * h))))


TRIANGLES = _lattice_triangles()


def _shapes() -> dict[tuple[int, int, int], list[tuple[int, int, int]]]:
    """Triangles grouped by shape (sides divided by their gcd), so that a draw picks the shape first."""
    shapes: dict[tuple[int, int, int], list[tuple[int, int, int]]] = {}
    for t in TRIANGLES:
        sides = _sorted_sides(*t)
        g = math.gcd(*sides)
        shapes.setdefault(tuple(v // g for v in sides), []).append(t)
    return shapes


SHAPES = _shapes()

# legs (p, q) of right triangles with an integer hypotenuse
RIGHT_LEGS = ((3, 4), (6, 8), (5, 12), (9, 12), (8, 15), (12, 16), (7, 24), (15, 20), (20, 21), (12, 5), (4, 3), (8, 6))


def lattice_triangle(rng: random.Random) -> dict[str, Point]:
    """A random Heronian triangle ABC placed on the lattice with random names.

    The shape is drawn first (uniformly over the similarity classes), then an embedding of it:
    scale-invariant answers (angles, ratios) would otherwise repeat the 3-4-5 family's values.
    """
    b, x, h = rng.choice(SHAPES[rng.choice(sorted(SHAPES))])
    base = [tuple(sympy.Integer(v) for v in p) for p in ((0, 0), (b, 0), (x, h))]
    return place2d(rng, relabel(rng, base))


def _by_base() -> dict[int, list[tuple[int, int, int]]]:
    """The pool's triangles (b, x, h) grouped by their base b."""
    found: dict[int, list[tuple[int, int, int]]] = {}
    for b, x, h in TRIANGLES:
        found.setdefault(b, []).append((b, x, h))
    return found


TRIANGLES_BY_BASE = _by_base()


def triangle_config(rng: random.Random) -> Config:
    """A Heronian triangle ABC on the lattice."""
    return {"points": enc_points(lattice_triangle(rng))}


def right_triangle_config(rng: random.Random, legs: tuple[int, int] | None = None) -> Config:
    """A right triangle with the right angle at C; legs random (1..12) unless given."""
    p, q = legs or (rng.randint(1, 12), rng.randint(1, 12))
    return plane_config(rng, {"A": (I(p), Z), "B": (Z, I(q)), "C": (Z, Z)})


def abd_config(rng: random.Random) -> Config:
    """A Heronian triangle named A, B, D: three vertices of parallelogram ABCD."""
    t = dec_points(triangle_config(rng))
    return {"points": enc_points({"A": t["A"], "B": t["B"], "D": t["C"]})}


def parallelogram_c(p: dict[str, Point]) -> Point:
    """The fourth vertex C = B + D - A."""
    return sub(add(p["B"], p["D"]), p["A"])


def side_lengths(p: dict[str, Point]) -> tuple[sympy.Expr, sympy.Expr, sympy.Expr]:
    """(a, b, c) = (BC, CA, AB)."""
    return dist(p["B"], p["C"]), dist(p["C"], p["A"]), dist(p["A"], p["B"])


def triangle_area(p: dict[str, Point]) -> sympy.Expr:
    """The area of triangle ABC."""
    return shoelace([p["A"], p["B"], p["C"]])


def circumradius(p: dict[str, Point]) -> sympy.Expr:
    """R = abc / (4K)."""
    a, b, c = side_lengths(p)
    return a * b * c / (4 * triangle_area(p))


def inradius(p: dict[str, Point]) -> sympy.Expr:
    """r = K / s."""
    return 2 * triangle_area(p) / sum(side_lengths(p))


def sides_text(config: Config) -> str:
    """``AB = 13, BC = 14 and CA = 15`` for a triangle configuration."""
    return lengths_text(config, ("AB", "BC", "CA"))


def sides_statement(config: Config) -> str:
    """``In triangle ABC, AB = .., BC = .. and CA = ...`` (the euclid statement of a triangle)."""
    return f"In triangle ABC, {sides_text(config)}."


def right_text(config: Config) -> str:
    """``In triangle ABC, ∠ACB = 90°, AC = .. and BC = ..`` (the euclid statement of a right triangle)."""
    return f"In triangle ABC, ∠ACB = 90°, {lengths_text(config, ('AC', 'BC'))}."


def vertices_text(config: Config) -> str:
    """``Triangle ABC has vertices A(..), B(..) and C(..)`` (the coord statement, unpunctuated)."""
    return f"Triangle ABC has vertices {points_text(dec_points(config), 'ABC')}"


def vertices_statement(config: Config) -> str:
    """:func:`vertices_text` as a sentence."""
    return f"{vertices_text(config)}."


def triangle_vectors_text(config: Config) -> str:
    """``In triangle ABC, the points A, B and C have position vectors ...`` (the vector statement)."""
    return f"In triangle ABC, {position_vectors_text(dec_points(config), 'ABC')}."


def plane_vectors_text(config: Config) -> str:
    """``In the plane, the points A, B and C have position vectors ...`` (a vector statement that
    does not call ABC a triangle)."""
    return in_plane(config, "ABC")


def triangle_template(
    name: str,
    category: str,
    gold: Callable[[dict[str, Point]], sympy.Expr],
    questions: tuple[str, str, str],
    vector_opening: Callable[[Config], str] = triangle_vectors_text,
    *,
    euclid_opening: Callable[[Config], str] = sides_statement,
    coord_opening: Callable[[Config], str] = vertices_statement,
    draw: Callable[[random.Random], Config] = triangle_config,
) -> Template:
    """A template on a lattice triangle ABC (``draw``) stated by its sides (``euclid_opening``),
    its vertices (``coord_opening``) or ``vector_opening``, each followed by that representation's
    question; ``gold`` takes the triangle's points."""
    return stated(
        name, category, 3, draw, lambda c: gold(dec_points(c)),
        (euclid_opening, coord_opening, vector_opening), questions, figures=("ABC",),
    )


def circumcircle_template(name: str, category: str, measure: str, gold: Callable[[dict[str, Point]], sympy.Expr],
                          **openings: Any) -> Template:
    """A triangle template asking the ``measure`` (radius, area) of the circle through A, B and C;
    its coord rendering is the question alone, naming the points' coordinates."""
    def coord(config: Config) -> str:
        return f"Find the {measure} of the circle through the points {points_text(dec_points(config), 'ABC')}."

    question = f"Find the {measure} of the circle through A, B and C."
    return triangle_template(name, category, gold, (question, "", question), coord_opening=coord, **openings)


def _parallelogram_euclid(config: Config) -> str:
    """``In parallelogram ABCD, AB = .., AD = .. and the diagonal BD = ..``."""
    ab, ad, bd = (segment_text(config, s) for s in ("AB", "AD", "BD"))
    return f"In parallelogram ABCD, AB = {ab}, AD = {ad} and the diagonal BD = {bd}."


def parallelogram_template(name: str, category: str, gold: Callable[[dict[str, Point]], sympy.Expr],
                           question: str, vector_opening: Callable[[Config], str]) -> Template:
    """A template on parallelogram ABCD given by the vertices A, B and D of a lattice triangle:
    stated by two sides and the diagonal BD (euclid), the three vertices (coord) or
    ``vector_opening`` (vector), each followed by ``question``; ``gold`` takes the points."""
    def coord(config: Config) -> str:
        return f"Three vertices of parallelogram ABCD are {points_text(dec_points(config), 'ABD')}."

    return stated(
        name, category, 3, abd_config, lambda c: gold(dec_points(c)),
        (_parallelogram_euclid, coord, vector_opening), (question,) * 3, figures=("ABD",),
    )
