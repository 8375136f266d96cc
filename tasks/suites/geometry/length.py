"""Category ``length``: distances in triangles and parallelograms (medians, altitudes, radii,
diagonals); the category's circle and solid templates are in :mod:`~tasks.suites.geometry.circles`
and :mod:`~tasks.suites.geometry.solids`."""

from __future__ import annotations

import sympy

from tasks.suites.geometry.circles import CHORD, TANGENT
from tasks.suites.geometry.exact import add, dec_points, dist, midpoint, scale
from tasks.suites.geometry.solids import BOX_DIAGONAL
from tasks.suites.geometry.template import Template
from tasks.suites.geometry.text import points_text, position_vectors_text
from tasks.suites.geometry.triangles import (
    RIGHT_LEGS, abd_config, circumradius, inradius, parallelogram_c, parallelogram_euclid, right_text,
    right_triangle_config, sides_text, triangle_area, triangle_config, triangle_template, triangle_vectors_text,
    vertices_text,
)

HYPOTENUSE = Template(
    "hypotenuse", "length", 3,
    figures=("ABC",),
    draw=right_triangle_config,
    gold=lambda c: dist(dec_points(c)["A"], dec_points(c)["B"]),
    euclid=lambda c: f"{right_text(c)} Find the length of AB.",
    coord=lambda c: f"{vertices_text(c)}. Find the length of AB.",
    vector=lambda c: f"{triangle_vectors_text(c)} Find |b - a|, the length of AB.",
)

MEDIAN = triangle_template("median", "length", lambda p: dist(p["A"], midpoint(p["B"], p["C"])), (
    "M is the midpoint of BC. Find the length of the median AM.",
    "M is the midpoint of BC. Find the length of AM.",
    "M is the midpoint of BC. Find the length of the median AM.",
))

ALTITUDE = triangle_template("altitude", "length", lambda p: 2 * triangle_area(p) / dist(p["B"], p["C"]), (
    "Find the length of the altitude from A to BC.",
    "Find the distance from A to the line through B and C.",
    "Find the distance from A to the line r = b + t(c - b).",
))

CIRCUMRADIUS = Template(
    "circumradius", "length", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=lambda c: circumradius(dec_points(c)),
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. Find the radius of the circle through A, B and C.",
    coord=lambda c: f"Find the radius of the circle through the points {points_text(dec_points(c), 'ABC')}.",
    vector=lambda c: f"{triangle_vectors_text(c)} Find the radius of the circle through A, B and C.",
)

INRADIUS = triangle_template("inradius", "length", inradius, (
    "Find the radius of the circle inscribed in the triangle.",
    "Find the radius of the circle inscribed in the triangle.",
    "Find the radius of the circle inscribed in triangle ABC.",
))

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

CENTROID_DISTANCE = triangle_template(
    "centroid_distance", "length",
    lambda p: dist(p["A"], scale(sympy.Rational(1, 3), add(add(p["A"], p["B"]), p["C"]))), (
        "G is the centroid of the triangle (the common point of its medians). Find the length AG.",
        "G is the centroid of the triangle. Find the length AG.",
        "G is the centroid of triangle ABC. Find the length AG.",
    ),
)

HYPOTENUSE_SEGMENT = Template(
    "hypotenuse_segment", "length", 3,
    figures=("ABC",),
    draw=lambda rng: right_triangle_config(rng, rng.choice(RIGHT_LEGS)),
    # AD, D the foot of the altitude from C: AC² / AB
    gold=lambda c: dist(dec_points(c)["A"], dec_points(c)["C"]) ** 2 / dist(dec_points(c)["A"], dec_points(c)["B"]),
    euclid=lambda c: f"{right_text(c)} D is the foot of the perpendicular from C to AB. Find the length AD.",
    coord=lambda c: (
        f"{vertices_text(c)}. D is the foot of the perpendicular from C to the line AB. Find the length AD."
    ),
    vector=lambda c: (
        f"{triangle_vectors_text(c)} D is the point of the line AB with (d - c) · (b - a) = 0. Find |d - a|."
    ),
)

TEMPLATES = (
    HYPOTENUSE, MEDIAN, ALTITUDE, CIRCUMRADIUS, INRADIUS, CHORD, TANGENT, BOX_DIAGONAL,
    PARALLELOGRAM_DIAGONAL, CENTROID_DISTANCE, HYPOTENUSE_SEGMENT,
)
