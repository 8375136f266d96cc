"""Category ``length``: distances in triangles and parallelograms (medians, altitudes, radii,
diagonals); the category's circle and solid templates are in :mod:`~tasks.suites.geometry.circles`
and :mod:`~tasks.suites.geometry.solids`."""

from __future__ import annotations

import sympy

from tasks.suites.geometry.circles import CHORD, TANGENT
from tasks.suites.geometry.exact import add, dec_points, dist, midpoint, scale
from tasks.suites.geometry.solids import BOX_DIAGONAL
from tasks.suites.geometry.text import position_vectors_text
from tasks.suites.geometry.triangles import (
    RIGHT_LEGS, circumcircle_template, circumradius, inradius, parallelogram_c, parallelogram_template, right_text,
    right_triangle_config, triangle_area, triangle_template,
)

HYPOTENUSE = triangle_template(
    "hypotenuse", "length", lambda p: dist(p["A"], p["B"]),
    ("Find the length of AB.", "Find the length of AB.", "Find |b - a|, the length of AB."),
    euclid_opening=right_text, draw=right_triangle_config,
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

CIRCUMRADIUS = circumcircle_template("circumradius", "length", "radius", circumradius)

INRADIUS = triangle_template("inradius", "length", inradius, (
    "Find the radius of the circle inscribed in the triangle.",
    "Find the radius of the circle inscribed in the triangle.",
    "Find the radius of the circle inscribed in triangle ABC.",
))

PARALLELOGRAM_DIAGONAL = parallelogram_template(
    "parallelogram_diagonal", "length", lambda p: dist(p["A"], parallelogram_c(p)),
    "Find the length of the diagonal AC.",
    lambda c: f"In parallelogram ABCD, {position_vectors_text(dec_points(c), 'ABD')}.",
)

CENTROID_DISTANCE = triangle_template(
    "centroid_distance", "length",
    lambda p: dist(p["A"], scale(sympy.Rational(1, 3), add(add(p["A"], p["B"]), p["C"]))), (
        "G is the centroid of the triangle (the common point of its medians). Find the length AG.",
        "G is the centroid of the triangle. Find the length AG.",
        "G is the centroid of triangle ABC. Find the length AG.",
    ),
)

HYPOTENUSE_SEGMENT = triangle_template(
    # AD, D the foot of the altitude from C: AC² / AB
    "hypotenuse_segment", "length", lambda p: dist(p["A"], p["C"]) ** 2 / dist(p["A"], p["B"]), (
        "D is the foot of the perpendicular from C to AB. Find the length AD.",
        "D is the foot of the perpendicular from C to the line AB. Find the length AD.",
        "D is the point of the line AB with (d - c) · (b - a) = 0. Find |d - a|.",
    ),
    euclid_opening=right_text, draw=lambda rng: right_triangle_config(rng, rng.choice(RIGHT_LEGS)),
)

TEMPLATES = (
    HYPOTENUSE, MEDIAN, ALTITUDE, CIRCUMRADIUS, INRADIUS, CHORD, TANGENT, BOX_DIAGONAL,
    PARALLELOGRAM_DIAGONAL, CENTROID_DISTANCE, HYPOTENUSE_SEGMENT,
)
