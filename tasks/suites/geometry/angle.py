"""Category ``angle``: angles and directions, always asked and answered in whole degrees.

Whole-degree answers from readable coordinates limit the angles to multiples of 30° and 45°
(and what halving or regular polygons give); coordinates then hold ``k√2`` or ``k√3``. The
category's circle and solid templates are in :mod:`~tasks.suites.geometry.circles` and
:mod:`~tasks.suites.geometry.solids`.
"""

from __future__ import annotations

import math
import random

import sympy

from tasks.suites.geometry.circles import INSCRIBED_ANGLE, TANGENT_ANGLE
from tasks.suites.geometry.exact import ORIGIN, Config, I, Point, Z, angle_deg, dec_points, dist, enc_points, polar, sub
from tasks.suites.geometry.placement import plane_config
from tasks.suites.geometry.solids import CUBE_ANGLE
from tasks.suites.geometry.template import Template
from tasks.suites.geometry.text import (
    coefficient, fmt, lengths_text, points_text, position_vectors_text, segment_text, vec_text, vector_question,
)
from tasks.suites.geometry.triangles import plane_vectors_text, sides_text, triangle_template


def _vertex_angle(p: dict[str, Point], vertex: str, first: str, second: str) -> sympy.Expr:
    """∠(first, vertex, second) of the points, in degrees."""
    return angle_deg(sub(p[first], p[vertex]), sub(p[second], p[vertex]))


def _angle_at(c: Config, vertex: str, first: str, second: str) -> sympy.Expr:
    """∠(first, vertex, second) of the configuration's points, in degrees."""
    return _vertex_angle(dec_points(c), vertex, first, second)


# --- angle between two vectors ---------------------------------------------------------------

# B for each angle AOB with A on the positive x-axis, m a scale: readable coordinates
_VECTOR_B = {45: (1, 1), 60: (1, sympy.sqrt(3)), 90: (0, 1), 120: (-1, sympy.sqrt(3)), 135: (-1, 1)}


def _vector_angle_draw(rng: random.Random) -> Config:
    angle = rng.choice(sorted(_VECTOR_B))
    m = rng.randint(1, 6)
    return plane_config(rng, {
        "O": ORIGIN, "A": (I(rng.randint(1, 8)), Z), "B": tuple(sympy.nsimplify(m * x) for x in _VECTOR_B[angle]),
    })


def _vector_angle_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"Find the angle between the vectors {vec_text('u', sub(p['A'], p['O']))} and "
            f"{vec_text('v', sub(p['B'], p['O']))}, in degrees.")


VECTOR_ANGLE = Template(
    "vector_angle", "angle", 3,
    figures=("OAB",),
    draw=_vector_angle_draw, gold=lambda c: _angle_at(c, "O", "A", "B"),
    euclid=lambda c: f"In triangle AOB, {lengths_text(c, ('OA', 'OB', 'AB'))}. Find ∠AOB in degrees.",
    coord=lambda c: f"For the points {points_text(dec_points(c), 'OAB')}, find ∠AOB in degrees.",
    vector=_vector_angle_vector,
)

# --- angle from three integer sides ----------------------------------------------------------


def _integer_triangles() -> dict[int, list[tuple[int, int]]]:
    """Per angle at C: (CB, CA) with an integer third side; CB even so that B's coordinates are readable."""
    found: dict[int, list[tuple[int, int]]] = {}
    for angle, cross in ((60, -1), (90, 0), (120, 1)):
        for a in range(2, 17, 1 if angle == 90 else 2):
            for b in range(1, 17):
                c2 = a * a + b * b + cross * a * b
                if math.isqrt(c2) ** 2 == c2:
                    found.setdefault(angle, []).append((a, b))
    return found


_INTEGER_TRIANGLES = _integer_triangles()


def _sides_angle_draw(rng: random.Random) -> Config:
    angle = rng.choice(sorted(_INTEGER_TRIANGLES))
    a, b = rng.choice(_INTEGER_TRIANGLES[angle])
    return plane_config(rng, {"A": (I(b), Z), "B": polar(a, angle), "C": ORIGIN})


SIDES_ANGLE = triangle_template(
    "sides_angle", "angle", lambda p: _vertex_angle(p, "C", "A", "B"),
    ("Find ∠ACB in degrees.", "Find ∠ACB in degrees.", vector_question("a", "c", "b")), plane_vectors_text,
    euclid_opening=lambda c: f"Triangle ABC has sides {sides_text(c)}.", draw=_sides_angle_draw,
)

# --- inclination of a line -------------------------------------------------------------------

_RISE = {30: (sympy.sqrt(3), 1), 45: (1, 1), 60: (1, sympy.sqrt(3))}


