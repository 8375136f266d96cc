"""Circle templates of every category: chords, tangents, sectors, inscribed angles.

Length: ``chord``, ``tangent``; area: ``circle_equation_area``, ``sector_area``; angle:
``inscribed_angle``, ``tangent_angle``; ratio: ``chords_ratio``. Each category module lists its
circle templates in its ``TEMPLATES``. A circle is stated by its radius (euclid), its equation
(coord) or as the points at a distance from a centre vector (vector).
"""

from __future__ import annotations

import math
import random
from typing import Any

import sympy

from tasks.suites.geometry.exact import (
    ORIGIN, Config, I, Point, Z, add, angle_deg, dec, dec_points, dec_vector, dist, dot, enc, enc_points, enc_vector,
    line_intersection, norm, polar, scale, sub,
)
from tasks.suites.geometry.placement import lattice_point, lattice_step, place2d, plane_config
from tasks.suites.geometry.template import Template
from tasks.suites.geometry.text import (
    circle_text, fmt, linear_text, points_text, position_vectors_text, signed_sum, vec_text, vector_question,
)


def circle_vector_text(var: str, r: Any, centre: Point) -> str:
    """``A circle consists of the points with position vector x such that |x - c| = r, where c = ⟨..⟩.``"""
    return (f"A circle consists of the points with position vector {var} such that |{var} - c| = {fmt(r)}, where "
            f"{vec_text('c', centre)}.")


def _on_circle(points: dict[str, Point], names: str) -> str:
    """``the points A, B and C on the circle have position vectors a = ⟨..⟩, ...``."""
    return position_vectors_text(points, names, " on the circle")


# --- chord (length) --------------------------------------------------------------------------


def _chord_draw(rng: random.Random) -> Config:
    r = rng.randint(3, 13)
    d = rng.randint(1, r - 1)
    n = lattice_step(rng)  # integer length, so that m below is an integer
    centre = lattice_point(rng)
    m = n[0] * centre[0] + n[1] * centre[1] + rng.choice((1, -1)) * d * norm(n)
    return {"centre": enc_vector(centre), "r": enc(r), "normal": enc_vector(n), "m": enc(m)}


def _chord_parts(c: Config):
    """(centre, radius, normal n, m) of the circle and the line n·x = m."""
    return dec_vector(c["centre"]), dec(c["r"]), dec_vector(c["normal"]), dec(c["m"])


def _line_distance(c: Config) -> sympy.Expr:
    """Distance from the circle's centre to the line n·x = m."""
    o, _, n, m = _chord_parts(c)
    return sympy.Abs(n[0] * o[0] + n[1] * o[1] - m) / sympy.sqrt(n[0] ** 2 + n[1] ** 2)


def _chord_coord(c: Config) -> str:
    o, r, n, m = _chord_parts(c)
    return (f"The line {linear_text(n, 'xy', m)} cuts the circle {circle_text(o, r ** 2)} in a chord. "
            "Find the length of the chord.")


def _chord_vector(c: Config) -> str:
    o, r, n, m = _chord_parts(c)
    return (f"{circle_vector_text('p', r, o)} A line consists of the points with p · n = {fmt(m)}, where "
            f"{vec_text('n', n)}. Find the length of the chord that the line cuts from the circle.")


CHORD = Template(
    "chord", "length", 2,
    draw=_chord_draw,
    gold=lambda c: 2 * sympy.sqrt(dec(c["r"]) ** 2 - _line_distance(c) ** 2),
    euclid=lambda c: (
        f"A circle has radius {fmt(dec(c['r']))}. A line at distance {fmt(_line_distance(c))} from its centre "
        "cuts the circle in a chord. Find the length of the chord."
    ),
    coord=_chord_coord, vector=_chord_vector,
)

# --- tangent (length) ------------------------------------------------------------------------


