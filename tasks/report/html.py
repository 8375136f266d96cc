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
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  - after selecting the Agg backend
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from tasks.config import Config  # noqa: E402
from tasks.lake.store import connect  # noqa: E402

MAX_TABLE_ROWS = 200
MAX_PANELS = 16
COLORS = plt.get_cmap("tab10").colors


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


# ---------------------------------------------------------------------------------------------
# Rendering helpers


def png_bytes(fig: plt.Figure) -> bytes:
    """The figure as PNG bytes (the figure is closed)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def _missing(value: Any) -> bool:
    # A NULL of the view, or a NaN of a float computed from one (load() turns NaN into NULL).
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple, np.ndarray)):
        return ", ".join(str(v) for v in value)
    if _missing(value):
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return str(value)


def _is_count(column: str) -> bool:
    return column.startswith("n_") or column in ("n", "b", "c", "k", "bin_lo", "gold_value")


def html_table(frame: pl.DataFrame, caption: str = "") -> str:
    """An HTML table of ``frame`` (at most MAX_TABLE_ROWS rows; the rest is counted).

    Count columns (``n_*``, ``b``, ``c``, ``k``) print as integers even where a SQL sum made
    them floats.
    """
    if frame.is_empty():
        return f"<p class='note'>{html.escape(caption)}: no rows.</p>" if caption else ""
    shown = frame.head(MAX_TABLE_ROWS)
    shown = shown.with_columns(pl.col(c).cast(pl.Int64, strict=False) for c in shown.columns
                               if _is_count(c) and shown.schema[c].is_numeric())
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
        for row in shown.iter_rows()
    )
    more = (f"<p class='note'>{frame.height - MAX_TABLE_ROWS} more rows not shown; query the view "
            "for all of them.</p>" if frame.height > MAX_TABLE_ROWS else "")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<div class='scroll'><table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}"


def interval(estimate: Any, lo: Any, hi: Any) -> str:
    """``0.750 [0.600, 0.880]``, or blank when there is no estimate."""
    if _missing(estimate):
        return ""
    if _missing(lo):
        return f"{estimate:.3f}"
    return f"{estimate:.3f} [{lo:.3f}, {hi:.3f}]"


def _intervals(name: str, frame: pl.DataFrame, estimate: str, lo: str, hi: str) -> pl.Series:
    """Column ``name``: :func:`interval` of each row's ``estimate``, ``lo`` and ``hi``."""
    return pl.Series(name, [interval(*v) for v in zip(frame[estimate], frame[lo], frame[hi])], dtype=pl.String)


def _grid(n: int, width: float = 4.2, height: float = 3.2) -> tuple[plt.Figure, list[plt.Axes]]:
    cols = min(n, 4)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained")
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _label(*parts: Any) -> str:
    return " · ".join(str(p) for p in parts if p not in (None, "", "none"))


# ---------------------------------------------------------------------------------------------
# Figures: each takes a frame and returns a figure, or None when there is nothing to draw.
# Frames are polars; matplotlib gets lists and numpy arrays (nulls as NaN) at each call.


def _is(column: str, value: Any) -> pl.Expr:
    # NULL equals NULL here: a group without a category is still one group.
    return pl.col(column).eq_missing(value)


def _floats(series: pl.Series) -> np.ndarray:
    return series.cast(pl.Float64).to_numpy()


def accuracy_lines(frame: pl.DataFrame, suite: str) -> plt.Figure | None:
    """Accuracy against key-entity bins, one panel per task, one line per model (Wilson bars)."""
    data = frame.filter((pl.col("suite") == suite) & pl.col("accuracy").is_not_null())
    tasks = sorted(data["task"].unique().to_list())[:MAX_PANELS]
    if not tasks:
        return None
    models = sorted(data["model"].unique().to_list())
    fig, axes = _grid(len(tasks))
    for ax, task in zip(axes, tasks):
        part = data.filter(pl.col("task") == task)
        bins = part.unique("bin", keep="first", maintain_order=True).sort("bin_lo", maintain_order=True)["bin"].to_list()
        position = {b: i for i, b in enumerate(bins)}
        for j, model in enumerate(models):
            line = part.filter(pl.col("model") == model).sort("bin_lo", maintain_order=True)
            if line.is_empty():
                continue
            x = [position[b] for b in line["bin"]]
            accuracy = _floats(line["accuracy"])
            err = np.vstack([accuracy - _floats(line["wilson_lo"]), _floats(line["wilson_hi"]) - accuracy])
            ax.errorbar(x, accuracy, yerr=np.clip(err, 0, None), marker="o", capsize=3,
                        color=COLORS[j % len(COLORS)], label=model)
        ax.set_xticks(range(len(bins)), bins, rotation=30)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(task)
        ax.set_xlabel("key entities (bin)")
        ax.set_ylabel("accuracy")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{suite}: accuracy against key entities (95% Wilson intervals)")
    return fig


