"""The report: one self-contained HTML file that loads nothing from the network, its PNGs, the
CLI command, and (when Chromium is installed) a real headless browser rendering the figures."""

from __future__ import annotations

import base64
import random
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import write_config
from flows.cli import app
from lake_fixtures import LakeBuilder, status_of
from tasks.config import load_config
from tasks.lake.refresh import refresh
from tasks.report.data import (
    CURRENT_SNAPSHOT,
    QUERIES,
    SNAPSHOT,
    connect,
    load,
)
from tasks.report.html import build_report

CHROMIUM = Path("/usr/bin/chromium")


def rich_lake(root: Path) -> LakeBuilder:
    """Data for every section: Lissard-style bins, symmetry placements and attractors, geometry flips."""
    rng = random.Random(1)
    lake = LakeBuilder(root)
    for model, skill in (("m1", 0.8), ("m2", 0.5)):
        for lo in (1, 10, 20, 30):
            for i in range(6):
                item = lake.item(f"d{lo}-{i}", suite="lissard", task="dyck", prompt_style="few_shot",
                                 bin=f"{lo}-{lo + 9}", bin_lo=lo, bin_hi=lo + 9, key_entities=lo + i,
                                 answer_type="text", n_tokens=20 + lo + i, n_numbers=i % 3,
                                 symbol_density=0.1 + 0.01 * ((3 * i + lo) % 7))
                ok = rng.random() < skill * (1 - lo / 45)
                lake.trial(item, model, status_of(ok), ">" if ok else "<", answer_type="text")
        for n in (5, 15, 45, 55):
            for placement in ("end", "begin", "middle", "random"):
                item = lake.item(f"id{n}", placement, task="identity", category="integers", key_entities=n,
                                 gold=str(n), n_tokens=n + 3, n_numbers=n, symbol_density=0.4 + 0.01 * len(placement))
                ok = rng.random() < skill
                lake.trial(item, model, status_of(ok), str(n) if ok else rng.choice(["50", str(n + 1)]))
        for f in range(8):
            for variant in ("euclid", "coord", "vector"):
                item = lake.item(f"g{f}", variant, suite="geometry", task="length", category="length")
                ok = rng.random() < skill
                lake.trial(item, model, status_of(ok), "5" if ok else "4")
    lake.trial(lake.item("errors"), "m1", "error")
    lake.trial(lake.item("unparsed"), "m2", "unparsable")
    return lake.flush()


def config_for(root: Path) -> Path:
    return write_config(root / "invarbench.toml", {"warehouse": {"path": str(root)}, "sweep": {"breaking_threshold": 0.6}})