def _inclination_draw(rng: random.Random) -> Config:
    m = rng.randint(1, 6)
    step = tuple(sympy.nsimplify(m * x) for x in _RISE[rng.choice(sorted(_RISE))])
    # P moves only along axes where the step is rational (see place2d)
    p = tuple(I(rng.randint(-6, 6)) if x.is_Rational else Z for x in step)
    return {"points": enc_points({"P": p, "Q": (p[0] + step[0], p[1] + step[1])})}


def _inclination_euclid(c: Config) -> str:
    p = dec_points(c)
    run, rise = sub(p["Q"], p["P"])
    return (f"A straight ramp rises from P to Q: the vertical rise is {fmt(rise)} and the horizontal run is "
            f"{fmt(run)}. Find the angle between the ramp and the horizontal, in degrees.")


def _inclination_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"The points P and Q have position vectors {vec_text('p', p['P'])} and {vec_text('q', p['Q'])}. "
            f"Find the angle between the vector q - p and {vec_text('i', (I(1), Z))}, in degrees.")


INCLINATION = Template(
    "inclination", "angle", 2,
    draw=_inclination_draw,
    gold=lambda c: angle_deg(sub(dec_points(c)["Q"], dec_points(c)["P"]), (I(1), Z)),
    euclid=_inclination_euclid,
    coord=lambda c: (
        f"Find the angle between the line through {points_text(dec_points(c), 'PQ')} and the positive x-axis, "
        "in degrees."
    ),
    vector=_inclination_vector,
)

# --- acute angle between two lines -----------------------------------------------------------

# a readable direction vector for each inclination
_DIRECTIONS = {0: (1, 0), 30: (sympy.sqrt(3), 1), 45: (1, 1), 60: (1, sympy.sqrt(3)), 90: (0, 1),
               120: (-1, sympy.sqrt(3)), 135: (-1, 1), 150: (-sympy.sqrt(3), 1)}


def _lines_draw(rng: random.Random) -> Config:
    phi1, phi2 = rng.sample(sorted(_DIRECTIONS), 2)  # distinct inclinations below 180°: never parallel
    return {"phi": [phi1, phi2], "intercepts": [rng.randint(-6, 6), rng.randint(-6, 6)],
            "scales": [rng.randint(1, 3), rng.randint(1, 3)], "op": rng.randint(1, 6)}


def _lines_angle(c: Config) -> sympy.Expr:
    u, v = (_DIRECTIONS[phi] for phi in c["phi"])
    angle = angle_deg(u, v)
    return sympy.Min(angle, 180 - angle)


def _line_equation(phi: int, intercept: int) -> str:
    """``y = √3x + 2`` (or ``x = 2`` for a vertical line)."""
    if phi == 90:
        return f"x = {intercept}"
    slope = sympy.nsimplify(sympy.tan(sympy.pi * phi / 180))
    if slope == 0:
        return f"y = {intercept}"
    tail = "" if intercept == 0 else (f" + {intercept}" if intercept > 0 else f" - {-intercept}")
    return f"y = {'-' if slope < 0 else ''}{coefficient(abs(slope))}x{tail}"


def _line_point(phi: int, intercept: int):
    """A point of the line of :func:`_line_equation`."""
    return (I(intercept), Z) if phi == 90 else (Z, I(intercept))


def _lines_euclid(c: Config) -> str:
    op = 2 * c["op"]
    d = op * sympy.sin(sympy.pi * _lines_angle(c) / 180)
    return (f"Lines ℓ and m meet at O. The point P on ℓ with OP = {op} is at distance {fmt(d)} from m. "
            "Find the acute angle between ℓ and m, in degrees.")


def _lines_coord(c: Config) -> str:
    (p1, p2), (c1, c2) = c["phi"], c["intercepts"]
    return (f"Find the acute angle between the lines {_line_equation(p1, c1)} and {_line_equation(p2, c2)}, "
            "in degrees.")


def _lines_vector(c: Config) -> str:
    (p1, p2), (c1, c2), (k1, k2) = c["phi"], c["intercepts"], c["scales"]
    u = tuple(sympy.nsimplify(k1 * x) for x in _DIRECTIONS[p1])
    v = tuple(sympy.nsimplify(k2 * x) for x in _DIRECTIONS[p2])
    return (f"Find the acute angle between the lines r = a + t u and r = b + s v, in degrees, where "
            f"{vec_text('a', _line_point(p1, c1))}, {vec_text('u', u)}, {vec_text('b', _line_point(p2, c2))} "
            f"and {vec_text('v', v)}.")


LINES_ANGLE = Template(
    "lines_angle", "angle", 2,
    draw=_lines_draw, gold=_lines_angle, euclid=_lines_euclid, coord=_lines_coord, vector=_lines_vector,
)

# --- interior angle of a regular polygon -----------------------------------------------------