def _tangent_draw(rng: random.Random) -> Config:
    r = rng.randint(1, 10)
    step = lattice_step(rng)
    length = int(norm(step))
    k = rng.randint(r // length + 1, max(r // length + 1, 26 // length))  # |OP| = k·length > r
    centre = lattice_point(rng)
    return {"centre": enc_vector(centre), "r": enc(r), "P": enc_vector(add(centre, scale(k, step)))}


def _tangent_parts(c: Config):
    """(centre, P, radius)."""
    return dec_vector(c["centre"]), dec_vector(c["P"]), dec(c["r"])


def _tangent_gold(c: Config) -> sympy.Expr:
    o, p, r = _tangent_parts(c)
    return sympy.sqrt(dist(o, p) ** 2 - r ** 2)


def _tangent_euclid(c: Config) -> str:
    o, p, r = _tangent_parts(c)
    return (f"A point P is at distance {fmt(dist(o, p))} from the centre of a circle of radius {fmt(r)}. "
            "A tangent from P touches the circle at T. Find the length PT.")


def _tangent_coord(c: Config) -> str:
    o, p, r = _tangent_parts(c)
    return (f"A tangent from {points_text({'P': p}, 'P')} touches the circle {circle_text(o, r ** 2)} at T. "
            "Find the length PT.")


def _tangent_vector(c: Config) -> str:
    o, p, r = _tangent_parts(c)
    return (f"{circle_vector_text('x', r, o)} The point P has position vector {vec_text('p', p)}. A tangent from P "
            "touches the circle at T. Find the length PT.")


TANGENT = Template(
    "tangent", "length", 2,
    draw=_tangent_draw, gold=_tangent_gold, euclid=_tangent_euclid, coord=_tangent_coord, vector=_tangent_vector,
)

# --- circle given by an equation (area) ------------------------------------------------------


def _circle_eq_parts(c: Config):
    centre = dec_vector(c["centre"])
    r2 = dec(c["half_chord"]) ** 2 + dec(c["distance"]) ** 2
    return centre, r2


def _circle_eq_coord(c: Config) -> str:
    (h, k), r2 = _circle_eq_parts(c)
    terms = [("x²", 1), ("y²", 1), ("x", -2 * h), ("y", -2 * k), ("", h * h + k * k - r2)]
    return f"Find the area of the circle {signed_sum(terms)} = 0."


def _circle_eq_vector(c: Config) -> str:
    centre, r2 = _circle_eq_parts(c)
    return (f"A circle consists of the points with position vector p such that p · p - 2 p · c = "
            f"{fmt(r2 - dot(centre, centre))}, where {vec_text('c', centre)}. Find the area of the circle.")


CIRCLE_EQUATION_AREA = Template(
    "circle_equation_area", "area", 1,
    draw=lambda rng: {"centre": enc_vector(lattice_point(rng)),
                      "half_chord": enc(rng.randint(1, 8)), "distance": enc(rng.randint(1, 8))},
    gold=lambda c: sympy.pi * _circle_eq_parts(c)[1],
    euclid=lambda c: (
        f"A chord of length {fmt(2 * dec(c['half_chord']))} in a circle lies at distance {fmt(dec(c['distance']))} "
        "from the centre. Find the area of the circle."
    ),
    coord=_circle_eq_coord, vector=_circle_eq_vector,
)

# --- sector (area) ---------------------------------------------------------------------------


def _sector_draw(rng: random.Random) -> Config:
    angle = rng.choice((30, 45, 60, 90, 120, 135, 150))
    r = 2 * rng.randint(1, 5)
    return plane_config(rng, {"O": ORIGIN, "A": (I(r), Z), "B": polar(r, angle)})


def _sector_parts(c: Config):
    p = dec_points(c)
    a, b = sub(p["A"], p["O"]), sub(p["B"], p["O"])
    return a, b, norm(a), angle_deg(a, b)


_SECTOR_Q = "Find the area of the sector AOB bounded by the radii OA, OB and the shorter arc AB."


def _sector_gold(c: Config) -> sympy.Expr:
    _, _, r, angle = _sector_parts(c)
    return sympy.pi * r ** 2 * angle / 360


def _sector_euclid(c: Config) -> str:
    _, _, r, angle = _sector_parts(c)
    return f"A sector of a circle has radius {fmt(r)} and central angle {fmt(angle)}°. Find its area."


def _sector_coord(c: Config) -> str:
    p = dec_points(c)
    return f"The points {points_text(p, 'AB')} lie on the circle with centre {points_text(p, 'O')}. {_SECTOR_Q}"


def _sector_vector(c: Config) -> str:
    a, b, r, _ = _sector_parts(c)
    return (f"Relative to the centre O of a circle, the points A and B on the circle have position vectors a and b "
            f"with |a| = |b| = {fmt(r)} and a · b = {fmt(dot(a, b))}. {_SECTOR_Q}")


SECTOR_AREA = Template(
    "sector_area", "area", 3,
    figures=("OAB",),
    draw=_sector_draw, gold=_sector_gold, euclid=_sector_euclid, coord=_sector_coord, vector=_sector_vector,
)

# --- inscribed angle (angle) -----------------------------------------------------------------

_ON_CIRCLE = sorted(set(range(0, 360, 30)) | set(range(0, 360, 45)))


def _inscribed_draw(rng: random.Random) -> Config:
    r = 2 * rng.randint(1, 4)
    angles = rng.sample(_ON_CIRCLE, 3)
    relative = [polar(r, a) for a in angles]
    # the centre moves only along axes where every point is rational (see place2d)
    centre = [rng.randint(-6, 6) if all(p[i].is_Rational for p in relative) else 0 for i in range(2)]
    return {"centre": enc_vector(centre), "r": r, "angles": angles}


def _inscribed_relative(c: Config) -> dict:
    """The points A, B, C relative to the centre."""
    return {n: polar(c["r"], a) for n, a in zip("ABC", c["angles"])}


def _arc_without_c(c: Config) -> int:
    """The arc AB not containing C, in degrees."""
    a, b, x = c["angles"]
    ab = (b - a) % 360
    return 360 - ab if (x - a) % 360 < ab else ab


def _inscribed_coord(c: Config) -> str:
    o = dec_vector(c["centre"])
    absolute = {n: add(p, o) for n, p in _inscribed_relative(c).items()}
    return (f"The points {points_text(absolute, 'ABC')} lie on the circle with centre "
            f"{points_text({'O': o}, 'O')}. Find ∠ACB in degrees.")


def _inscribed_vector(c: Config) -> str:
    p = _inscribed_relative(c)
    return f"Relative to the centre O of a circle, {_on_circle(p, 'ABC')}. {vector_question('a', 'c', 'b')}"


INSCRIBED_ANGLE = Template(
    "inscribed_angle", "angle", 4,
    draw=_inscribed_draw,
    # half the arc AB without C (the inscribed angle theorem): exact and fast, where sympy's acos
    # of the cosines of 15° multiples is slow
    gold=lambda c: sympy.Rational(_arc_without_c(c), 2),
    euclid=lambda c: (
        f"The points A, B and C lie on a circle with centre O and radius {c['r']}. The arc AB that does not "
        f"contain C measures {_arc_without_c(c)}°. Find ∠ACB in degrees."
    ),
    coord=_inscribed_coord, vector=_inscribed_vector,
)

# --- angle between two tangents (angle) ------------------------------------------------------

# (angle, radius, offset of P from the centre), each scaled by k
_TANGENTS = {60: (1, (2, 0)), 90: (1, (1, 1)), 120: (sympy.sqrt(3), (2, 0))}
_TANGENTS_Q = "Find the angle between the two tangents, in degrees."


def _tangent_angle_draw(rng: random.Random) -> Config:
    angle = rng.choice(sorted(_TANGENTS))
    k = rng.randint(1, 6)
    radius, offset = _TANGENTS[angle]
    moved = place2d(rng, {"O": ORIGIN, "P": (I(k * offset[0]), I(k * offset[1]))})
    return {"points": enc_points(moved), "r": enc(k * radius)}


def _tangent_angle_gold(c: Config) -> sympy.Expr:
    p = dec_points(c)
    return 2 * sympy.asin(dec(c["r"]) / dist(p["O"], p["P"])) * 180 / sympy.pi


def _tangent_angle_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"{circle_vector_text('x', dec(c['r']), p['O'])} Two tangents are drawn to the circle from the point P "
            f"with position vector {vec_text('p', p['P'])}. {_TANGENTS_Q}")


