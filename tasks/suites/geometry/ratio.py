"""Category ``ratio``: ratios of segments and of areas (answers are rational)."""

from __future__ import annotations

import math
import random

import sympy

from tasks.suites.geometry.common import (
    Config,
    Template,
    add,
    circle_text,
    cross2,
    dec,
    dec_points,
    dist,
    enc,
    enc_points,
    fmt,
    lattice_step,
    linear_text,
    place2d,
    points_text,
    position_vectors_text,
    scale,
    shoelace,
    sub,
    vec_text,
)
from tasks.suites.geometry.length import circumradius, inradius, sides_text, triangle_config

Z = sympy.Integer(0)
I = sympy.Integer
ORIGIN = (Z, Z)
SMALL_STEPS = ((1, 0), (0, 1), (3, 4), (4, 3))


def _length(v) -> sympy.Expr:
    return dist(v, tuple(Z for _ in v))


def _small_step(rng: random.Random):
    """A lattice step of integer length 1 or 5, random signs."""
    p, q = rng.choice(SMALL_STEPS)
    return (I(p * rng.choice((1, -1))), I(q * rng.choice((1, -1))))


def _off_line_point(rng: random.Random, start, direction):
    """A random lattice point not on the line through ``start`` along ``direction``."""
    while True:
        a = (I(rng.randint(-6, 6)), I(rng.randint(-6, 6)))
        if cross2(sub(a, start), direction) != 0:
            return a


def _intersection(p1, p2, q1, q2):
    """The intersection of the lines p1p2 and q1q2 (exact)."""
    t, s = sympy.symbols("t s")
    equations = [p1[i] + t * (p2[i] - p1[i]) - q1[i] - s * (q2[i] - q1[i]) for i in range(2)]
    sol = sympy.solve(equations, [t, s], dict=True)[0]
    return tuple(sympy.nsimplify(p1[i] + sol[t] * (p2[i] - p1[i])) for i in range(2))


def _ratio(c: Config, a: str, p: str, b: str) -> sympy.Expr:
    """The configuration's ``ap / pb``."""
    pts = dec_points(c)
    return dist(pts[a], pts[p]) / dist(pts[p], pts[b])


def _area(c: Config, names: str) -> sympy.Expr:
    p = dec_points(c)
    return shoelace([p[n] for n in names])


def _in_plane(c: Config, names: str) -> str:
    return f"In the plane, {position_vectors_text(dec_points(c), names)}."


# --- point dividing a segment ----------------------------------------------------------------


def _section_draw(rng: random.Random) -> Config:
    m, n = rng.sample(range(1, 7), 2)
    w = _small_step(rng)
    a = (I(rng.randint(-6, 6)), I(rng.randint(-6, 6)))
    return {"points": enc_points(place2d(rng, {"A": a, "B": add(a, scale(m + n, w)), "P": add(a, scale(m, w))}))}


SECTION_RATIO = Template(
    "section_ratio", "ratio", 3,
    draw=_section_draw,
    gold=lambda c: _ratio(c, "A", "P", "B"),
    euclid=lambda c: (
        f"The point P lies on the segment AB, with AB = {fmt(dist(dec_points(c)['A'], dec_points(c)['B']))} and "
        f"AP = {fmt(dist(dec_points(c)['A'], dec_points(c)['P']))}. Find AP/PB."
    ),
    coord=lambda c: (
        f"The point {points_text(dec_points(c), 'P')} lies on the segment joining {points_text(dec_points(c), 'AB')}. "
        "Find AP/PB."
    ),
    vector=lambda c: f"{_in_plane(c, 'ABP')} P lies on the segment AB. Find AP/PB.",
)

# --- parallel to a side cuts off a similar triangle ------------------------------------------


def _parallel_draw(rng: random.Random) -> Config:
    u = _small_step(rng)
    v = _off_line_point(rng, ORIGIN, u)
    q = rng.randint(2, 5)
    p = rng.randint(1, q - 1)
    base = {"A": ORIGIN, "B": scale(q, u), "C": scale(q, v), "D": scale(p, u), "E": scale(p, v)}
    return {"points": enc_points(place2d(rng, base)), "other": rng.choice(["ABC", "DBCE"])}


def _other_name(c: Config) -> str:
    return "triangle ABC" if c["other"] == "ABC" else "quadrilateral DBCE"