def _polygon_coord(c: Config) -> str:
    n, r = c["n"], c["R"]
    step = 360 // n
    return (f"For k = 0, 1, …, {n - 1}, the points P_k = ({r}cos(k·{step}°), {r}sin(k·{step}°)) are the vertices "
            "of a polygon. Find the interior angle of the polygon at P_1, in degrees.")


def _polygon_vector(c: Config) -> str:
    n, r = c["n"], c["R"]
    step = 360 // n
    return (f"For k = 0, 1, …, {n - 1}, the points with position vectors v_k = {r}⟨cos(k·{step}°), sin(k·{step}°)⟩ "
            "are the vertices of a polygon. Find the angle between the vectors v_0 - v_1 and v_2 - v_1, in degrees.")


POLYGON_ANGLE = Template(
    "polygon_angle", "angle", 5,
    count=lambda c: c["n"],
    draw=lambda rng: {"n": rng.choice((5, 6, 8, 9, 10, 12)), "R": rng.randint(1, 9)},
    gold=lambda c: sympy.Integer(180) * (c["n"] - 2) / c["n"],
    euclid=lambda c: (
        f"A regular polygon with {c['n']} sides is inscribed in a circle of radius {c['R']}. "
        "Find each interior angle of the polygon, in degrees."
    ),
    coord=_polygon_coord, vector=_polygon_vector,
)

# --- base angle of an isosceles triangle -----------------------------------------------------


def _isosceles_draw(rng: random.Random) -> Config:
    apex = rng.choice((30, 60, 90, 120, 150))
    s = 2 * rng.randint(1, 5)
    return plane_config(rng, {"A": ORIGIN, "B": (I(s), Z), "C": polar(s, apex)})


ISOSCELES_ANGLE = triangle_template(
    "isosceles_angle", "angle", lambda p: _vertex_angle(p, "B", "A", "C"),
    ("Find ∠ABC in degrees.", "Find ∠ABC in degrees.", vector_question("a", "b", "c")), plane_vectors_text,
    euclid_opening=lambda c: (
        f"In triangle ABC, AB = AC = {segment_text(c, 'AB')} and ∠BAC = {fmt(_angle_at(c, 'A', 'B', 'C'))}°."
    ),
    draw=_isosceles_draw,
)

# --- angles of an isosceles trapezoid --------------------------------------------------------

# (half the difference of the bases, height, unit of the bases) per base angle
_TRAPEZOIDS = {30: (sympy.sqrt(3), 1, sympy.sqrt(3)), 45: (1, 1, 1), 60: (1, sympy.sqrt(3), 1)}


def _trapezoid_draw(rng: random.Random) -> Config:
    angle = rng.choice(sorted(_TRAPEZOIDS))
    half_diff, height, unit = _TRAPEZOIDS[angle]
    m = rng.randint(1, 5)
    e, h = sympy.nsimplify(m * half_diff), sympy.nsimplify(m * height)
    b = sympy.nsimplify(rng.randint(1, 8) * unit)
    base = {"A": ORIGIN, "B": (b + 2 * e, Z), "C": (b + e, h), "D": (e, h)}
    return {**plane_config(rng, base), "asked": rng.choice(["ABC", "BCD"])}


def _trapezoid_euclid(c: Config) -> str:
    p = dec_points(c)
    ab, cd = dist(p["A"], p["B"]), dist(p["C"], p["D"])
    height = sympy.sqrt(dist(p["A"], p["D"]) ** 2 - ((ab - cd) / 2) ** 2)
    return (f"ABCD is an isosceles trapezoid with AB ∥ CD, AB = {fmt(ab)}, CD = {fmt(cd)} and height {fmt(height)}. "
            f"Find ∠{c['asked']} in degrees.")


TRAPEZOID_ANGLE = Template(
    "trapezoid_angle", "angle", 4,
    figures=("ABCD",),
    draw=_trapezoid_draw,
    gold=lambda c: _angle_at(c, c["asked"][1], c["asked"][0], c["asked"][2]),
    euclid=_trapezoid_euclid,
    coord=lambda c: (
        f"The trapezoid ABCD has vertices {points_text(dec_points(c), 'ABCD')}. Find ∠{c['asked']} in degrees."
    ),
    vector=lambda c: (
        f"In the plane, {position_vectors_text(dec_points(c), 'ABCD')}; ABCD is a trapezoid. "
        f"{vector_question(*c['asked'].lower())}"
    ),
)

TEMPLATES = (
    VECTOR_ANGLE, SIDES_ANGLE, INCLINATION, LINES_ANGLE, INSCRIBED_ANGLE, POLYGON_ANGLE,
    ISOSCELES_ANGLE, TANGENT_ANGLE, CUBE_ANGLE, TRAPEZOID_ANGLE,
)
