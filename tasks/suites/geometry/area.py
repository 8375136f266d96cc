"""Category ``area``: areas of triangles, quadrilaterals, circles and sectors; volumes of solids."""

from __future__ import annotations

import random
from collections import defaultdict

import sympy

from tasks.suites.geometry.common import (
    RIGHT_LEGS,
    TRIANGLES,
    Config,
    Template,
    angle_deg,
    circle_text,
    cross2,
    dec,
    dec_points,
    dist,
    dot,
    enc,
    enc_points,
    fmt,
    signed_sum,
    place2d,
    place3d,
    points_text,
    polar,
    position_vectors_text,
    shoelace,
    sub,
    vec_text,
)
from tasks.suites.geometry.length import (
    abd_config,
    circumradius,
    parallelogram_euclid,
    right_triangle_config,
    sides_text,
    triangle_config,
)

Z = sympy.Integer(0)
I = sympy.Integer

_TRIANGLES_BY_BASE: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
for _b, _x, _h in TRIANGLES:
    _TRIANGLES_BY_BASE[_b].append((_b, _x, _h))


def _polygon_area(c: Config, names: str) -> sympy.Expr:
    p = dec_points(c)
    return shoelace([p[n] for n in names])


# --- triangle from three sides ---------------------------------------------------------------

HERON = Template(
    "heron", "area", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=lambda c: _polygon_area(c, "ABC"),
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. Find the area of triangle ABC.",
    coord=lambda c: f"Find the area of the triangle with vertices {points_text(dec_points(c), 'ABC')}.",
    vector=lambda c: f"In the plane, {position_vectors_text(dec_points(c), 'ABC')}. Find the area of triangle ABC.",
)

# --- triangle from two sides and the included angle ------------------------------------------

# the length of CB for each angle, so that B = polar(|CB|, angle) has readable coordinates
_SAS_RADIUS = {30: 2, 45: sympy.sqrt(2), 60: 2, 90: 1, 120: 2, 135: sympy.sqrt(2), 150: 2}


def _sas_draw(rng: random.Random) -> Config:
    angle = rng.choice(sorted(_SAS_RADIUS))
    base = {"A": (I(rng.randint(1, 10)), Z), "B": polar(_SAS_RADIUS[angle] * rng.randint(1, 5), angle), "C": (Z, Z)}
    return {"points": enc_points(place2d(rng, base))}


def _sas_parts(c: Config):
    p = dec_points(c)
    u, v = sub(p["A"], p["C"]), sub(p["B"], p["C"])
    return u, v, angle_deg(u, v)


def _sas_euclid(c: Config) -> str:
    u, v, angle = _sas_parts(c)
    return (f"In triangle ABC, CA = {fmt(dist(u, (Z, Z)))}, CB = {fmt(dist(v, (Z, Z)))} and ∠ACB = {fmt(angle)}°. "
            "Find the area of triangle ABC.")


def _sas_vector(c: Config) -> str:
    u, v, _ = _sas_parts(c)
    return (f"The vectors u from C to A and v from C to B satisfy |u| = {fmt(dist(u, (Z, Z)))}, "
            f"|v| = {fmt(dist(v, (Z, Z)))} and u · v = {fmt(dot(u, v))}. Find the area of triangle ABC.")


SAS_AREA = Template(
    "sas_area", "area", 3,
    figures=("ABC",),
    draw=_sas_draw,
    gold=lambda c: _polygon_area(c, "ABC"),
    euclid=_sas_euclid,
    coord=lambda c: f"Find the area of the triangle with vertices {points_text(dec_points(c), 'ABC')}.",
    vector=_sas_vector,
)

# --- parallelogram ---------------------------------------------------------------------------


def _parallelogram_area(c: Config) -> sympy.Expr:
    p = dec_points(c)
    return sympy.Abs(cross2(sub(p["B"], p["A"]), sub(p["D"], p["A"])))


def _parallelogram_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"Parallelogram ABCD has its sides AB and AD along the vectors {vec_text('u', sub(p['B'], p['A']))} "
            f"and {vec_text('v', sub(p['D'], p['A']))}. Find the area of the parallelogram.")


