"""A GeoRepEval-shaped set end to end: ``import-families``, then ``sweep --dataset`` against a
loopback OpenAI-compatible server that answers each representation in a different form — more
digits, exact surds, fractions, degrees — or wrong on purpose. Accuracy, Invariance@3,
Consistency@3 and the flip patterns are checked against counts worked out by hand below.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import TEST_CLAIM_SETTLE_S, run_cli, write_config
from fakes import FakeProvider, FakeServer, last_user
from tasks.lake.lake import Lake
from tasks.lake.views import query

SHARED = "In triangle ABC, AB = 2, BC = 4 and angle ABC is a right angle. Find the length AC."

# id, category, (euclid, coord, vector) texts, gold as published (rounded decimals), and the reply
# to each representation with whether it is correct under rule 2.
FAMILIES = [
    ("g1", "angle", ("A cube has edge 1. Find the angle between a space diagonal and an edge adjacent to it, in degrees.",
                     "Find the angle at O between (1, 1, 1) and (1, 0, 0), in degrees.",
                     "Find the angle between u = (1, 1, 1) and v = (1, 0, 0), in degrees."), "54.74",
     (("Answer: 54.7356", True), ("Answer: 54.74°", True), ("Answer: 54.73", False))),  # CCW, not consistent
    ("g2", "length", ("A rectangle has sides 1 and 3. Find its diagonal.",
                      "Find the distance from (0, 0) to (1, 3).",
                      "Find |w| for w = (1, 3)."), "3.162",
     (("Answer: sqrt(10)", True), ("Answer: 3.16", True), ("Answer: \\sqrt{10}", True))),  # CCC
    ("g3", "length", ("An equilateral triangle has side 20. Find its height.",
                      "Find the distance from (10, 0) to (10, 10*sqrt(3)) where the triangle is (0, 0), (20, 0), (10, 17.32).",
                      "Find |h| for h = (0, 10*sqrt(3))."), "17.32",
     (("Answer: 17.4", False), ("Answer: 10√3", True), ("Answer: 17.3205", True))),  # WCC
    ("g4", "ratio", ("Segment PQ is divided by R with PR = 6 and RQ = 4. Find PR/RQ.",
                     "P = (0, 0), R = (6, 0), Q = (10, 0). Find PR/RQ.",
                     "Vectors PR = (6, 0) and RQ = (4, 0). Find |PR|/|RQ|."), "1.5",
     (("Answer: 3/2", True), ("Answer: 1.50", True), ("Answer: \\frac{3}{2}", True))),  # CCC
    ("g5", "length", (SHARED, "A = (0, 2), B = (0, 0), C = (4, 0). Find |AC|.", SHARED), "4.472",
     (("Answer: 2√5", True), ("Answer: 4.47", True), ("Answer: 2√5", True))),  # CCC; euclid and vector share wording
    ("g6", "length", ("A square has side 2. Find its diagonal.",
                      "Find the distance from (0, 0) to (2, 2).",
                      "Find |d| for d = (2, 2)."), "2.828",
     (("Answer: 3", False), ("Answer: 3.0", False), ("Answer: 6/2", False))),  # WWW, consistent (one wrong value)
    ("g7", "ratio", ("Find the cosine of an angle of thirty degrees.",
                     "Find the x-coordinate of the point at thirty degrees on the unit circle.",
                     "Find u . e for a unit vector u at thirty degrees to the unit vector e."), "0.866",
     (("Answer: 0.87", False), ("Answer: sqrt(3)/2", True), ("Answer: 0.5", False))),  # WCW
]
VARIANTS = ("euclid", "coord", "vector")


def reply(body: dict) -> str:
    """The designed reply to whichever problem the prompt states."""
    prompt = last_user(body)
    for _, _, texts, _, replies in FAMILIES:
        for text, (answer, _) in zip(texts, replies):
            if prompt.startswith(f"{text}\n\n"):  # the direct style states the problem first
                return f"Working through it.\n{answer}"
    raise AssertionError(f"unexpected prompt: {prompt!r}")


def test_georepeval_shaped_set_round_trip(tmp_path):
    source = tmp_path / "georep.json"
    source.write_text(json.dumps([
        {"id": fid, "category": cat, "euclid": texts[0], "coord": texts[1], "vector": texts[2], "answer": gold}
        for fid, cat, texts, gold, _ in FAMILIES]), encoding="utf-8")
    warehouse = tmp_path / "wh"
    imported = run_cli("import-families", str(source), "--config",
                       str(write_config(tmp_path / "import.toml", {"warehouse": {"path": str(warehouse)}})))
    assert imported.returncode == 0, imported.stderr
    dataset = re.search(r"as dataset (\w+)", imported.stdout).group(1)

    state = FakeProvider(responder=reply)
    with FakeServer(state) as server:
        cfg = write_config(tmp_path / "run.toml", {
            "warehouse": {"path": str(warehouse)},
            "sweep": {"models": ["fake"], "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S},
            'models."fake"': {"model": "openai/fake", "api_base": server.api_base, "retries": 0},
            "suites": {},  # nothing but the dataset runs
        })
        swept = run_cli("sweep", "--dataset", dataset, "--config", str(cfg))
    assert swept.returncode == 0, swept.stderr
    assert len(state.seen) == 3 * len(FAMILIES) - 1  # the shared wording is one request

    con = Lake(str(warehouse / "lake")).connect()
    try:
        scored = query(con, """SELECT json_extract_string(params, '$.source_id') AS id, variant, status
                               FROM trial_scores""")
        accuracy = {r["variant"]: r["accuracy"] for r in query(
            con, "SELECT variant, sum(n_correct) / sum(n_scored) AS accuracy FROM accuracy_by_bin GROUP BY variant")}
        # the suite pooled over its categories, as GeoRepEval reports one row per model
        [invariance] = query(con, "SELECT * FROM invariance_by_suite")
        flips = {r["pattern"]: r["n"] for r in query(con, "SELECT pattern, n FROM flip_patterns_by_suite")}
    finally:
        con.close()

    expected = {(fid, v): ok for fid, _, _, _, replies in FAMILIES for v, (_, ok) in zip(VARIANTS, replies)}
    assert {(r["id"], r["variant"]): r["status"] == "correct" for r in scored} == expected
    assert all(r["status"] in ("correct", "wrong") for r in scored)
    # by hand: euclid g1 g2 g4 g5; coord all but g6; vector g2 g3 g4 g5
    assert accuracy == {"euclid": pytest.approx(4 / 7), "coord": pytest.approx(6 / 7), "vector": pytest.approx(4 / 7)}
    # no family is lost to the shared wording: all seven are complete
    assert (invariance["k"], invariance["n_units"], invariance["n_complete"]) == (3, 7, 7)
    assert invariance["invariance_at_k"] == pytest.approx(3 / 7)  # g2, g4, g5
    assert invariance["consistency_at_k"] == pytest.approx(4 / 7)  # g2, g4, g5 and g6 (3 = 3.0 = 6/2)
    assert flips == {"CCC": 3, "CCW": 1, "CWC": 0, "WCC": 1, "CWW": 0, "WCW": 1, "WWC": 0, "WWW": 1}
