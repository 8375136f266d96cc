"""What every geometry template shares: exact numbers, placements, text pieces, the triangle pool.

A template draws one configuration (a JSON-able dict of exact values written as sympy strings),
computes its gold with sympy from that configuration, and renders it as ``euclid`` (lengths and
angles, no coordinates), ``coord`` (coordinates or equations) and ``vector`` (position vectors,
direction vectors, dot or cross products). Configurations are drawn so that every number in
every rendering is readable: an integer, a fraction ``p/q``, or ``k√n``, ``k√n/q``.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import sympy

from tasks.suites.base import GeneratorError

REPRESENTATIONS = ("euclid", "coord", "vector")

Point = tuple[sympy.Expr, ...]
Config = dict[str, Any]


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


# --- exact values ----------------------------------------------------------------------------


def enc(x: Any) -> str:
    """An exact value as the sympy string stored in a configuration."""
    return str(sympy.nsimplify(x))


def dec(s: str) -> sympy.Expr:
    """A configuration's sympy string back to an exact value (trusted: written by :func:`enc`)."""
    return sympy.sympify(s)


def enc_points(points: dict[str, Point]) -> dict[str, list[str]]:
    """Points as a JSON-able mapping of name to coordinate strings."""
    return {name: [enc(c) for c in p] for name, p in points.items()}


def dec_points(config: Config) -> dict[str, Point]:
    """The points of a configuration as exact tuples."""
    return {name: tuple(dec(c) for c in p) for name, p in config["points"].items()}


def fmt(x: Any) -> str:
    """A readable exact number: ``5``, ``-3/2``, ``√2``, ``-3√3``, ``3√3/2``.

    Raises :class:`GeneratorError` for any other shape: a template must never print an
    unreadable number (that is a template bug, caught by the tests for every seed).
    """
    x = sympy.nsimplify(x)
    coeff, rest = x.as_coeff_Mul()
    if not coeff.is_Rational:
        raise GeneratorError(f"geometry: cannot print {x} readably")
    sign = "-" if coeff < 0 else ""
    p, q = abs(int(coeff.p)), int(coeff.q)
    den = f"/{q}" if q != 1 else ""
    if rest == 1:
        return f"{sign}{p}{den}"
    if rest.is_Pow and rest.exp == sympy.S.Half and rest.base.is_Integer:
        return f"{sign}{p if p != 1 else ''}√{rest.base}{den}"
    raise GeneratorError(f"geometry: cannot print {x} readably")


def readable(x: sympy.Expr, max_den: int = 100, max_num: int = 5000) -> bool:
    """Whether a gold is readable: ``p/q``, ``p√n/q`` or ``pπ/q`` with small p, q, n."""
    x = sympy.nsimplify(x)
    coeff, rest = x.as_coeff_Mul()
    if not coeff.is_Rational or coeff == 0 or abs(coeff.p) > max_num or coeff.q > max_den:
        return False
    if rest == 1 or rest == sympy.pi:
        return True
    return bool(rest.is_Pow and rest.exp == sympy.S.Half and rest.base.is_Integer and rest.base < 1000)


def dist(p: Point, q: Point) -> sympy.Expr:
    """Euclidean distance, exact."""
    return sympy.sqrt(sum((a - b) ** 2 for a, b in zip(p, q)))


def sub(p: Point, q: Point) -> Point:
    """``p − q`` componentwise."""
    return tuple(sympy.nsimplify(a - b) for a, b in zip(p, q))


def add(p: Point, q: Point) -> Point:
    """``p + q`` componentwise."""
    return tuple(sympy.nsimplify(a + b) for a, b in zip(p, q))


def scale(k: Any, p: Point) -> Point:
    """``k·p`` componentwise."""
    return tuple(sympy.nsimplify(k * a) for a in p)


def dot(p: Point, q: Point) -> sympy.Expr:
    """Dot product, exact."""
    return sympy.nsimplify(sum(a * b for a, b in zip(p, q)))


def cross2(p: Point, q: Point) -> sympy.Expr:
    """The z component of the cross product of two plane vectors (signed parallelogram area)."""
    return p[0] * q[1] - p[1] * q[0]


def shoelace(points: Sequence[Point]) -> sympy.Expr:
    """Area of a simple polygon from its vertices in order, exact."""
    n = len(points)
    twice = sum(cross2(points[i], points[(i + 1) % n]) for i in range(n))
    return sympy.Abs(sympy.nsimplify(twice)) / 2


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


def angle_deg(u: Point, v: Point) -> sympy.Expr:
    """The angle between two vectors in degrees, exact (sympy's acos of exact cosines)."""
    cos = sympy.nsimplify(sympy.radsimp(dot(u, v) / (sympy.sqrt(dot(u, u)) * sympy.sqrt(dot(v, v)))))
    return sympy.nsimplify(sympy.acos(cos) * 180 / sympy.pi)