PARALLELOGRAM_AREA = Template(
    "parallelogram_area", "area", 3,
    figures=("ABD",),
    draw=abd_config,
    gold=_parallelogram_area,
    euclid=lambda c: f"{parallelogram_euclid(c)} Find the area of the parallelogram.",
    coord=lambda c: (
        f"Three vertices of parallelogram ABCD are {points_text(dec_points(c), 'ABD')}. "
        "Find the area of the parallelogram."
    ),
    vector=_parallelogram_vector,
)

# --- isosceles trapezoid ---------------------------------------------------------------------


def _trapezoid_draw(rng: random.Random) -> Config:
    e, h = rng.choice(RIGHT_LEGS[:8])
    b = rng.randint(1, 10)
    a = b + 2 * e
    base = {"A": (Z, Z), "B": (I(a), Z), "C": (I(a - e), I(h)), "D": (I(e), I(h))}
    return {"points": enc_points(place2d(rng, base))}


def _trapezoid_euclid(c: Config) -> str:
    p = dec_points(c)
    return (f"ABCD is an isosceles trapezoid with AB ∥ CD, AB = {fmt(dist(p['A'], p['B']))}, "
            f"CD = {fmt(dist(p['C'], p['D']))} and legs AD = BC = {fmt(dist(p['A'], p['D']))}. "
            "Find the area of the trapezoid.")


TRAPEZOID_AREA = Template(
    "trapezoid_area", "area", 4,
    figures=("ABCD",),
    draw=_trapezoid_draw,
    gold=lambda c: _polygon_area(c, "ABCD"),
    euclid=_trapezoid_euclid,
    coord=lambda c: f"Find the area of the trapezoid ABCD with vertices {points_text(dec_points(c), 'ABCD')}.",
    vector=lambda c: (
        f"In the plane, {position_vectors_text(dec_points(c), 'ABCD')}. ABCD is a trapezoid; find its area."
    ),
)

# --- circle through a right triangle ---------------------------------------------------------


def _right_euclid(c: Config) -> str:
    p = dec_points(c)
    return (f"In triangle ABC, ∠ACB = 90°, AC = {fmt(dist(p['A'], p['C']))} and BC = {fmt(dist(p['B'], p['C']))}. "
            "Find the area of the circle through A, B and C.")


CIRCUMCIRCLE_AREA = Template(
    "circumcircle_area", "area", 3,
    figures=("ABC",),
    draw=lambda rng: right_triangle_config(rng, (rng.randint(1, 9), rng.randint(1, 9))),
    gold=lambda c: sympy.pi * circumradius(dec_points(c)) ** 2,
    euclid=_right_euclid,
    coord=lambda c: f"Find the area of the circle through the points {points_text(dec_points(c), 'ABC')}.",
    vector=lambda c: (
        f"In the plane, {position_vectors_text(dec_points(c), 'ABC')}. Find the area of the circle through A, B and C."
    ),
)

# --- circle given by an equation -------------------------------------------------------------


def _circle_eq_draw(rng: random.Random) -> Config:
    return {"centre": [enc(rng.randint(-6, 6)), enc(rng.randint(-6, 6))],
            "half_chord": enc(rng.randint(1, 8)), "distance": enc(rng.randint(1, 8))}


def _circle_eq_parts(c: Config):
    centre = tuple(dec(x) for x in c["centre"])
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
    draw=_circle_eq_draw,
    gold=lambda c: sympy.pi * _circle_eq_parts(c)[1],
    euclid=lambda c: (
        f"A chord of length {fmt(2 * dec(c['half_chord']))} in a circle lies at distance {fmt(dec(c['distance']))} "
        "from the centre. Find the area of the circle."
    ),
    coord=_circle_eq_coord,
    vector=_circle_eq_vector,
)

# --- sector ----------------------------------------------------------------------------------


def _sector_draw(rng: random.Random) -> Config:
    angle = rng.choice((30, 45, 60, 90, 120, 135, 150))
    r = 2 * rng.randint(1, 5)
    base = {"O": (Z, Z), "A": (I(r), Z), "B": polar(r, angle)}
    return {"points": enc_points(place2d(rng, base))}


def _sector_parts(c: Config):
    p = dec_points(c)
    a, b = sub(p["A"], p["O"]), sub(p["B"], p["O"])
    return a, b, dist(a, (Z, Z)), angle_deg(a, b)


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