def accuracy_heatmaps(frame: pl.DataFrame, model: str, suite: str) -> plt.Figure | None:
    """Accuracy by n (columns) × variant, prompt style and category (rows), one panel per task
    with at least two rows."""
    data = frame.filter((pl.col("model") == model) & (pl.col("suite") == suite) & pl.col("accuracy").is_not_null())
    rows_per_task = dict(data.select("task", "variant", "prompt_style", "category").unique()
                         .group_by("task").len().iter_rows())
    tasks = [t for t in sorted(data["task"].unique().to_list()) if rows_per_task.get(t, 0) >= 2][:MAX_PANELS]
    if not tasks:
        return None
    fig, axes = _grid(len(tasks), width=5.5, height=3.6)
    image = None
    for ax, task in zip(axes, tasks):
        part = data.filter((pl.col("task") == task) & pl.col("key_entities").is_not_null())
        labels = [_label(v, s, c) or "none" for v, s, c in
                  zip(part["variant"], part["prompt_style"], part["category"])]
        cells = (part.select("key_entities", "accuracy").with_columns(row=pl.Series(labels, dtype=pl.String))
                 .group_by("row", "key_entities").agg(pl.col("accuracy").mean()))
        rows = sorted(cells["row"].unique().to_list())
        columns = sorted(cells["key_entities"].unique().to_list())
        grid = np.full((len(rows), len(columns)), np.nan)
        for row, n, accuracy in cells.iter_rows():
            grid[rows.index(row), columns.index(n)] = accuracy
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(columns)), [str(c) for c in columns], rotation=90, fontsize=7)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.set_xlabel("n (key entities)")
        ax.set_title(task)
    fig.colorbar(image, ax=axes, shrink=0.8, label="accuracy")
    fig.suptitle(f"{model} on {suite}: accuracy by n × variant")
    return fig


def flip_bars(frame: pl.DataFrame) -> plt.Figure | None:
    """Share of each flip pattern per model, one panel per (suite, task, category, prompt style)."""
    keys = ["suite", "task", "category", "prompt_style"]
    data = frame.filter((pl.col("k") >= 2) & (pl.col("k") <= 4))
    groups = data.select(keys).unique().sort(keys, nulls_last=True).head(MAX_PANELS)
    if groups.is_empty():
        return None
    fig, axes = _grid(groups.height, width=5.0, height=3.4)
    for ax, g in zip(axes, groups.iter_rows(named=True)):
        part = data.filter(*(_is(k, g[k]) for k in keys))
        patterns = part.sort("n_not_correct", "pattern", nulls_last=True, maintain_order=True)["pattern"] \
            .unique(maintain_order=True).to_list()
        models = sorted(part["model"].unique().to_list())
        width = 0.8 / len(models)
        for j, model in enumerate(models):
            share_of = dict(part.filter(pl.col("model") == model).select("pattern", "share").iter_rows())
            shares = [0.0 if _missing(share_of.get(p)) else share_of[p] for p in patterns]
            ax.bar(np.arange(len(patterns)) + j * width, shares, width, label=model, color=COLORS[j % len(COLORS)])
        ax.set_xticks(np.arange(len(patterns)) + 0.4 - width / 2, patterns, rotation=90, fontsize=7)
        ax.set_ylim(0, 1)
        variants = part["variants"][0]
        ax.set_title(f"{_label(g['suite'], g['task'], g['category'], g['prompt_style'])}\n"
                     f"order: {', '.join(variants)}", fontsize=8)
        ax.set_ylabel("share of complete families")
    axes[0].legend(fontsize=7)
    fig.suptitle("Flip patterns (C correct, W not correct, one letter per variant in order)")
    return fig