def polar(r: Any, degrees: int) -> Point:
    """The point at distance ``r`` from the origin in direction ``degrees`` (exact cos and sin)."""
    t = sympy.pi * degrees / 180
    return (sympy.nsimplify(r * sympy.cos(t)), sympy.nsimplify(r * sympy.sin(t)))


# --- placements ------------------------------------------------------------------------------

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


def _sides(b: int, x: int, h: int) -> tuple[int, int, int]:
    return tuple(sorted((b, math.isqrt(x * x + h * h), math.isqrt((x - b) ** 2 + h * h))))


TRIANGLES = _lattice_triangles()


def _shapes() -> dict[tuple[int, int, int], list[tuple[int, int, int]]]:
    """Triangles grouped by shape (sides divided by their gcd), so that a draw picks the shape first."""
    shapes: dict[tuple[int, int, int], list[tuple[int, int, int]]] = {}
    for t in TRIANGLES:
        sides = _sides(*t)
        g = math.gcd(*sides)
        shapes.setdefault(tuple(v // g for v in sides), []).append(t)
    return shapes


SHAPES = _shapes()

# (p, q) with p² + q² a perfect square: directions whose lattice steps have integer length
PYTHAGOREAN = ((1, 0), (0, 1), (3, 4), (4, 3), (5, 12), (12, 5), (8, 15), (15, 8))
RIGHT_LEGS = ((3, 4), (6, 8), (5, 12), (9, 12), (8, 15), (12, 16), (7, 24), (15, 20), (20, 21), (12, 5), (4, 3), (8, 6))


def lattice_triangle(rng: random.Random) -> dict[str, Point]:
    """A random Heronian triangle ABC placed on the lattice with random names.

    The shape is drawn first (uniformly over the similarity classes), then an embedding of it:
    scale-invariant answers (angles, ratios) would otherwise repeat the 3-4-5 family's values.
    """
    b, x, h = rng.choice(SHAPES[rng.choice(sorted(SHAPES))])
    base = [tuple(sympy.Integer(v) for v in p) for p in ((0, 0), (b, 0), (x, h))]
    return place2d(rng, relabel(rng, base))


def lattice_step(rng: random.Random) -> Point:
    """A random lattice vector of integer length (a Pythagorean direction, random sign)."""
    p, q = rng.choice(PYTHAGOREAN)
    return (sympy.Integer(p * rng.choice((1, -1))), sympy.Integer(q * rng.choice((1, -1))))


# --- text ------------------------------------------------------------------------------------


def point_text(name: str, p: Point) -> str:
    """``A(3, -2)``."""
    return f"{name}({', '.join(fmt(c) for c in p)})"


def vec_text(name: str, p: Point) -> str:
    """``a = ⟨3, -2⟩``."""
    return f"{name} = ⟨{', '.join(fmt(c) for c in p)}⟩"


def join(parts: Sequence[str]) -> str:
    """``x``, ``x and y``, ``x, y and z``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def points_text(points: dict[str, Point], names: str) -> str:
    """``A(1, 2), B(3, 4) and C(5, 6)``."""
    return join([point_text(n, points[n]) for n in names])


def position_vectors_text(points: dict[str, Point], names: str) -> str:
    """``the points A, B and C have position vectors a = ⟨..⟩, b = ⟨..⟩ and c = ⟨..⟩``."""
    return (f"the points {join(list(names))} have position vectors "
            f"{join([vec_text(n.lower(), points[n]) for n in names])}")


def signed_sum(terms: Sequence[tuple[str, Any]]) -> str:
    """``x² + y² - 4x + (3/2)y - 12`` from (variable, coefficient) pairs; zero terms dropped."""
    out = ""
    for var, coeff in terms:
        coeff = sympy.nsimplify(coeff)
        if coeff == 0:
            continue
        mag = fmt(abs(coeff))
        if var:
            mag = "" if mag == "1" else (f"({mag})" if "/" in mag else mag)
        sign = ("-" if coeff < 0 else "") if not out else (" - " if coeff < 0 else " + ")
        out += f"{sign}{mag}{var}"
    return out or "0"


def linear_text(coeffs: Sequence[Any], names: Sequence[str], rhs: Any) -> str:
    """``3x + 4y = 27``, signs flipped so that the first coefficient is positive."""
    lead = next(c for c in coeffs if c != 0)
    flip = -1 if lead < 0 else 1
    return f"{signed_sum([(n, flip * c) for n, c in zip(names, coeffs)])} = {fmt(flip * rhs)}"


def shifted_square(var: str, centre: sympy.Expr) -> str:
    """``(x - 2)²``, ``(y + 3)²`` or ``x²``."""
    if centre == 0:
        return f"{var}²"
    return f"({var} - {fmt(centre)})²" if centre > 0 else f"({var} + {fmt(-centre)})²"


def circle_text(centre: Point, r2: sympy.Expr, names: str = "xyz") -> str:
    """``(x - 2)² + (y + 3)² = 25`` (also a sphere with three coordinates)."""
    return " + ".join(shifted_square(v, c) for v, c in zip(names, centre)) + f" = {fmt(r2)}"
