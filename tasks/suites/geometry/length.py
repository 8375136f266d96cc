"""Category ``length``: distances, radii, chords, tangents, diagonals, medians, altitudes."""

from __future__ import annotations

import random

import sympy

from tasks.suites.geometry.common import (
    RIGHT_LEGS,
    Config,
    Template,
    add,
    circle_text,
    dec,
    dec_points,
    dist,
    enc,
    enc_points,
    fmt,
    lattice_step,
    lattice_triangle,
    linear_text,
    place2d,
    place3d,
    points_text,
    position_vectors_text,
    scale,
    shoelace,
    sub,
    vec_text,
)

Z = sympy.Integer(0)


def sides_text(config: Config) -> str:
    """``AB = 13, BC = 14 and CA = 15`` for a triangle configuration."""
    p = dec_points(config)
    return f"AB = {fmt(dist(p['A'], p['B']))}, BC = {fmt(dist(p['B'], p['C']))} and CA = {fmt(dist(p['C'], p['A']))}"


def triangle_config(rng: random.Random) -> Config:
    """A Heronian triangle ABC on the lattice."""
    return {"points": enc_points(lattice_triangle(rng))}


def right_triangle_config(rng: random.Random, legs: tuple[int, int] | None = None) -> Config:
    """A right triangle with the right angle at C; legs random (1..12) unless given."""
    p, q = legs or (rng.randint(1, 12), rng.randint(1, 12))
    base = {"A": (sympy.Integer(p), Z), "B": (Z, sympy.Integer(q)), "C": (Z, Z)}
    return {"points": enc_points(place2d(rng, base))}


def _midpoint(p, q):
    return scale(sympy.Rational(1, 2), add(p, q))


def _area(p) -> sympy.Expr:
    return shoelace([p["A"], p["B"], p["C"]])


def _sides(p) -> tuple[sympy.Expr, sympy.Expr, sympy.Expr]:
    """(a, b, c) = (BC, CA, AB)."""
    return dist(p["B"], p["C"]), dist(p["C"], p["A"]), dist(p["A"], p["B"])


def _right_euclid(config: Config) -> str:
    p = dec_points(config)
    return f"In triangle ABC, ∠ACB = 90°, AC = {fmt(dist(p['A'], p['C']))} and BC = {fmt(dist(p['B'], p['C']))}."


def _triangle_coord(config: Config) -> str:
    return f"Triangle ABC has vertices {points_text(dec_points(config), 'ABC')}."


def _triangle_vector(config: Config) -> str:
    return f"In triangle ABC, {position_vectors_text(dec_points(config), 'ABC')}."


# --- hypotenuse ------------------------------------------------------------------------------

HYPOTENUSE = Template(
    "hypotenuse", "length", 3,
    figures=("ABC",),
    draw=right_triangle_config,
    gold=lambda c: dist(dec_points(c)["A"], dec_points(c)["B"]),
    euclid=lambda c: f"{_right_euclid(c)} Find the length of AB.",
    coord=lambda c: f"{_triangle_coord(c)} Find the length of AB.",
    vector=lambda c: f"{_triangle_vector(c)} Find |b - a|, the length of AB.",
)

# --- median ----------------------------------------------------------------------------------

MEDIAN = Template(
    "median", "length", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=lambda c: dist(dec_points(c)["A"], _midpoint(dec_points(c)["B"], dec_points(c)["C"])),
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. M is the midpoint of BC. Find the length of the median AM.",
    coord=lambda c: f"{_triangle_coord(c)} M is the midpoint of BC. Find the length of AM.",
    vector=lambda c: f"{_triangle_vector(c)} M is the midpoint of BC. Find the length of the median AM.",
)

# --- altitude --------------------------------------------------------------------------------


def _altitude(c: Config) -> sympy.Expr:
    p = dec_points(c)
    return 2 * _area(p) / dist(p["B"], p["C"])


ALTITUDE = Template(
    "altitude", "length", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=_altitude,
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. Find the length of the altitude from A to BC.",
    coord=lambda c: f"{_triangle_coord(c)} Find the distance from A to the line through B and C.",
    vector=lambda c: f"{_triangle_vector(c)} Find the distance from A to the line r = b + t(c - b).",
)

# --- circumradius ----------------------------------------------------------------------------


def circumradius(p) -> sympy.Expr:
    """R = abc / (4K)."""
    a, b, c = _sides(p)
    return a * b * c / (4 * _area(p))


CIRCUMRADIUS = Template(
    "circumradius", "length", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=lambda c: circumradius(dec_points(c)),
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. Find the radius of the circle through A, B and C.",
    coord=lambda c: f"Find the radius of the circle through the points {points_text(dec_points(c), 'ABC')}.",
    vector=lambda c: f"{_triangle_vector(c)} Find the radius of the circle through A, B and C.",
)

# --- inradius --------------------------------------------------------------------------------


