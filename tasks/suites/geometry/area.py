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
from tasks.suites.geometry.text import fmt, in_plane, lengths_text, points_text, segment_text, vec_text
from tasks.suites.geometry.triangles import (
    RIGHT_LEGS, TRIANGLES_BY_BASE, circumcircle_template, circumradius, parallelogram_template,
    plane_vectors_text, right_text, right_triangle_config, sides_statement, triangle_config,
)


def _polygon_template(name: str, figure: str, names: str, draw: Callable[[random.Random], Config],
                      euclid: Callable[[Config], str], vector: Callable[[Config], str]) -> Template:
    """An area template whose gold is the area of the polygon ``names`` (one key entity a vertex)
    and whose coord rendering asks ``Find the area of the <figure> with vertices ...``."""
    return Template(
        name, "area", len(names),
        figures=(names,),
        draw=draw, gold=lambda c: polygon_area(c, names), euclid=euclid,
        coord=lambda c: f"Find the area of the {figure} with vertices {points_text(dec_points(c), names)}.",
        vector=vector,
    )


# --- triangle from three sides ---------------------------------------------------------------

HERON = _polygon_template(
    "heron", "triangle", "ABC", triangle_config,
    euclid=lambda c: f"{sides_statement(c)} Find the area of triangle ABC.",
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


SAS_AREA = _polygon_template("sas_area", "triangle", "ABC", _sas_draw, _sas_euclid, _sas_vector)

# --- parallelogram ---------------------------------------------------------------------------


def _parallelogram_sides(c: Config) -> str:
    p = dec_points(c)
    return (f"Parallelogram ABCD has its sides AB and AD along the vectors {vec_text('u', sub(p['B'], p['A']))} "
            f"and {vec_text('v', sub(p['D'], p['A']))}.")


PARALLELOGRAM_AREA = parallelogram_template(
    "parallelogram_area", "area", lambda p: sympy.Abs(cross2(sub(p["B"], p["A"]), sub(p["D"], p["A"]))),
    "Find the area of the parallelogram.", _parallelogram_sides,
)

# --- isosceles trapezoid ---------------------------------------------------------------------


def _trapezoid_draw(rng: random.Random) -> Config:
    e, h = rng.choice(RIGHT_LEGS[:8])
    b = rng.randint(1, 10)
    a = b + 2 * e
    return plane_config(rng, {"A": (Z, Z), "B": (I(a), Z), "C": (I(a - e), I(h)), "D": (I(e), I(h))})


TRAPEZOID_AREA = _polygon_template(
    "trapezoid_area", "trapezoid ABCD", "ABCD", _trapezoid_draw,
    euclid=lambda c: (
        f"ABCD is an isosceles trapezoid with AB ∥ CD, AB = {segment_text(c, 'AB')}, "
        f"CD = {segment_text(c, 'CD')} and legs AD = BC = {segment_text(c, 'AD')}. Find the area of the trapezoid."
    ),
    vector=lambda c: f"{in_plane(c, 'ABCD')} ABCD is a trapezoid; find its area.",
)

# --- circle through a right triangle ---------------------------------------------------------

CIRCUMCIRCLE_AREA = circumcircle_template(
    "circumcircle_area", "area", "area", lambda p: sympy.pi * circumradius(p) ** 2,
    euclid_opening=right_text, vector_opening=plane_vectors_text,
    draw=lambda rng: right_triangle_config(rng, (rng.randint(1, 9), rng.randint(1, 9))),
)

# --- quadrilateral from two triangles on a diagonal ------------------------------------------


def _quadrilateral_draw(rng: random.Random) -> Config:
    b = rng.choice(sorted(TRIANGLES_BY_BASE))
    _, x1, h1 = rng.choice(TRIANGLES_BY_BASE[b])
    _, x2, h2 = rng.choice(TRIANGLES_BY_BASE[b])
    return plane_config(rng, {"A": (Z, Z), "B": (I(x1), I(h1)), "C": (I(b), Z), "D": (I(x2), I(-h2))})


def _quadrilateral_euclid(c: Config) -> str:
    sides = lengths_text(c, ("AB", "BC", "CD", "DA"))
    return (f"In quadrilateral ABCD, the diagonal AC = {segment_text(c, 'AC')}, {sides}, and B and D lie on opposite "
            "sides of AC. Find the area of ABCD.")


QUADRILATERAL_AREA = _polygon_template(
    "quadrilateral_area", "quadrilateral ABCD", "ABCD", _quadrilateral_draw, _quadrilateral_euclid,
    vector=lambda c: f"{in_plane(c, 'ABCD')} Find the area of the quadrilateral ABCD.",
)

# --- rhombus ---------------------------------------------------------------------------------


def _rhombus_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"The diagonals AC and BD of rhombus ABCD, as vectors, are {vec_text('p', sub(p['C'], p['A']))} and "
            f"{vec_text('q', sub(p['D'], p['B']))}. Find the area of the rhombus.")


def _rhombus_draw(rng: random.Random) -> Config:
    e, f = rng.choice(RIGHT_LEGS[:10])
    return plane_config(rng, {"A": (I(e), Z), "B": (Z, I(f)), "C": (I(-e), Z), "D": (Z, I(-f))})


RHOMBUS_AREA = _polygon_template(
    "rhombus_area", "rhombus ABCD", "ABCD", _rhombus_draw,
    euclid=lambda c: (
        f"Rhombus ABCD has side {segment_text(c, 'AB')} and diagonal AC = {segment_text(c, 'AC')}. "
        "Find the area of the rhombus."
    ),
    vector=_rhombus_vector,
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
        f"Square ABCD has diagonal AC = {segment_text(c, 'AC')}. Find the area of the square."
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
