"""The report: one self-contained HTML file, plus a PNG per figure, over the whole warehouse.

:func:`build_report` reads the metric views and the latest statistics of scope ``all`` (written
by :func:`tasks.analysis.stats.compute_stats`: the sweep's stats task, or ``refresh_stats=True`` first)
and writes ``<out_dir>/report.html`` and the figures; drawing the report writes nothing to the lake. The
HTML embeds every figure as a base64 PNG and its style inline: it loads nothing (no scripts, no
fonts, no URLs), so it opens offline and can be mailed as one file. A figure without data is
replaced by a note saying so; nothing in the report fails on an empty or tiny warehouse.

Sections: accuracy against key entities per task and model (the Lissard figure); heatmaps of
accuracy by n × variant (the symmetry figure); flip-pattern bars and the Invariance@k /
Consistency@k table with bootstrap intervals (GeoRepEval); the attractor scatter of predicted
against gold values; breaking points, variant gaps, McNemar tests, associativity calls; the
logistic regressions; the counts of errors and unparsable answers; and the cost per run and model.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  - after selecting the Agg backend
import polars as pl  # noqa: E402

from tasks.config import Config  # noqa: E402
from tasks.lake.lake import Lake  # noqa: E402
from tasks.report.data import connect, load  # noqa: E402
from tasks.report.figures import (  # noqa: E402
    accuracy_heatmaps,
    accuracy_lines,
    attractor_scatter,
    flip_bars,
    invariance_bars,
    outcome_bars,
    png_bytes,
)
from tasks.report.tables import html_table, interval_column, invariance_table  # noqa: E402


@dataclass
class Section:
    """One part of the report: a title, an optional figure (PNG bytes), tables and notes."""

    title: str
    slug: str
    notes: list[str] = field(default_factory=list)
    png: bytes | None = None
    tables: list[str] = field(default_factory=list)


def default_out_dir(cfg: Config) -> Path:
    """``<warehouse>/reports/<UTC timestamp>/``."""
    return cfg.warehouse_path / "reports" / f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}"


def _figure_section(title: str, slug: str, figure: plt.Figure | None, empty_note: str) -> Section:
    section = Section(title, slug)
    if figure is None:
        section.notes.append(empty_note)
    else:
        section.png = png_bytes(figure)
    return section


def sections(frames: dict[str, pl.DataFrame], threshold: float) -> list[Section]:
    """The report's sections, in order."""
    return [*accuracy_sections(frames, threshold), *heatmap_sections(frames["by_n"]), *invariance_sections(frames),
            attractor_section(frames), regression_section(frames["regression"]),
            outcome_section(frames["outcomes"]), cost_section(frames["cost"])]


def accuracy_sections(frames: dict[str, pl.DataFrame], threshold: float) -> list[Section]:
    """Accuracy against key entities, one section per suite (the Lissard figure); the last one
    also holds the breaking points and the lenient scores."""
    out: list[Section] = []
    by_bin = frames["by_bin"]
    suites = sorted(by_bin["suite"].unique().to_list())
    for suite in suites or ["(none)"]:
        out.append(_figure_section(
            f"Accuracy against key entities: {suite}", f"accuracy_{suite}",
            accuracy_lines(by_bin, suite) if suites else None, "No scored trials yet."))
    breaking = frames["breaking"]
    out[-1].tables.append(html_table(breaking, f"Breaking point: first bin with accuracy below {threshold}"))
    if not frames["lenient"].is_empty():
        out[-1].tables.append(html_table(frames["lenient"], "Lenient (order-insensitive) score next to exact match"))
    return out


def heatmap_sections(by_n: pl.DataFrame) -> list[Section]:
    """Accuracy by n × variant, one section per model and suite that has two variants or prompt
    styles to set side by side (the symmetry figure)."""
    out: list[Section] = []
    pairs = by_n.select("model", "suite").unique().sort("model", "suite", nulls_last=True).iter_rows()
    heatmaps = [(m, s, accuracy_heatmaps(by_n, m, s)) for m, s in pairs]
    heatmaps = [h for h in heatmaps if h[2] is not None]
    if not heatmaps:
        out.append(_figure_section("Accuracy by n × variant", "heatmap", None,
                                   "No task has two variants or prompt styles with scored trials."))
    for model, suite, figure in heatmaps:
        out.append(_figure_section(f"Accuracy by n × variant: {model} on {suite}",
                                   f"heatmap_{model}_{suite}", figure, ""))
    return out


