"""Exact values: how a configuration stores them, and the arithmetic of points and vectors.

A configuration is a JSON-able dict whose exact values are sympy strings (:func:`enc`); a point
or a vector is a tuple of sympy expressions, so every length, angle and area a gold needs is
computed exactly.
"""

from __future__ import annotations

from typing import Any, Sequence

import sympy

Point = tuple[sympy.Expr, ...]
Config = dict[str, Any]

# Shorthands of the templates' literal coordinates.
Z = sympy.Integer(0)
I = sympy.Integer  # noqa: E741
ORIGIN = (Z, Z)


def enc(x: Any) -> str:
    """An exact value as the sympy string stored in a configuration."""
    return str(sympy.nsimplify(x))


def dec(s: str) -> sympy.Expr:
    """A configuration's sympy string back to an exact value (trusted: written by :func:`enc`)."""
    return sympy.sympify(s)


def enc_vector(v: Sequence[Any]) -> list[str]:
    """A point or vector as the list of its coordinate strings."""
    return [enc(x) for x in v]


def dec_vector(v: Sequence[str]) -> Point:
    """A stored coordinate list back to an exact tuple."""
    return tuple(dec(x) for x in v)


def enc_points(points: dict[str, Point]) -> dict[str, list[str]]:
    """Points as a JSON-able mapping of name to coordinate strings."""
    return {name: enc_vector(p) for name, p in points.items()}


def dec_points(config: Config) -> dict[str, Point]:
    """The points of a configuration as exact tuples."""
    return {name: dec_vector(p) for name, p in config["points"].items()}


def dist(p: Point, q: Point) -> sympy.Expr:
    """Euclidean distance, exact."""
    return sympy.sqrt(sum((a - b) ** 2 for a, b in zip(p, q)))


def norm(v: Point) -> sympy.Expr:
    """The length of a vector, exact."""
    return dist(v, tuple(Z for _ in v))


def sub(p: Point, q: Point) -> Point:
    """``p − q`` componentwise."""
    return tuple(sympy.nsimplify(a - b) for a, b in zip(p, q))


def add(p: Point, q: Point) -> Point:
    """``p + q`` componentwise."""
    return tuple(sympy.nsimplify(a + b) for a, b in zip(p, q))


def scale(k: Any, p: Point) -> Point:
    """``k·p`` componentwise."""
    return tuple(sympy.nsimplify(k * a) for a in p)


def midpoint(p: Point, q: Point) -> Point:
    """The midpoint of ``pq``."""
    return scale(sympy.Rational(1, 2), add(p, q))


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


def polygon_area(config: Config, names: str) -> sympy.Expr:
    """The area of the configuration's polygon with vertices ``names`` in order."""
    p = dec_points(config)
    return shoelace([p[n] for n in names])


def line_intersection(p1: Point, p2: Point, q1: Point, q2: Point) -> Point:
    """The intersection of the plane lines p1p2 and q1q2, exact."""
    t, s = sympy.symbols("t s")
    equations = [p1[i] + t * (p2[i] - p1[i]) - q1[i] - s * (q2[i] - q1[i]) for i in range(2)]
    sol = sympy.solve(equations, [t, s], dict=True)[0]
    return tuple(sympy.nsimplify(p1[i] + sol[t] * (p2[i] - p1[i])) for i in range(2))


def angle_deg(u: Point, v: Point) -> sympy.Expr:
    """The angle between two vectors in degrees, exact (sympy's acos of exact cosines)."""
    cos = sympy.nsimplify(sympy.radsimp(dot(u, v) / (sympy.sqrt(dot(u, u)) * sympy.sqrt(dot(v, v)))))
    return sympy.nsimplify(sympy.acos(cos) * 180 / sympy.pi)


def polar(r: Any, degrees: int) -> Point:
    """The point at distance ``r`` from the origin in direction ``degrees`` (exact cos and sin)."""
    t = sympy.pi * degrees / 180
    return (sympy.nsimplify(r * sympy.cos(t)), sympy.nsimplify(r * sympy.sin(t)))
