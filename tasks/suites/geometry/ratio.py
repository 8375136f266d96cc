"""Category ``ratio``: ratios of segments and of areas (answers are rational); the category's
circle template is in :mod:`~tasks.suites.geometry.circles`."""

from __future__ import annotations

import random
from typing import Callable

import sympy

from tasks.suites.geometry.circles import CHORDS_RATIO
from tasks.suites.geometry.exact import (
    ORIGIN, Config, Point, add, cross2, dec, dec_points, dec_vector, dist, enc, enc_points, enc_vector,
    line_intersection, midpoint, norm, polygon_area, scale, sub,
)
from tasks.suites.geometry.placement import SMALL_STEPS, lattice_point, lattice_step, plane_config
from tasks.suites.geometry.template import Template, stated
from tasks.suites.geometry.text import fmt, in_plane, lengths_text, linear_text, points_text, segment_text, vec_text
from tasks.suites.geometry.triangles import circumradius, inradius, plane_vectors_text, triangle_template, vertices_text


def _off_line_point(rng: random.Random, start: Point, direction: Point) -> Point:
    """A random lattice point not on the line through ``start`` along ``direction``."""
    while True:
        a = lattice_point(rng)
        if cross2(sub(a, start), direction) != 0:
            return a


def _ratio(c: Config, a: str, p: str, b: str) -> sympy.Expr:
    """The configuration's ``ap / pb``."""
    pts = dec_points(c)
    return dist(pts[a], pts[p]) / dist(pts[p], pts[b])


# --- point dividing a segment ----------------------------------------------------------------


def _section_draw(rng: random.Random) -> Config:
    m, n = rng.sample(range(1, 7), 2)
    w = lattice_step(rng, SMALL_STEPS)
    a = lattice_point(rng)
    return plane_config(rng, {"A": a, "B": add(a, scale(m + n, w)), "P": add(a, scale(m, w))})


SECTION_RATIO = Template(
    "section_ratio", "ratio", 3,
    draw=_section_draw,
    gold=lambda c: _ratio(c, "A", "P", "B"),
    euclid=lambda c: f"The point P lies on the segment AB, with AB = {segment_text(c, 'AB')} and "
                     f"AP = {segment_text(c, 'AP')}. Find AP/PB.",
    coord=lambda c: (
        f"The point {points_text(dec_points(c), 'P')} lies on the segment joining {points_text(dec_points(c), 'AB')}. "
        "Find AP/PB."
    ),
    vector=lambda c: f"{in_plane(c, 'ABP')} P lies on the segment AB. Find AP/PB.",
)

# --- triangle ADE with D on AB and E on AC ---------------------------------------------------


def _ade_template(name: str, draw, given: Callable[[Config], str], other: Callable[[Config], str]) -> Template:
    """Triangle ABC with D on AB and E on AC: the ratio of the area of ADE to the area of the
    figure ``other`` names (ABC or DBCE); ``given`` is the euclid statement."""
    def question(c: Config) -> str:
        figure = f"triangle {other(c)}" if len(other(c)) == 3 else f"quadrilateral {other(c)}"
        return f"Find the ratio of the area of triangle ADE to the area of {figure}."

    return Template(
        name, "ratio", 5,
        figures=("ABC", "ADE"),
        draw=draw,
        gold=lambda c: polygon_area(c, "ADE") / polygon_area(c, other(c)),
        euclid=lambda c: f"{given(c)} {question(c)}",
        coord=lambda c: f"{vertices_text(c)}; the points {points_text(dec_points(c), 'DE')} lie on AB and AC. "
                        f"{question(c)}",
        vector=lambda c: f"{in_plane(c, 'ABCDE')} D lies on AB and E on AC. {question(c)}",
    )


def _parallel_draw(rng: random.Random) -> Config:
    u = lattice_step(rng, SMALL_STEPS)
    v = _off_line_point(rng, ORIGIN, u)
    q = rng.randint(2, 5)
    p = rng.randint(1, q - 1)
    base = {"A": ORIGIN, "B": scale(q, u), "C": scale(q, v), "D": scale(p, u), "E": scale(p, v)}
    return {**plane_config(rng, base), "other": rng.choice(["ABC", "DBCE"])}


