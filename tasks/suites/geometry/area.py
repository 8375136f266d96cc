"""Category ``area``: areas of triangles and quadrilaterals; the category's circle templates
(circles, sectors) and solid templates (volumes) are in :mod:`~tasks.suites.geometry.circles`
and :mod:`~tasks.suites.geometry.solids`."""

from __future__ import annotations

import random
from typing import Callable

import sympy

from tasks.suites.geometry.circles import CIRCLE_EQUATION_AREA, SECTOR_AREA
from tasks.suites.geometry.exact import (
    Config, I, Z, angle_deg, cross2, dec_points, dist, dot, enc_points, norm, polar, polygon_area, sub,
)
from tasks.suites.geometry.placement import lattice_point, plane_config
from tasks.suites.geometry.solids import CONE_VOLUME, TETRAHEDRON_VOLUME
from tasks.suites.geometry.template import Template
from tasks.suites.geometry.text import fmt, in_plane, points_text, vec_text
from tasks.suites.geometry.triangles import (
    RIGHT_LEGS, TRIANGLES_BY_BASE, abd_config, circumradius, parallelogram_euclid, right_text,
    right_triangle_config, sides_text, triangle_config,
)


def _vertices_question(figure: str, names: str) -> Callable[[Config], str]:
    """The coord rendering ``Find the area of the <figure> with vertices ...``."""
    return lambda c: f"Find the area of the {figure} with vertices {points_text(dec_points(c), names)}."


# --- triangle from three sides ---------------------------------------------------------------

HERON = Template(
    "heron", "area", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=lambda c: polygon_area(c, "ABC"),
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. Find the area of triangle ABC.",
    coord=_vertices_question("triangle", "ABC"),
    vector=lambda c: f"{in_plane(c, 'ABC')} Find the area of triangle ABC.",
)

# --- triangle from two sides and the included angle ------------------------------------------

# the length of CB for each angle, so that B = polar(|CB|, angle) has readable coordinates
_SAS_RADIUS = {30: 2, 45: sympy.sqrt(2), 60: 2, 90: 1, 120: 2, 135: sympy.sqrt(2), 150: 2}


def _sas_draw(rng: random.Random) -> Config:
    angle = rng.choice(sorted(_SAS_RADIUS))
    return plane_config(rng, {
        "A": (I(rng.randint(1, 10)), Z), "B": polar(_SAS_RADIUS[angle] * rng.randint(1, 5), angle), "C": (Z, Z),
    })


def _sas_parts(c: Config):
    p = dec_points(c)
    u, v = sub(p["A"], p["C"]), sub(p["B"], p["C"])
    return u, v, angle_deg(u, v)


def _sas_euclid(c: Config) -> str:
    u, v, angle = _sas_parts(c)
    return (f"In triangle ABC, CA = {fmt(norm(u))}, CB = {fmt(norm(v))} and ∠ACB = {fmt(angle)}°. "
            "Find the area of triangle ABC.")


def _sas_vector(c: Config) -> str:
    u, v, _ = _sas_parts(c)
    return (f"The vectors u from C to A and v from C to B satisfy |u| = {fmt(norm(u))}, "
            f"|v| = {fmt(norm(v))} and u · v = {fmt(dot(u, v))}. Find the area of triangle ABC.")