def _parallel_euclid(c: Config) -> str:
    p = dec_points(c)
    return (f"In triangle ABC, the points D on AB and E on AC satisfy DE ∥ BC, with AD = {fmt(dist(p['A'], p['D']))} "
            f"and DB = {fmt(dist(p['D'], p['B']))}. Find the ratio of the area of triangle ADE to the area of "
            f"{_other_name(c)}.")


def _parallel_question(c: Config) -> str:
    return f"Find the ratio of the area of triangle ADE to the area of {_other_name(c)}."


PARALLEL_AREA_RATIO = Template(
    "parallel_area_ratio", "ratio", 5,
    figures=("ABC", "ADE"),
    draw=_parallel_draw,
    gold=lambda c: _area(c, "ADE") / _area(c, c["other"]),
    euclid=_parallel_euclid,
    coord=lambda c: (
        f"Triangle ABC has vertices {points_text(dec_points(c), 'ABC')}; the points {points_text(dec_points(c), 'DE')} "
        f"lie on AB and AC. {_parallel_question(c)}"
    ),
    vector=lambda c: f"{_in_plane(c, 'ABCDE')} D lies on AB and E on AC. {_parallel_question(c)}",
)

# --- a cevian splits the area ----------------------------------------------------------------


def _cevian_draw(rng: random.Random) -> Config:
    m, n = rng.sample(range(1, 7), 2)
    w = _small_step(rng)
    b = (I(rng.randint(-4, 4)), I(rng.randint(-4, 4)))
    a = _off_line_point(rng, b, w)
    base = {"A": a, "B": b, "C": add(b, scale(m + n, w)), "D": add(b, scale(m, w))}
    return {"points": enc_points(place2d(rng, base))}


_CEVIAN_Q = "Find the ratio of the area of triangle ABD to the area of triangle ADC."

CEVIAN_AREA_RATIO = Template(
    "cevian_area_ratio", "ratio", 4,
    figures=("ABC", "ABD", "ADC"),
    draw=_cevian_draw,
    gold=lambda c: _area(c, "ABD") / _area(c, "ADC"),
    euclid=lambda c: (
        f"In triangle ABC, the point D on BC has BD = {fmt(dist(dec_points(c)['B'], dec_points(c)['D']))} and "
        f"DC = {fmt(dist(dec_points(c)['D'], dec_points(c)['C']))}. {_CEVIAN_Q}"
    ),
    coord=lambda c: (
        f"Triangle ABC has vertices {points_text(dec_points(c), 'ABC')}, and {points_text(dec_points(c), 'D')} "
        f"lies on BC. {_CEVIAN_Q}"
    ),
    vector=lambda c: f"{_in_plane(c, 'ABCD')} D lies on BC. {_CEVIAN_Q}",
)

# --- angle bisector --------------------------------------------------------------------------


def _bisector_gold(c: Config) -> sympy.Expr:
    """BD/DC with D = (AC·B + AB·C) / (AB + AC), the foot of the bisector from A."""
    p = dec_points(c)
    ab, ac = dist(p["A"], p["B"]), dist(p["A"], p["C"])
    d = scale(1 / (ab + ac), add(scale(ac, p["B"]), scale(ab, p["C"])))
    return dist(p["B"], d) / dist(d, p["C"])


_BISECTOR_Q = "The bisector of ∠BAC meets BC at D. Find BD/DC."

BISECTOR_RATIO = Template(
    "bisector_ratio", "ratio", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=_bisector_gold,
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. {_BISECTOR_Q}",
    coord=lambda c: f"Triangle ABC has vertices {points_text(dec_points(c), 'ABC')}. {_BISECTOR_Q}",
    vector=lambda c: f"{_in_plane(c, 'ABC')} {_BISECTOR_Q}",
)

# --- incircle to circumcircle ----------------------------------------------------------------

_CIRCLES_Q = (
    "Find the ratio of the radius of the circle inscribed in the triangle to the radius of the circle "
    "through A, B and C."
)

CIRCLES_RATIO = Template(
    "circles_ratio", "ratio", 3,
    figures=("ABC",),
    draw=triangle_config,
    gold=lambda c: inradius(dec_points(c)) / circumradius(dec_points(c)),
    euclid=lambda c: f"In triangle ABC, {sides_text(c)}. {_CIRCLES_Q}",
    coord=lambda c: f"Triangle ABC has vertices {points_text(dec_points(c), 'ABC')}. {_CIRCLES_Q}",
    vector=lambda c: f"{_in_plane(c, 'ABC')} {_CIRCLES_Q}",
)