def inradius(p) -> sympy.Expr:
    """r = K / s."""
    return 2 * _area(p) / sum(_sides(p))


INRADIUS = Template(
    "inradius", "length", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=lambda c: inradius(dec_points(c)),
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. Find the radius of the circle inscribed in the triangle.",
    coord=lambda c: f"{_triangle_coord(c)} Find the radius of the circle inscribed in the triangle.",
    vector=lambda c: f"{_triangle_vector(c)} Find the radius of the circle inscribed in triangle ABC.",
)

# --- chord ---------------------------------------------------------------------------------


def _chord_draw(rng: random.Random) -> Config:
    r = rng.randint(3, 13)
    d = rng.randint(1, r - 1)
    n = lattice_step(rng)  # integer length, so that m below is an integer
    centre = (sympy.Integer(rng.randint(-6, 6)), sympy.Integer(rng.randint(-6, 6)))
    m = n[0] * centre[0] + n[1] * centre[1] + rng.choice((1, -1)) * d * dist(n, (Z, Z))
    return {"centre": [enc(x) for x in centre], "r": enc(r), "normal": [enc(x) for x in n], "m": enc(m)}


def _chord_parts(c: Config):
    """(centre, radius, normal n, m) of the circle and the line n·x = m."""
    return (tuple(dec(x) for x in c["centre"]), dec(c["r"]), tuple(dec(x) for x in c["normal"]), dec(c["m"]))


def _line_distance(c: Config) -> sympy.Expr:
    """Distance from the circle's centre to the line n·x = m."""
    o, _, n, m = _chord_parts(c)
    return sympy.Abs(n[0] * o[0] + n[1] * o[1] - m) / sympy.sqrt(n[0] ** 2 + n[1] ** 2)


def _chord_euclid(c: Config) -> str:
    return (f"A circle has radius {fmt(dec(c['r']))}. A line at distance {fmt(_line_distance(c))} from its centre "
            "cuts the circle in a chord. Find the length of the chord.")


def _chord_coord(c: Config) -> str:
    o, r, n, m = _chord_parts(c)
    return (f"The line {linear_text(n, 'xy', m)} cuts the circle {circle_text(o, r ** 2)} in a chord. "
            "Find the length of the chord.")


def _chord_vector(c: Config) -> str:
    o, r, n, m = _chord_parts(c)
    return (f"A circle consists of the points with position vector p such that |p - c| = {fmt(r)}, where "
            f"{vec_text('c', o)}. A line consists of the points with p · n = {fmt(m)}, where {vec_text('n', n)}. "
            "Find the length of the chord that the line cuts from the circle.")


CHORD = Template(
    "chord", "length", 2,
    draw=_chord_draw,
    gold=lambda c: 2 * sympy.sqrt(dec(c["r"]) ** 2 - _line_distance(c) ** 2),
    euclid=_chord_euclid,
    coord=_chord_coord,
    vector=_chord_vector,
)

# --- tangent ---------------------------------------------------------------------------------