def embedded_images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """One report over the rich lake, shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("report")
    rich_lake(root)
    return build_report(load_config(config_for(root)), root / "out", resamples=50, refresh_stats=True)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_report_is_self_contained_with_its_pngs(built):
    page = built.read_text(encoding="utf-8")
    pngs = sorted(built.parent.glob("*.png"))
    names = {p.stem for p in pngs}
    assert {"accuracy_lissard", "flip_patterns", "invariance", "attractors", "outcomes"} <= names
    assert any(n.startswith("heatmap_") for n in names)
    images = embedded_images(page)
    assert len(images) == len(pngs) and set(images) == {p.read_bytes() for p in pngs}
    assert all(img.startswith(b"\x89PNG") for img in images)
    # nothing is loaded from anywhere: no scripts, stylesheets, fonts or remote sources
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"<script|<link|@import|url\(", page, re.I)
    for heading in ("Invariance@k and Consistency@k", "Breaking point", "Logistic regression", "McNemar",
                    "Errors and unparsable answers", "share_50", "share_100"):
        assert heading.lower() in page.lower(), heading
    assert "0.6" in page  # the configured breaking threshold


def test_report_on_an_empty_warehouse_notes_the_missing_figures(tmp_path):
    path = build_report(load_config(config_for(tmp_path)), tmp_path / "out", resamples=10, refresh_stats=True)
    page = path.read_text(encoding="utf-8")
    assert "No scored trials yet." in page
    assert embedded_images(page) == [] and list((tmp_path / "out").glob("*.png")) == []


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_report_command_prints_the_html_path(tmp_path):
    rich_lake(tmp_path)
    result = CliRunner().invoke(app, ["report", "--out", str(tmp_path / "cli"), "--config", str(config_for(tmp_path))])
    assert result.exit_code == 0, result.output
    assert str(tmp_path / "cli" / "report.html") in result.output
    assert (tmp_path / "cli" / "report.html").exists()


def _rows(frame) -> list[str]:
    return sorted(repr(row) for row in frame.iter_rows())


def _temporary(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}


def test_report_frames_give_the_views_rows_taking_the_shared_views_once(tmp_path):
    lake = rich_lake(tmp_path)  # never refreshed: the views derive everything from the raw lake
    con = connect(lake.lake)
    try:
        frames = load(con, 0.6)
        plain = lake.lake.connect()
        try:
            # the same rows as the views give on a connection without the copies
            for name, view in (("by_bin", "accuracy_by_task_bin"), ("flips", "flip_patterns"),
                               ("invariance", "invariance"), ("attractor_counts", "attractor_counts")):
                assert frames[name].height > 0, name
                assert _rows(frames[name]) == _rows(plain.sql(f"SELECT * FROM {view}").pl()), name
            mcnemar = plain.sql("SELECT * FROM mcnemar_pairs WHERE n_pairs > 0").pl()
            assert frames["mcnemar"].height > 0 and _rows(frames["mcnemar"]) == _rows(mcnemar)
        finally:
            plain.close()
        assert set(SNAPSHOT) <= _temporary(con)
    finally:
        con.close()


def test_report_on_a_refreshed_lake_reads_one_snapshot_copying_only_paired_tests(tmp_path):
    lake = rich_lake(tmp_path)
    refresh(lake.lake)  # the materialised tables current: the marts read stored tables
    con, plain = connect(lake.lake), lake.lake.connect()
    try:
        frames = load(con, 0.6)
        for name, view in (("flips", "flip_patterns"), ("invariance", "invariance"), ("mcnemar", "mcnemar_pairs"),
                           ("model_pairs", "model_pairs"), ("by_bin", "accuracy_by_task_bin")):
            assert frames[name].height > 0, name
            assert _rows(frames[name]) == _rows(plain.sql(f"SELECT * FROM ({QUERIES[name]})").pl()), name
        assert _temporary(con) == set(CURRENT_SNAPSHOT)
        # A trial written after the report's connection was opened: its views do not see it (not
        # even those over the raw lake), a new connection does.
        seen = "SELECT sum(n_responses) FROM cost_by_run"
        before = con.execute(seen).fetchone()[0]
        lake.trial(lake.item("late"), "m1", "correct", "5")
        lake.flush()
        assert con.execute(seen).fetchone()[0] == before
        assert load(con, 0.6)["cost"]["n_responses"].sum() == before
        again = connect(lake.lake)
        try:
            assert again.execute(seen).fetchone()[0] == before + 1
        finally:
            again.close()
    finally:
        con.close()
        plain.close()


@pytest.mark.slow  # a real browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is not installed (apt-get install -y chromium)")
def test_report_renders_its_figures_in_headless_chromium(built, tmp_path):
    shot = tmp_path / "shot.png"
    profile = tmp_path / "profile"
    subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1280,2000", built.as_uri()],
        check=True, capture_output=True, timeout=120)
    pixels = mpimg.imread(shot)
    colours = np.unique((pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    # Text alone renders in a few hundred grey levels; plotted figures add thousands of colours.
    assert len(colours) > 1000, len(colours)
    shutil.rmtree(profile, ignore_errors=True)