# --- diagonals of a trapezoid ----------------------------------------------------------------


def _trapezoid_draw(rng: random.Random) -> Config:
    a, b = rng.sample(range(1, 9), 2)
    u = _small_step(rng)
    d = _off_line_point(rng, ORIGIN, u)
    base = {"A": ORIGIN, "B": scale(a, u), "C": add(d, scale(b, u)), "D": d}
    return {"points": enc_points(place2d(rng, base))}


def _diagonal_ratio(c: Config) -> sympy.Expr:
    p = dec_points(c)
    o = _intersection(p["A"], p["C"], p["B"], p["D"])
    return dist(p["A"], o) / dist(o, p["C"])


_DIAGONALS_Q = "Its diagonals AC and BD meet at O. Find AO/OC."

TRAPEZOID_DIAGONAL_RATIO = Template(
    "trapezoid_diagonal_ratio", "ratio", 4,
    figures=("ABCD",),
    draw=_trapezoid_draw,
    gold=_diagonal_ratio,
    euclid=lambda c: (
        f"ABCD is a trapezoid with AB ∥ CD, AB = {fmt(dist(dec_points(c)['A'], dec_points(c)['B']))} and "
        f"CD = {fmt(dist(dec_points(c)['C'], dec_points(c)['D']))}. {_DIAGONALS_Q}"
    ),
    coord=lambda c: f"The trapezoid ABCD has vertices {points_text(dec_points(c), 'ABCD')}. {_DIAGONALS_Q}",
    vector=lambda c: f"{_in_plane(c, 'ABCD')} ABCD is a trapezoid. {_DIAGONALS_Q}",
)

# --- a line divides a segment ----------------------------------------------------------------


def _line_side(c: Config, name: str) -> sympy.Expr:
    """n·X - m for the configuration's line and point ``name``: its sign says the side."""
    n, p = [dec(x) for x in c["normal"]], dec_points(c)[name]
    return n[0] * p[0] + n[1] * p[1] - dec(c["m"])


def _line_draw(rng: random.Random) -> Config:
    n = lattice_step(rng) if rng.random() < 0.5 else _small_step(rng)
    while True:  # the line n·x = m must pass strictly between A and B
        a, b = ((I(rng.randint(-8, 8)), I(rng.randint(-8, 8))) for _ in range(2))
        fa, fb = n[0] * a[0] + n[1] * a[1], n[0] * b[0] + n[1] * b[1]
        if fa - fb >= 2:
            m = rng.randint(fb + 1, fa - 1)
            return {"normal": [enc(x) for x in n], "m": enc(m), "points": enc_points({"A": a, "B": b})}


def _line_ratio(c: Config) -> sympy.Expr:
    fa, fb = _line_side(c, "A"), _line_side(c, "B")
    p = dec_points(c)
    meet = add(p["A"], scale(fa / (fa - fb), sub(p["B"], p["A"])))
    return dist(p["A"], meet) / dist(meet, p["B"])


def _line_euclid(c: Config) -> str:
    norm = _length(tuple(dec(x) for x in c["normal"]))
    return (f"The points A and B lie on opposite sides of a line ℓ, at distances {fmt(_line_side(c, 'A') / norm)} and "
            f"{fmt(-_line_side(c, 'B') / norm)} from it. The segment AB meets ℓ at P. Find AP/PB.")


def _line_vector(c: Config) -> str:
    p = dec_points(c)
    return (f"A line consists of the points with position vector x such that x · n = {fmt(dec(c['m']))}, where "
            f"{vec_text('n', tuple(dec(x) for x in c['normal']))}. The segment joining the points A and B with "
            f"position vectors {vec_text('a', p['A'])} and {vec_text('b', p['B'])} meets the line at P. Find AP/PB.")


LINE_SECTION_RATIO = Template(
    "line_section_ratio", "ratio", 3,
    draw=_line_draw,
    gold=_line_ratio,
    euclid=_line_euclid,
    coord=lambda c: (
        f"The segment joining {points_text(dec_points(c), 'AB')} meets the line "
        f"{linear_text([dec(x) for x in c['normal']], 'xy', dec(c['m']))} at P. Find AP/PB."
    ),
    vector=_line_vector,
)

# --- intersecting chords ---------------------------------------------------------------------


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
    return {"points": enc_points(place2d(rng, base)), "r": r}


def _chords_meet(c: Config):
    p = dec_points(c)
    return _intersection(p["A"], p["B"], p["C"], p["D"])