def _tangent_draw(rng: random.Random) -> Config:
    r = rng.randint(1, 10)
    step = lattice_step(rng)
    length = int(dist(step, (Z, Z)))
    k = rng.randint(r // length + 1, max(r // length + 1, 26 // length))  # |OP| = k·length > r
    centre = (sympy.Integer(rng.randint(-6, 6)), sympy.Integer(rng.randint(-6, 6)))
    return {"centre": [enc(x) for x in centre], "r": enc(r), "P": [enc(x) for x in add(centre, scale(k, step))]}


def _tangent_parts(c: Config):
    """(centre, P, radius)."""
    return tuple(dec(x) for x in c["centre"]), tuple(dec(x) for x in c["P"]), dec(c["r"])


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
    return (f"A circle consists of the points with position vector x such that |x - c| = {fmt(r)}, where "
            f"{vec_text('c', o)}. The point P has position vector {vec_text('p', p)}. A tangent from P touches "
            "the circle at T. Find the length PT.")


TANGENT = Template(
    "tangent", "length", 2,
    draw=_tangent_draw, gold=_tangent_gold, euclid=_tangent_euclid, coord=_tangent_coord, vector=_tangent_vector,
)

# --- box diagonal ----------------------------------------------------------------------------


def _box_draw(rng: random.Random) -> Config:
    a, b, c = (sympy.Integer(rng.randint(1, 10)) for _ in range(3))
    base = {"O": (Z, Z, Z), "A": (a, Z, Z), "B": (Z, b, Z), "C": (Z, Z, c)}
    return {"points": enc_points(place3d(rng, base))}


def _box_edges(c: Config):
    """The edge vectors OA, OB, OC."""
    p = dec_points(c)
    return [sub(p[n], p["O"]) for n in "ABC"]


def _box_gold(c: Config) -> sympy.Expr:
    u, v, w = _box_edges(c)
    return dist(add(add(u, v), w), (Z, Z, Z))


def _box_euclid(c: Config) -> str:
    a, b, e = (fmt(dist(v, (Z, Z, Z))) for v in _box_edges(c))
    return f"A rectangular box has edges of lengths {a}, {b} and {e}. Find the length of its space diagonal."


def _box_coord(c: Config) -> str:
    p = dec_points(c)
    return (f"A rectangular box has a vertex at {points_text(p, 'O')}, and the three vertices joined to it by "
            f"edges are {points_text(p, 'ABC')}. Find the length of the box's space diagonal.")


def _box_vector(c: Config) -> str:
    u, v, w = _box_edges(c)
    return (f"Three edges of a rectangular box leave one vertex along the vectors {vec_text('u', u)}, "
            f"{vec_text('v', v)} and {vec_text('w', w)}. Find the length of the box's space diagonal.")


BOX_DIAGONAL = Template(
    "box_diagonal", "length", 3,
    draw=_box_draw, gold=_box_gold, euclid=_box_euclid, coord=_box_coord, vector=_box_vector,
)

# --- parallelogram diagonal ------------------------------------------------------------------


def abd_config(rng: random.Random) -> Config:
    """A Heronian triangle named A, B, D: three vertices of parallelogram ABCD."""
    t = dec_points(triangle_config(rng))
    return {"points": enc_points({"A": t["A"], "B": t["B"], "D": t["C"]})}


def parallelogram_c(p) -> tuple:
    """The fourth vertex C = B + D - A."""
    return sub(add(p["B"], p["D"]), p["A"])


def parallelogram_euclid(c: Config) -> str:
    """``In parallelogram ABCD, AB = .., AD = .. and the diagonal BD = ..``."""
    p = dec_points(c)
    return (f"In parallelogram ABCD, AB = {fmt(dist(p['A'], p['B']))}, AD = {fmt(dist(p['A'], p['D']))} "
            f"and the diagonal BD = {fmt(dist(p['B'], p['D']))}.")


PARALLELOGRAM_DIAGONAL = Template(
    "parallelogram_diagonal", "length", 3,
    figures=("ABD",),
    draw=abd_config,
    gold=lambda c: dist(dec_points(c)["A"], parallelogram_c(dec_points(c))),
    euclid=lambda c: f"{parallelogram_euclid(c)} Find the length of the diagonal AC.",
    coord=lambda c: (
        f"Three vertices of parallelogram ABCD are {points_text(dec_points(c), 'ABD')}. "
        "Find the length of the diagonal AC."
    ),
    vector=lambda c: (
        f"In parallelogram ABCD, {position_vectors_text(dec_points(c), 'ABD')}. Find the length of the diagonal AC."
    ),
)

# --- centroid distance -----------------------------------------------------------------------


def _centroid_distance(c: Config) -> sympy.Expr:
    p = dec_points(c)
    g = scale(sympy.Rational(1, 3), add(add(p["A"], p["B"]), p["C"]))
    return dist(p["A"], g)


CENTROID_DISTANCE = Template(
    "centroid_distance", "length", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=_centroid_distance,
    euclid=lambda c: (
        f"In triangle ABC, {sides_text(c)}. G is the centroid of the triangle (the common point of its medians). "
        "Find the length AG."
    ),
    coord=lambda c: f"{_triangle_coord(c)} G is the centroid of the triangle. Find the length AG.",
    vector=lambda c: f"{_triangle_vector(c)} G is the centroid of triangle ABC. Find the length AG.",
)

# --- segment of the hypotenuse ---------------------------------------------------------------


def _hyp_segment(c: Config) -> sympy.Expr:
    """AD, D the foot of the altitude from C: AC² / AB."""
    p = dec_points(c)
    return dist(p["A"], p["C"]) ** 2 / dist(p["A"], p["B"])


HYPOTENUSE_SEGMENT = Template(
    "hypotenuse_segment", "length", 3,
    figures=("ABC",),
    draw=lambda rng: right_triangle_config(rng, rng.choice(RIGHT_LEGS)),
    gold=_hyp_segment,
    euclid=lambda c: f"{_right_euclid(c)} D is the foot of the perpendicular from C to AB. Find the length AD.",
    coord=lambda c: (
        f"{_triangle_coord(c)} D is the foot of the perpendicular from C to the line AB. Find the length AD."
    ),
    vector=lambda c: (
        f"{_triangle_vector(c)} D is the point of the line AB with (d - c) · (b - a) = 0. Find |d - a|."
    ),
)

TEMPLATES = (
    HYPOTENUSE, MEDIAN, ALTITUDE, CIRCUMRADIUS, INRADIUS, CHORD, TANGENT, BOX_DIAGONAL,
    PARALLELOGRAM_DIAGONAL, CENTROID_DISTANCE, HYPOTENUSE_SEGMENT,
)