TANGENT_ANGLE = Template(
    "tangent_angle", "angle", 2,
    draw=_tangent_angle_draw,
    gold=_tangent_angle_gold,
    euclid=lambda c: (
        f"Two tangents are drawn to a circle of radius {fmt(dec(c['r']))} from a point P at distance "
        f"{fmt(dist(dec_points(c)['O'], dec_points(c)['P']))} from its centre. {_TANGENTS_Q}"
    ),
    coord=lambda c: (
        f"Two tangents are drawn from {points_text(dec_points(c), 'P')} to the circle "
        f"{circle_text(dec_points(c)['O'], dec(c['r']) ** 2, 'xy')}. {_TANGENTS_Q}"
    ),
    vector=_tangent_angle_vector,
)

# --- intersecting chords (ratio) -------------------------------------------------------------


def _square_legs(r: int) -> list[int]:
    """t ≥ 0 with r² − t² a perfect square (lattice chords through (t, ·) exist)."""
    return [t for t in range(r) if math.isqrt(r * r - t * t) ** 2 == r * r - t * t]


def _chords_draw(rng: random.Random) -> Config:
    r = rng.choice((5, 10, 13, 15, 17, 25))
    legs = [s * t for t in _square_legs(r) for s in ((1, -1) if t else (1,))]
    while True:  # y0 = 0 would make P the midpoint of CD and every answer 1
        x0, y0 = rng.choice(legs), rng.choice(legs)
        if y0 != 0 and x0 * x0 + y0 * y0 < r * r:
            break
    half_ab, half_cd = math.isqrt(r * r - y0 * y0), math.isqrt(r * r - x0 * x0)
    base = {"O": ORIGIN, "A": (I(-half_ab), I(y0)), "B": (I(half_ab), I(y0)),
            "C": (I(x0), I(half_cd)), "D": (I(x0), I(-half_cd))}
    return {**plane_config(rng, base), "r": r}