# --- quadrilateral from two triangles on a diagonal ------------------------------------------


def _quadrilateral_draw(rng: random.Random) -> Config:
    b = rng.choice(sorted(_TRIANGLES_BY_BASE))
    _, x1, h1 = rng.choice(_TRIANGLES_BY_BASE[b])
    _, x2, h2 = rng.choice(_TRIANGLES_BY_BASE[b])
    base = {"A": (Z, Z), "B": (I(x1), I(h1)), "C": (I(b), Z), "D": (I(x2), I(-h2))}
    return {"points": enc_points(place2d(rng, base))}


def _quadrilateral_euclid(c: Config) -> str:
    p = dec_points(c)
    d = {s: fmt(dist(p[s[0]], p[s[1]])) for s in ("AC", "AB", "BC", "CD", "DA")}
    return (f"In quadrilateral ABCD, the diagonal AC = {d['AC']}, AB = {d['AB']}, BC = {d['BC']}, CD = {d['CD']} "
            f"and DA = {d['DA']}, and B and D lie on opposite sides of AC. Find the area of ABCD.")


QUADRILATERAL_AREA = Template(
    "quadrilateral_area", "area", 4,
    figures=("ABCD",),
    draw=_quadrilateral_draw,
    gold=lambda c: _polygon_area(c, "ABCD"),
    euclid=_quadrilateral_euclid,
    coord=lambda c: f"Find the area of the quadrilateral ABCD with vertices {points_text(dec_points(c), 'ABCD')}.",
    vector=lambda c: (
        f"In the plane, {position_vectors_text(dec_points(c), 'ABCD')}. Find the area of the quadrilateral ABCD."
    ),
)

# --- rhombus ---------------------------------------------------------------------------------


def _rhombus_draw(rng: random.Random) -> Config:
    e, f = rng.choice(RIGHT_LEGS[:10])
    base = {"A": (I(e), Z), "B": (Z, I(f)), "C": (I(-e), Z), "D": (Z, I(-f))}
    return {"points": enc_points(place2d(rng, base))}


def _rhombus_euclid(c: Config) -> str:
    p = dec_points(c)
    return (f"Rhombus ABCD has side {fmt(dist(p['A'], p['B']))} and diagonal AC = {fmt(dist(p['A'], p['C']))}. "
            "Find the area of the rhombus.")


def _rhombus_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"The diagonals AC and BD of rhombus ABCD, as vectors, are {vec_text('p', sub(p['C'], p['A']))} and "
            f"{vec_text('q', sub(p['D'], p['B']))}. Find the area of the rhombus.")


RHOMBUS_AREA = Template(
    "rhombus_area", "area", 4,
    figures=("ABCD",),
    draw=_rhombus_draw,
    gold=lambda c: _polygon_area(c, "ABCD"),
    euclid=_rhombus_euclid,
    coord=lambda c: f"Find the area of the rhombus ABCD with vertices {points_text(dec_points(c), 'ABCD')}.",
    vector=_rhombus_vector,
)

# --- tetrahedron with a right corner ---------------------------------------------------------


def _tetra_draw(rng: random.Random) -> Config:
    a, b, c = (I(rng.randint(1, 9)) for _ in range(3))
    base = {"O": (Z, Z, Z), "A": (a, Z, Z), "B": (Z, b, Z), "C": (Z, Z, c)}
    return {"points": enc_points(place3d(rng, base))}


def _tetra_edges(c: Config):
    p = dec_points(c)
    return [sub(p[n], p["O"]) for n in "ABC"]


def _tetra_volume(c: Config) -> sympy.Expr:
    u, v, w = (sympy.Matrix(e) for e in _tetra_edges(c))
    return sympy.Abs(u.dot(v.cross(w))) / 6


def _tetra_euclid(c: Config) -> str:
    a, b, e = (fmt(dist(x, (Z, Z, Z))) for x in _tetra_edges(c))
    return (f"In tetrahedron OABC, the edges OA, OB and OC are mutually perpendicular, with OA = {a}, OB = {b} "
            f"and OC = {e}. Find the volume of the tetrahedron.")