# DE parallel to BC cuts off a similar triangle
PARALLEL_AREA_RATIO = _ade_template(
    "parallel_area_ratio", _parallel_draw,
    lambda c: f"In triangle ABC, the points D on AB and E on AC satisfy DE ∥ BC, with AD = {segment_text(c, 'AD')} "
              f"and DB = {segment_text(c, 'DB')}.",
    lambda c: c["other"],
)


def _shared_draw(rng: random.Random) -> Config:
    while True:
        u, v = lattice_step(rng, SMALL_STEPS), lattice_step(rng, SMALL_STEPS)
        if cross2(u, v) != 0:
            break
    k1, k2 = rng.randint(2, 5), rng.randint(2, 5)
    p1, p2 = rng.randint(1, k1 - 1), rng.randint(1, k2 - 1)
    return plane_config(rng, {"A": ORIGIN, "B": scale(k1, u), "C": scale(k2, v), "D": scale(p1, u), "E": scale(p2, v)})


def _shared_given(c: Config) -> str:
    return (f"In triangle ABC, {lengths_text(c, ('AB', 'AC'))}. The point D on AB has AD = {segment_text(c, 'AD')}, "
            f"and the point E on AC has AE = {segment_text(c, 'AE')}.")


# the triangles ADE and ABC share the angle at A
SHARED_ANGLE_RATIO = _ade_template("shared_angle_ratio", _shared_draw, _shared_given, lambda c: "ABC")

# --- triangle ABC with D on BC ---------------------------------------------------------------


def _cevian_draw(rng: random.Random) -> Config:
    m, n = rng.sample(range(1, 7), 2)
    w = lattice_step(rng, SMALL_STEPS)
    b = lattice_point(rng, 4)
    a = _off_line_point(rng, b, w)
    return plane_config(rng, {"A": a, "B": b, "C": add(b, scale(m + n, w)), "D": add(b, scale(m, w))})


def _cevian_template(name: str, gold: Callable[[Config], sympy.Expr], question: str) -> Template:
    """Triangle ABC with the point D on BC, given by BD and DC, followed by ``question``."""
    statements = (
        lambda c: (
            f"In triangle ABC, the point D on BC has BD = {segment_text(c, 'BD')} and DC = {segment_text(c, 'DC')}."
        ),
        lambda c: f"{vertices_text(c)}, and {points_text(dec_points(c), 'D')} lies on BC.",
        lambda c: f"{in_plane(c, 'ABCD')} D lies on BC.",
    )
    return stated(name, "ratio", 4, _cevian_draw, gold, statements, (question,) * 3, figures=("ABC", "ABD", "ADC"))


# the cevian AD splits the area
CEVIAN_AREA_RATIO = _cevian_template(
    "cevian_area_ratio", lambda c: polygon_area(c, "ABD") / polygon_area(c, "ADC"),
    "Find the ratio of the area of triangle ABD to the area of triangle ADC.",
)


def _cevians_gold(c: Config) -> sympy.Expr:
    p = dec_points(c)
    meet = line_intersection(p["A"], p["D"], p["B"], midpoint(p["A"], p["C"]))
    return dist(p["A"], meet) / dist(meet, p["D"])


# the cevians AD and BM meet
CEVIANS_RATIO = _cevian_template(
    "cevians_ratio", _cevians_gold, "M is the midpoint of AC, and the segments AD and BM meet at P. Find AP/PD.",
)

# --- triangles given by their sides ----------------------------------------------------------


def _bisector_ratio(p: dict[str, Point]) -> sympy.Expr:
    """BD/DC with D = (AC·B + AB·C) / (AB + AC), the foot of the bisector from A."""
    ab, ac = dist(p["A"], p["B"]), dist(p["A"], p["C"])
    d = scale(1 / (ab + ac), add(scale(ac, p["B"]), scale(ab, p["C"])))
    return dist(p["B"], d) / dist(d, p["C"])


_BISECTOR_Q = "The bisector of ∠BAC meets BC at D. Find BD/DC."
_CIRCLES_Q = (
    "Find the ratio of the radius of the circle inscribed in the triangle to the radius of the circle "
    "through A, B and C."
)
BISECTOR_RATIO = triangle_template(
    "bisector_ratio", "ratio", _bisector_ratio, (_BISECTOR_Q,) * 3, plane_vectors_text,
)
CIRCLES_RATIO = triangle_template(
    "circles_ratio", "ratio", lambda p: inradius(p) / circumradius(p), (_CIRCLES_Q,) * 3, plane_vectors_text,
)