def _chords_meet(c: Config) -> Point:
    p = dec_points(c)
    return line_intersection(p["A"], p["B"], p["C"], p["D"])


def _chords_euclid(c: Config) -> str:
    p, m = dec_points(c), _chords_meet(c)
    return (f"Chords AB and CD of a circle meet at P, with AP = {fmt(dist(p['A'], m))}, PB = {fmt(dist(m, p['B']))} "
            f"and CP = {fmt(dist(p['C'], m))}. Find CP/PD.")


def _chords_vector(c: Config) -> str:
    p = dec_points(c)
    rel = {n: sub(p[n], p["O"]) for n in "ABCD"}
    return f"Relative to the centre of a circle, {_on_circle(rel, 'ABCD')}. The chords AB and CD meet at P. Find CP/PD."


def _chords_gold(c: Config) -> sympy.Expr:
    p, m = dec_points(c), _chords_meet(c)
    return dist(p["C"], m) / dist(m, p["D"])


CHORDS_RATIO = Template(
    "chords_ratio", "ratio", 5,
    draw=_chords_draw,
    gold=_chords_gold,
    euclid=_chords_euclid,
    coord=lambda c: (
        f"The points {points_text(dec_points(c), 'ABCD')} lie on the circle "
        f"{circle_text(dec_points(c)['O'], c['r'] ** 2, 'xy')}. The chords AB and CD meet at P. Find CP/PD."
    ),
    vector=_chords_vector,
)