def _tetra_vector(c: Config) -> str:
    u, v, w = _tetra_edges(c)
    return (f"A tetrahedron has three edges leaving one vertex along the vectors {vec_text('u', u)}, "
            f"{vec_text('v', v)} and {vec_text('w', w)}. Find the volume of the tetrahedron.")


TETRAHEDRON_VOLUME = Template(
    "tetrahedron_volume", "area", 4,
    draw=_tetra_draw,
    gold=_tetra_volume,
    euclid=_tetra_euclid,
    coord=lambda c: f"Find the volume of the tetrahedron with vertices {points_text(dec_points(c), 'OABC')}.",
    vector=_tetra_vector,
)

# --- cone ------------------------------------------------------------------------------------


def _cone_draw(rng: random.Random) -> Config:
    r, h = rng.choice(RIGHT_LEGS[:9])
    centre = [rng.randint(-5, 5) for _ in range(3)]
    apex = centre[:2] + [centre[2] + rng.choice((1, -1)) * h]
    return {"centre": [enc(x) for x in centre], "apex": [enc(x) for x in apex], "r": enc(r)}


def _cone_parts(c: Config):
    centre, apex = tuple(dec(x) for x in c["centre"]), tuple(dec(x) for x in c["apex"])
    return centre, apex, dec(c["r"])


def _cone_gold(c: Config) -> sympy.Expr:
    centre, apex, r = _cone_parts(c)
    return sympy.pi * r ** 2 * dist(centre, apex) / 3


def _cone_euclid(c: Config) -> str:
    centre, apex, r = _cone_parts(c)
    slant = sympy.sqrt(r ** 2 + dist(centre, apex) ** 2)
    return f"A right circular cone has base radius {fmt(r)} and slant height {fmt(slant)}. Find its volume."


def _cone_coord(c: Config) -> str:
    centre, apex, r = _cone_parts(c)
    return (f"A right circular cone has its apex at {points_text({'P': apex}, 'P')}, and its base is the disc "
            f"bounded by the circle {circle_text(centre[:2], r ** 2, 'xy')} in the plane z = {fmt(centre[2])}. "
            "Find its volume.")


def _cone_vector(c: Config) -> str:
    centre, apex, r = _cone_parts(c)
    return (f"A right circular cone has its apex at the point with position vector {vec_text('v', apex)}. "
            f"Its base is the disc of the points x with |x - c| ≤ {fmt(r)} and (x - c) · (v - c) = 0, "
            f"where {vec_text('c', centre)}. Find its volume.")


CONE_VOLUME = Template(
    "cone_volume", "area", 2,
    draw=_cone_draw,
    gold=_cone_gold,
    euclid=_cone_euclid,
    coord=_cone_coord,
    vector=_cone_vector,
)

# --- square from a diagonal ------------------------------------------------------------------


def _square_draw(rng: random.Random) -> Config:
    p, q = 0, 0
    while p == 0 and q == 0:
        p, q = rng.randint(-8, 8), rng.randint(-8, 8)
    a = (I(rng.randint(-6, 6)), I(rng.randint(-6, 6)))
    return {"points": enc_points({"A": a, "C": (a[0] + p, a[1] + q)})}


def _square_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"The opposite vertices A and C of square ABCD have position vectors {vec_text('a', p['A'])} and "
            f"{vec_text('c', p['C'])}. Find the area of the square.")


SQUARE_AREA = Template(
    "square_area", "area", 2,
    draw=_square_draw,
    gold=lambda c: dist(dec_points(c)["A"], dec_points(c)["C"]) ** 2 / 2,
    euclid=lambda c: (
        f"Square ABCD has diagonal AC = {fmt(dist(*dec_points(c).values()))}. Find the area of the square."
    ),
    coord=lambda c: (
        f"The points {points_text(dec_points(c), 'AC')} are opposite vertices of square ABCD. "
        "Find the area of the square."
    ),
    vector=_square_vector,
)

TEMPLATES = (
    HERON, SAS_AREA, PARALLELOGRAM_AREA, TRAPEZOID_AREA, CIRCUMCIRCLE_AREA, CIRCLE_EQUATION_AREA,
    SECTOR_AREA, QUADRILATERAL_AREA, RHOMBUS_AREA, TETRAHEDRON_VOLUME, CONE_VOLUME, SQUARE_AREA,
)