def invariance_sections(frames: dict[str, pl.DataFrame]) -> list[Section]:
    """The flip patterns, then Invariance@k and Consistency@k with their intervals, the variant
    gaps and the McNemar tests (GeoRepEval)."""
    out: list[Section] = []
    table = invariance_table(frames["invariance"], frames["intervals"])
    section = _figure_section("Flip patterns", "flip_patterns", flip_bars(frames["flips"]),
                              "No family with two to four variants has a complete set of scored answers.")
    out.append(section)
    section = _figure_section("Invariance@k and Consistency@k", "invariance",
                              invariance_bars(table) if not table.is_empty() else None,
                              "No complete family yet (every variant scored).")
    if not table.is_empty():
        shown = table.with_columns(
            pl.col("variants").list.join(", "),
            interval_column("Invariance@k [95% CI]", table, "invariance", "invariance_lo", "invariance_hi"),
            interval_column("Consistency@k [95% CI]", table, "consistency", "consistency_lo", "consistency_hi"),
        ).select("model", "suite", "task", "category", "prompt_style", "k", "variants", "n_complete", "n_excluded",
                 "n_families", "Invariance@k [95% CI]", "Consistency@k [95% CI]", "n_scored", "n_wrong", "n_unparsable",
                 "n_truncated", "n_error")
        section.tables.append(html_table(shown, "Only complete families count; n_excluded lacked a scored answer on some variant"))
    gaps = frames["intervals"].filter(pl.col("metric") == "gap")
    if not gaps.is_empty():
        gaps = gaps.with_columns(interval_column("gap", gaps, "estimate", "ci_lo", "ci_hi")).select(
            "model", "suite", "task", "prompt_style", "variant", "variant_b", "estimate_a", "estimate_b", "gap",
            "n_families", "n_scored", "n_wrong", "n_unparsable", "n_truncated", "n_error")
        section.tables.append(html_table(gaps, "Accuracy gap between variants (variant − variant_b) with family bootstrap 95% intervals"))
    section.tables.append(html_table(frames["mcnemar"], "McNemar tests between variants (exact, Holm-adjusted per task)"))
    section.tables.append(html_table(frames["model_pairs"], "McNemar tests between models on the same trials"))
    out.append(section)
    return out


def attractor_section(frames: dict[str, pl.DataFrame]) -> Section:
    """Predicted against gold values (the attractor scatter), the attractors per gold value and
    the associativity calls."""
    figure, off_scale = attractor_scatter(frames["attractor_counts"])
    section = _figure_section("Attractors: predicted against gold", "attractors", figure,
                              "No parsed integer answers yet.")
    if off_scale:
        section.notes.append(f"{off_scale} (gold, predicted) points beyond ten times the largest gold are not drawn.")
    section.tables.append(html_table(frames["attractors"], "Per gold value: most frequent wrong answer and the shares of 50 and 100"))
    if not frames["associativity"].is_empty():
        section.tables.append(html_table(frames["associativity"], "Associativity: accuracy of each call, of the item, and of the closure baseline"))
    return section


def regression_section(regression: pl.DataFrame) -> Section:
    """The logistic regressions (per model, pooled, per task) and the reasons of skipped fits."""
    section = Section("Logistic regression: correct ~ C(variant) + n_tokens + symbol_density + n_numbers + C(task)", "regression")
    if regression.is_empty():
        section.notes.append("No regression computed yet.")
    else:
        section.tables.append(html_table(regression.select(
            "suite", "model", "task", "fit", "term", "coef", "std_err", "z", "p_value", "ci_lo", "ci_hi", "n", "n_correct",
            "n_unparsable", "n_truncated", "n_error", "reference_variant", "reference_model", "reference_task", "dropped", "status",
            "reason"),
            "Per model and pooled with model fixed effects, tasks pooled with task fixed effects, and per task; "
            "skipped fits give their reason"))
    return section


def outcome_section(outcomes: pl.DataFrame) -> Section:
    """The counts of errors and unparsable answers per model, suite and task."""
    section = _figure_section("Errors and unparsable answers", "outcomes", outcome_bars(outcomes),
                              "No scored trials yet.")
    section.tables.append(html_table(outcomes, "Counts per model, suite and task"))
    return section