SAS_AREA = Template(
    "sas_area", "area", 3,
    figures=("ABC",),
    draw=_sas_draw, gold=lambda c: polygon_area(c, "ABC"), euclid=_sas_euclid,
    coord=_vertices_question("triangle", "ABC"), vector=_sas_vector,
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
    return plane_config(rng, {"A": (Z, Z), "B": (I(a), Z), "C": (I(a - e), I(h)), "D": (I(e), I(h))})


def _trapezoid_euclid(c: Config) -> str:
    p = dec_points(c)
    return (f"ABCD is an isosceles trapezoid with AB ∥ CD, AB = {fmt(dist(p['A'], p['B']))}, "
            f"CD = {fmt(dist(p['C'], p['D']))} and legs AD = BC = {fmt(dist(p['A'], p['D']))}. "
            "Find the area of the trapezoid.")


TRAPEZOID_AREA = Template(
    "trapezoid_area", "area", 4,
    figures=("ABCD",),
    draw=_trapezoid_draw, gold=lambda c: polygon_area(c, "ABCD"), euclid=_trapezoid_euclid,
    coord=_vertices_question("trapezoid ABCD", "ABCD"),
    vector=lambda c: f"{in_plane(c, 'ABCD')} ABCD is a trapezoid; find its area.",
)

# --- circle through a right triangle ---------------------------------------------------------

CIRCUMCIRCLE_AREA = Template(
    "circumcircle_area", "area", 3,
    figures=("ABC",),
    draw=lambda rng: right_triangle_config(rng, (rng.randint(1, 9), rng.randint(1, 9))),
    gold=lambda c: sympy.pi * circumradius(dec_points(c)) ** 2,
    euclid=lambda c: f"{right_text(c)} Find the area of the circle through A, B and C.",
    coord=lambda c: f"Find the area of the circle through the points {points_text(dec_points(c), 'ABC')}.",
    vector=lambda c: f"{in_plane(c, 'ABC')} Find the area of the circle through A, B and C.",
)

# --- quadrilateral from two triangles on a diagonal ------------------------------------------


def _quadrilateral_draw(rng: random.Random) -> Config:
    b = rng.choice(sorted(TRIANGLES_BY_BASE))
    _, x1, h1 = rng.choice(TRIANGLES_BY_BASE[b])
    _, x2, h2 = rng.choice(TRIANGLES_BY_BASE[b])
    return plane_config(rng, {"A": (Z, Z), "B": (I(x1), I(h1)), "C": (I(b), Z), "D": (I(x2), I(-h2))})


def _quadrilateral_euclid(c: Config) -> str:
    p = dec_points(c)
    d = {s: fmt(dist(p[s[0]], p[s[1]])) for s in ("AC", "AB", "BC", "CD", "DA")}
    return (f"In quadrilateral ABCD, the diagonal AC = {d['AC']}, AB = {d['AB']}, BC = {d['BC']}, CD = {d['CD']} "
            f"and DA = {d['DA']}, and B and D lie on opposite sides of AC. Find the area of ABCD.")


QUADRILATERAL_AREA = Template(
    "quadrilateral_area", "area", 4,
    figures=("ABCD",),
    draw=_quadrilateral_draw, gold=lambda c: polygon_area(c, "ABCD"), euclid=_quadrilateral_euclid,
    coord=_vertices_question("quadrilateral ABCD", "ABCD"),
    vector=lambda c: f"{in_plane(c, 'ABCD')} Find the area of the quadrilateral ABCD.",
)

# --- rhombus ---------------------------------------------------------------------------------


def _rhombus_euclid(c: Config) -> str:
    p = dec_points(c)
    return (f"Rhombus ABCD has side {fmt(dist(p['A'], p['B']))} and diagonal AC = {fmt(dist(p['A'], p['C']))}. "
            "Find the area of the rhombus.")


def _rhombus_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"The diagonals AC and BD of rhombus ABCD, as vectors, are {vec_text('p', sub(p['C'], p['A']))} and "
            f"{vec_text('q', sub(p['D'], p['B']))}. Find the area of the rhombus.")


def _rhombus_draw(rng: random.Random) -> Config:
    e, f = rng.choice(RIGHT_LEGS[:10])
    return plane_config(rng, {"A": (I(e), Z), "B": (Z, I(f)), "C": (I(-e), Z), "D": (Z, I(-f))})


RHOMBUS_AREA = Template(
    "rhombus_area", "area", 4,
    figures=("ABCD",),
    draw=_rhombus_draw, gold=lambda c: polygon_area(c, "ABCD"), euclid=_rhombus_euclid,
    coord=_vertices_question("rhombus ABCD", "ABCD"), vector=_rhombus_vector,
)

# --- square from a diagonal ------------------------------------------------------------------


def _square_draw(rng: random.Random) -> Config:
    p, q = 0, 0
    while p == 0 and q == 0:
        p, q = rng.randint(-8, 8), rng.randint(-8, 8)
    a = lattice_point(rng)
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