# --- diagonals of a trapezoid ----------------------------------------------------------------


def _trapezoid_draw(rng: random.Random) -> Config:
    a, b = rng.sample(range(1, 9), 2)
    u = lattice_step(rng, SMALL_STEPS)
    d = _off_line_point(rng, ORIGIN, u)
    return plane_config(rng, {"A": ORIGIN, "B": scale(a, u), "C": add(d, scale(b, u)), "D": d})


def _diagonal_ratio(c: Config) -> sympy.Expr:
    p = dec_points(c)
    o = line_intersection(p["A"], p["C"], p["B"], p["D"])
    return dist(p["A"], o) / dist(o, p["C"])


_DIAGONALS_Q = "Its diagonals AC and BD meet at O. Find AO/OC."

TRAPEZOID_DIAGONAL_RATIO = Template(
    "trapezoid_diagonal_ratio", "ratio", 4,
    figures=("ABCD",),
    draw=_trapezoid_draw,
    gold=_diagonal_ratio,
    euclid=lambda c: (
        f"ABCD is a trapezoid with AB ∥ CD, AB = {segment_text(c, 'AB')} and CD = {segment_text(c, 'CD')}. "
        f"{_DIAGONALS_Q}"
    ),
    coord=lambda c: f"The trapezoid ABCD has vertices {points_text(dec_points(c), 'ABCD')}. {_DIAGONALS_Q}",
    vector=lambda c: f"{in_plane(c, 'ABCD')} ABCD is a trapezoid. {_DIAGONALS_Q}",
)

# --- a line divides a segment ----------------------------------------------------------------


def _line_side(c: Config, name: str) -> sympy.Expr:
    """n·X - m for the configuration's line and point ``name``: its sign says the side."""
    n, p = dec_vector(c["normal"]), dec_points(c)[name]
    return n[0] * p[0] + n[1] * p[1] - dec(c["m"])


def _line_draw(rng: random.Random) -> Config:
    n = lattice_step(rng) if rng.random() < 0.5 else lattice_step(rng, SMALL_STEPS)
    while True:  # the line n·x = m must pass strictly between A and B
        a, b = (lattice_point(rng, 8) for _ in range(2))
        fa, fb = n[0] * a[0] + n[1] * a[1], n[0] * b[0] + n[1] * b[1]
        if fa - fb >= 2:
            m = rng.randint(fb + 1, fa - 1)
            return {"normal": enc_vector(n), "m": enc(m), "points": enc_points({"A": a, "B": b})}


def _line_ratio(c: Config) -> sympy.Expr:
    fa, fb = _line_side(c, "A"), _line_side(c, "B")
    p = dec_points(c)
    meet = add(p["A"], scale(fa / (fa - fb), sub(p["B"], p["A"])))
    return dist(p["A"], meet) / dist(meet, p["B"])


def _line_euclid(c: Config) -> str:
    length = norm(dec_vector(c["normal"]))
    return (f"The points A and B lie on opposite sides of a line ℓ, at distances {fmt(_line_side(c, 'A') / length)} "
            f"and {fmt(-_line_side(c, 'B') / length)} from it. The segment AB meets ℓ at P. Find AP/PB.")


def _line_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"A line consists of the points with position vector x such that x · n = {fmt(dec(c['m']))}, where "
            f"{vec_text('n', dec_vector(c['normal']))}. The segment joining the points A and B with "
            f"position vectors {vec_text('a', p['A'])} and {vec_text('b', p['B'])} meets the line at P. Find AP/PB.")


LINE_SECTION_RATIO = Template(
    "line_section_ratio", "ratio", 3,
    draw=_line_draw,
    gold=_line_ratio,
    euclid=_line_euclid,
    coord=lambda c: (
        f"The segment joining {points_text(dec_points(c), 'AB')} meets the line "
        f"{linear_text(dec_vector(c['normal']), 'xy', dec(c['m']))} at P. Find AP/PB."
    ),
    vector=_line_vector,
)

TEMPLATES = (
    SECTION_RATIO, PARALLEL_AREA_RATIO, CEVIAN_AREA_RATIO, BISECTOR_RATIO, CIRCLES_RATIO,
    TRAPEZOID_DIAGONAL_RATIO, LINE_SECTION_RATIO, CHORDS_RATIO, CEVIANS_RATIO, SHARED_ANGLE_RATIO,
)