def cost_section(cost: pl.DataFrame) -> Section:
    """Tokens and USD per run and model (view cost_by_run); an unknown price stays empty, never 0."""
    section = Section("Cost", "cost")
    if cost.is_empty():
        section.notes.append("No responses yet.")
        return section
    priced = cost["cost_usd"].drop_nulls()
    section.notes.append(f"Total over {cost['run_id'].drop_nulls().n_unique()} run(s): "
                         + ("no priced response" if priced.is_empty() else f"{priced.sum():.6f} USD")
                         + f"; {int(cost['n_unpriced'].sum())} response(s) without a known price.")
    section.tables.append(html_table(cost, "Per run and model: what the run paid for (ledger answers cost nothing)"))
    return section


_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
img { max-width: 100%; border: 1px solid #eee; }
table { border-collapse: collapse; font-size: 0.8em; margin: 0.8em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
th { background: #f3f3f3; } caption { text-align: left; font-weight: bold; padding: 4px 0; }
.scroll { overflow-x: auto; } .note { color: #666; font-style: italic; }
"""


def slugify(text: str) -> str:
    """A file-name-safe form of ``text``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "figure"


def render_html(parts: list[Section], meta: dict[str, str]) -> str:
    """The whole self-contained page."""
    toc = "".join(f"<li><a href='#{html.escape(p.slug)}'>{html.escape(p.title)}</a></li>" for p in parts)
    body = []
    for p in parts:
        body.append(f"<h2 id='{html.escape(p.slug)}'>{html.escape(p.title)}</h2>")
        body += [f"<p class='note'>{html.escape(n)}</p>" for n in p.notes]
        if p.png:
            data = base64.b64encode(p.png).decode("ascii")
            body.append(f"<img alt='{html.escape(p.title)}' src='data:image/png;base64,{data}'>")
        body += p.tables
    info = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in meta.items())
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>invarbench report</title>"
            f"<style>{_STYLE}</style></head><body><h1>invarbench report</h1><ul>{info}</ul>"
            f"<h2>Contents</h2><ol>{toc}</ol>{''.join(body)}</body></html>")


def bootstrap_meta(intervals: pl.DataFrame) -> str:
    """The report's line on the bootstrap: resamples, seed and computation of the intervals shown."""
    if intervals.is_empty():
        return "no bootstrap intervals stored yet (a sweep with report = true, or `invarbench report`, computes them)"
    first = intervals.row(0, named=True)
    return f"{first['resamples']} family resamples, seed {first['seed']}, computation {first['computation_id']}"


def build_report(cfg: Config, out_dir: Path | None = None, resamples: int = 1000,
                 progress: Callable[[str], None] | None = None, refresh_stats: bool = False) -> Path:
    """Write ``report.html`` and one PNG per figure; returns the HTML path.

    ``out_dir`` defaults to ``<warehouse>/reports/<timestamp>/``. With ``refresh_stats`` the
    statistics are computed first (:func:`tasks.analysis.stats.compute_stats`, bootstrap with
    ``cfg.sweep.seed`` and ``resamples``; the one write to the lake) unless the latest stored
    ones are what that would compute (:func:`tasks.analysis.stats.stored_computation`: same settings,
    nothing they read changed since); otherwise the report shows the latest ones stored. Breaking points use ``cfg.sweep.breaking_threshold``.
    """
    out = Path(out_dir) if out_dir else default_out_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    lake = Lake.of(cfg)
    threshold = cfg.sweep.breaking_threshold
    if refresh_stats:
        from tasks.analysis.stats import (  # the report module itself only reads
            compute_stats,
            stored_computation,
        )

        current = stored_computation(lake, resamples=resamples, seed=cfg.sweep.seed)
        if progress:
            progress(f"statistics are current (computation {current})" if current else "computing statistics")
        if not current:
            compute_stats(lake, resamples=resamples, seed=cfg.sweep.seed)
    con = connect(lake)  # the lake as of one snapshot, for every table of the report
    try:
        frames = load(con, threshold)
    finally:
        con.close()
    if progress:
        progress("drawing figures")
    parts = sections(frames, threshold)
    for p in parts:
        if p.png:
            (out / f"{slugify(p.slug)}.png").write_bytes(p.png)
    meta = {
        "generated (UTC)": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M:%S}",
        "warehouse": str(cfg.warehouse_path),
        "scope": "every stored score (latest parser and scorer versions)",
        "bootstrap": bootstrap_meta(frames["intervals"]),
    }
    target = out / "report.html"
    tmp = out / ".report.html.tmp"
    tmp.write_text(render_html(parts, meta), encoding="utf-8")
    tmp.replace(target)
    return target