def invariance_bars(frame: pl.DataFrame) -> plt.Figure | None:
    """Invariance@k and Consistency@k with bootstrap intervals, one bar pair per group and model."""
    data = frame.filter(pl.col("invariance").is_not_null()).head(40)
    if data.is_empty():
        return None
    labels = [_label(r["model"], r["suite"], r["task"], r["category"], r["prompt_style"], f"k={r['k']}")
              for r in data.iter_rows(named=True)]
    y = np.arange(data.height)
    fig, ax = plt.subplots(figsize=(9, 0.45 * data.height + 1.5), layout="constrained")
    for offset, metric, color in ((-0.2, "invariance", COLORS[0]), (0.2, "consistency", COLORS[1])):
        est = _floats(data[metric])
        lo = _floats(data[f"{metric}_lo"])
        hi = _floats(data[f"{metric}_hi"])
        err = np.vstack([np.nan_to_num(est - lo), np.nan_to_num(hi - est)])
        ax.barh(y + offset, est, 0.4, xerr=np.clip(err, 0, None), capsize=3, color=color, label=f"{metric}@k")
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlim(0, 1.05)
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    ax.set_title("Invariance@k and Consistency@k (family bootstrap 95% intervals)")
    return fig


def attractor_scatter(frame: pl.DataFrame) -> tuple[plt.Figure | None, int]:
    """Predicted against gold values, point area by share, one panel per model and task.

    Returns the figure and the number of (gold, predicted) points left out as off-scale: a
    predicted value beyond ten times the largest gold of the panel, or beyond 64-bit integers.
    """
    keys = ["model", "suite", "task"]
    data = frame.filter(pl.col("gold_value").is_not_null()).with_columns(
        pl.col("gold_value", "predicted_value").cast(pl.Float64))
    panels = data.select(keys).unique().sort(keys, nulls_last=True).head(MAX_PANELS)
    if panels.is_empty():
        return None, 0
    fig, axes = _grid(panels.height)
    off_scale = 0
    for ax, p in zip(axes, panels.iter_rows(named=True)):
        part = data.filter(*(_is(k, p[k]) for k in keys))
        limit = 10 * max(1.0, part["gold_value"].abs().max())
        shown = part.filter(pl.col("predicted_value").abs() <= limit)
        off_scale += part.height - shown.height
        colors = [COLORS[2] if correct else COLORS[3] for correct in shown["is_gold"]]
        ax.scatter(_floats(shown["gold_value"]), _floats(shown["predicted_value"]),
                   s=20 + 200 * _floats(shown["share"]), c=colors, alpha=0.7)
        values = pl.concat([part["gold_value"], shown["predicted_value"]])
        lo, hi = min(values.min(), 0.0), max(values.max(), 1.0)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
        for attractor in (50, 100):
            if lo <= attractor <= hi:
                ax.axhline(attractor, color="grey", ls=":", lw=0.8)
        ax.set_title(_label(p["model"], p["task"]), fontsize=9)
        ax.set_xlabel("gold")
        ax.set_ylabel("predicted")
    fig.suptitle("Attractors: predicted against gold (green correct, red wrong; area ∝ share; dotted: 50, 100)")
    return fig, off_scale


def outcome_bars(frame: pl.DataFrame) -> plt.Figure | None:
    """Stacked counts of correct, wrong, unparsable, truncated and error per model and suite."""
    if frame.is_empty():
        return None
    columns = ("n_correct", "n_wrong", "n_unparsable", "n_truncated", "n_error")
    totals = frame.group_by("model", "suite").agg(pl.col(columns).sum()).sort("model", "suite", nulls_last=True)
    labels = [_label(m, s) for m, s in totals.select("model", "suite").iter_rows()]
    fig, ax = plt.subplots(figsize=(8, 0.5 * totals.height + 1.5), layout="constrained")
    left = np.zeros(totals.height)
    for column, color in zip(columns, (COLORS[2], COLORS[3], COLORS[1], COLORS[4], COLORS[7])):
        values = _floats(totals[column])
        ax.barh(labels, values, left=left, color=color, label=column.removeprefix("n_"))
        left += values
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    ax.set_xlabel("trials")
    ax.set_title("Outcomes per model and suite (errors are never counted as wrong)")
    return fig


# ---------------------------------------------------------------------------------------------
# Data