def _chords_euclid(c: Config) -> str:
    p, m = dec_points(c), _chords_meet(c)
    return (f"Chords AB and CD of a circle meet at P, with AP = {fmt(dist(p['A'], m))}, PB = {fmt(dist(m, p['B']))} "
            f"and CP = {fmt(dist(p['C'], m))}. Find CP/PD.")


def _chords_vector(c: Config) -> str:
    p = dec_points(c)
    rel = {n: sub(p[n], p["O"]) for n in "ABCD"}
    return (f"Relative to the centre of a circle, the points A, B, C and D on the circle have position vectors "
            f"{', '.join(vec_text(n.lower(), rel[n]) for n in 'ABC')} and {vec_text('d', rel['D'])}. "
            "The chords AB and CD meet at P. Find CP/PD.")


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

# --- two cevians meet ------------------------------------------------------------------------


def _cevians_gold(c: Config) -> sympy.Expr:
    p = dec_points(c)
    m = scale(sympy.Rational(1, 2), add(p["A"], p["C"]))
    meet = _intersection(p["A"], p["D"], p["B"], m)
    return dist(p["A"], meet) / dist(meet, p["D"])


_CEVIANS_Q = "M is the midpoint of AC, and the segments AD and BM meet at P. Find AP/PD."

CEVIANS_RATIO = Template(
    "cevians_ratio", "ratio", 4,
    figures=("ABC", "ABD", "ADC"),
    draw=_cevian_draw,
    gold=_cevians_gold,
    euclid=lambda c: (
        f"In triangle ABC, the point D on BC has BD = {fmt(dist(dec_points(c)['B'], dec_points(c)['D']))} and "
        f"DC = {fmt(dist(dec_points(c)['D'], dec_points(c)['C']))}. {_CEVIANS_Q}"
    ),
    coord=lambda c: (
        f"Triangle ABC has vertices {points_text(dec_points(c), 'ABC')}, and {points_text(dec_points(c), 'D')} "
        f"lies on BC. {_CEVIANS_Q}"
    ),
    vector=lambda c: f"{_in_plane(c, 'ABCD')} D lies on BC. {_CEVIANS_Q}",
)

# --- triangles sharing an angle --------------------------------------------------------------


def _shared_draw(rng: random.Random) -> Config:
    while True:
        u, v = _small_step(rng), _small_step(rng)
        if cross2(u, v) != 0:
            break
    k1, k2 = rng.randint(2, 5), rng.randint(2, 5)
    p1, p2 = rng.randint(1, k1 - 1), rng.randint(1, k2 - 1)
    base = {"A": ORIGIN, "B": scale(k1, u), "C": scale(k2, v), "D": scale(p1, u), "E": scale(p2, v)}
    return {"points": enc_points(place2d(rng, base))}


def _shared_euclid(c: Config) -> str:
    p = dec_points(c)
    d = {s: fmt(dist(p[s[0]], p[s[1]])) for s in ("AB", "AC", "AD", "AE")}
    return (f"In triangle ABC, AB = {d['AB']} and AC = {d['AC']}. The point D on AB has AD = {d['AD']}, and the point "
            f"E on AC has AE = {d['AE']}. Find the ratio of the area of triangle ADE to the area of triangle ABC.")


_SHARED_Q = "Find the ratio of the area of triangle ADE to the area of triangle ABC."

SHARED_ANGLE_RATIO = Template(
    "shared_angle_ratio", "ratio", 5,
    figures=("ABC", "ADE"),
    draw=_shared_draw,
    gold=lambda c: _area(c, "ADE") / _area(c, "ABC"),
    euclid=_shared_euclid,
    coord=lambda c: (
        f"Triangle ABC has vertices {points_text(dec_points(c), 'ABC')}; the points {points_text(dec_points(c), 'DE')} "
        f"lie on AB and AC. {_SHARED_Q}"
    ),
    vector=lambda c: f"{_in_plane(c, 'ABCDE')} D lies on AB and E on AC. {_SHARED_Q}",
)

TEMPLATES = (
    SECTION_RATIO, PARALLEL_AREA_RATIO, CEVIAN_AREA_RATIO, BISECTOR_RATIO, CIRCLES_RATIO,
    TRAPEZOID_DIAGONAL_RATIO, LINE_SECTION_RATIO, CHORDS_RATIO, CEVIANS_RATIO, SHARED_ANGLE_RATIO,
)