# The marts the report reads share intermediate views, and DuckDB derives a view again in every
# query that reads it: trial_scores sits under every metric, family_trials under the flip
# patterns, invariance and McNemar tests, paired_tests under both McNemar tables. At a million
# scored responses that repetition was most of the report's time (bench/PROFILE.md). So the
# report's own connection takes each of them once, in this order (each reads the ones before), as
# a temporary table of the same name: DuckDB looks names up in the temporary schema first, so
# every view above reads the snapshot. The definitions stay the views' own, and every table of
# one report sees the same state of the lake even while a sweep writes. The connection is the
# report's alone and is closed after load().
SNAPSHOT = ("items", "trial_scores", "family_trials", "paired_tests")


def snapshot_intermediates(con) -> None:
    """Materialise the shared views of :data:`SNAPSHOT` on ``con`` as same-named temporary tables
    (taken afresh when called again)."""
    for name in SNAPSHOT:  # an earlier snapshot would otherwise feed the new one
        con.execute(f"DROP TABLE IF EXISTS temp.{name}")
    for name in SNAPSHOT:
        con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM main.{name}")


def _frame(con, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
    frame = con.sql(sql, params=params or None).pl()
    # SQL sums of integers arrive as DECIMAL: numbers here, as every other count and measure.
    # A NaN stands for a missing value, as a NULL does.
    return frame.with_columns(pl.col(pl.Decimal).cast(pl.Float64)).with_columns(
        pl.col(pl.Float32, pl.Float64).fill_nan(None))


# Every frame the report draws from, and its query over the metric views (``breaking`` takes the
# breaking threshold as its parameter).
QUERIES = {
    "by_bin": "SELECT * FROM accuracy_by_task_bin",
    "by_n": "SELECT * FROM accuracy_by_n",
    "outcomes": "SELECT * FROM outcomes_by_task ORDER BY ALL",
    "flips": "SELECT * FROM flip_patterns",
    "invariance": "SELECT * FROM invariance",
    "intervals": "SELECT * FROM computed_bootstrap WHERE scope = 'all'",
    "attractor_counts": "SELECT * FROM attractor_counts",
    "attractors": """SELECT model, suite, task, category, prompt_style, gold, n_scored, n_correct,
                            n_wrong, n_unparsable, n_error, accuracy, top_wrong, top_wrong_share,
                            n_50, share_50, n_100, share_100
                     FROM attractors""",
    "breaking": "SELECT * FROM breaking_points(threshold := ?)",
    "mcnemar": "SELECT * FROM mcnemar_pairs WHERE n_pairs > 0 ORDER BY p_holm, p_value",
    "model_pairs": "SELECT * FROM model_pairs WHERE n_pairs > 0 ORDER BY p_holm, p_value",
    "associativity": "SELECT * FROM associativity_calls",
    "regression": "SELECT * FROM computed_regression WHERE scope = 'all'",
    "lenient": "SELECT * FROM lenient_accuracy_by_bin",
    "cost": """SELECT run_id, model, n_responses, n_ok, n_error, prompt_tokens, completion_tokens,
                      cost_usd, n_unpriced FROM cost_by_run ORDER BY last_at DESC, model""",
}


def load(con, threshold: float) -> dict[str, pl.DataFrame]:
    """Every frame of :data:`QUERIES`, read from the metric views."""
    snapshot_intermediates(con)
    return {name: _frame(con, sql, [threshold] if name == "breaking" else None) for name, sql in QUERIES.items()}


def invariance_table(invariance: pl.DataFrame, intervals: pl.DataFrame) -> pl.DataFrame:
    """The invariance view joined with the bootstrap intervals of Invariance@k and Consistency@k."""
    if invariance.is_empty():
        return pl.DataFrame()
    keys = ["model", "suite", "task", "category", "prompt_style", "k"]
    table = invariance.with_columns(variants_key=pl.col("variants").list.join(","))
    for metric in ("invariance", "consistency"):
        part = intervals.filter(pl.col("metric") == metric).select(
            *keys, pl.col("variant").alias("variants_key"), pl.col("estimate").alias(metric),
            pl.col("ci_lo").alias(f"{metric}_lo"), pl.col("ci_hi").alias(f"{metric}_hi"))
        table = table.join(part, on=keys + ["variants_key"], how="left", nulls_equal=True, maintain_order="left")
    return table


# ---------------------------------------------------------------------------------------------
# Sections


def _figure_section(title: str, slug: str, figure: plt.Figure | None, empty_note: str) -> Section:
    section = Section(title, slug)
    if figure is None:
        section.notes.append(empty_note)
    else:
        section.png = png_bytes(figure)
    return section


def sections(frames: dict[str, pl.DataFrame], threshold: float) -> list[Section]:
    """The report's sections, in order."""
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

    by_n = frames["by_n"]
    pairs = by_n.select("model", "suite").unique().sort("model", "suite", nulls_last=True).iter_rows()
    heatmaps = [(m, s, accuracy_heatmaps(by_n, m, s)) for m, s in pairs]
    heatmaps = [h for h in heatmaps if h[2] is not None]
    if not heatmaps:
        out.append(_figure_section("Accuracy by n × variant", "heatmap", None,
                                   "No task has two variants or prompt styles with scored trials."))
    for model, suite, figure in heatmaps:
        out.append(_figure_section(f"Accuracy by n × variant: {model} on {suite}",
                                   f"heatmap_{model}_{suite}", figure, ""))

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
            _intervals("Invariance@k [95% CI]", table, "invariance", "invariance_lo", "invariance_hi"),
            _intervals("Consistency@k [95% CI]", table, "consistency", "consistency_lo", "consistency_hi"),
        ).select("model", "suite", "task", "category", "prompt_style", "k", "variants", "n_complete", "n_excluded",
                 "n_families", "Invariance@k [95% CI]", "Consistency@k [95% CI]", "n_scored", "n_wrong", "n_unparsable",
                 "n_error")
        section.tables.append(html_table(shown, "Only complete families count; n_excluded lacked a scored answer on some variant"))
    gaps = frames["intervals"].filter(pl.col("metric") == "gap")
    if not gaps.is_empty():
        gaps = gaps.with_columns(_intervals("gap", gaps, "estimate", "ci_lo", "ci_hi")).select(
            "model", "suite", "task", "prompt_style", "variant", "variant_b", "estimate_a", "estimate_b", "gap",
            "n_families", "n_scored", "n_wrong", "n_unparsable", "n_error")
        section.tables.append(html_table(gaps, "Accuracy gap between variants (variant − variant_b) with family bootstrap 95% intervals"))
    section.tables.append(html_table(frames["mcnemar"], "McNemar tests between variants (exact, Holm-adjusted per task)"))
    section.tables.append(html_table(frames["model_pairs"], "McNemar tests between models on the same trials"))
    out.append(section)

    figure, off_scale = attractor_scatter(frames["attractor_counts"])
    section = _figure_section("Attractors: predicted against gold", "attractors", figure,
                              "No parsed integer answers yet.")
    if off_scale:
        section.notes.append(f"{off_scale} (gold, predicted) points beyond ten times the largest gold are not drawn.")
    section.tables.append(html_table(frames["attractors"], "Per gold value: most frequent wrong answer and the shares of 50 and 100"))
    if not frames["associativity"].is_empty():
        section.tables.append(html_table(frames["associativity"], "Associativity: accuracy of each call, of the item, and of the closure baseline"))
    out.append(section)

    regression = frames["regression"]
    section = Section("Logistic regression: correct ~ C(variant) + n_tokens + symbol_density + n_numbers + C(task)", "regression")
    if regression.is_empty():
        section.notes.append("No regression computed yet.")
    else:
        section.tables.append(html_table(regression.select(
            "suite", "model", "task", "fit", "term", "coef", "std_err", "z", "p_value", "ci_lo", "ci_hi", "n", "n_correct",
            "n_unparsable", "n_error", "reference_variant", "reference_model", "reference_task", "dropped", "status",
            "reason"),
            "Per model and pooled with model fixed effects, tasks pooled with task fixed effects, and per task; "
            "skipped fits give their reason"))
    out.append(section)

    section = _figure_section("Errors and unparsable answers", "outcomes", outcome_bars(frames["outcomes"]),
                              "No scored trials yet.")
    section.tables.append(html_table(frames["outcomes"], "Counts per model, suite and task"))
    out.append(section)
    out.append(cost_section(frames["cost"]))
    return out


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


# ---------------------------------------------------------------------------------------------
# HTML

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
    lake = cfg.lake_path
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
    con = connect(lake, " ".join([*SNAPSHOT, *QUERIES.values()]))  # only the views the report reads
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
