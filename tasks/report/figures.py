"""The report's figures: each takes a frame read from the marts and returns a matplotlib figure,
or None when there is nothing to draw. Frames are polars; matplotlib gets lists and numpy arrays
(nulls as NaN) at each call.
"""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  - after selecting the Agg backend
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from tasks.report.tables import missing  # noqa: E402

MAX_PANELS = 16


COLORS = plt.get_cmap("tab10").colors


def png_bytes(fig: plt.Figure) -> bytes:
    """The figure as PNG bytes (the figure is closed)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


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
            shares = [0.0 if missing(share_of.get(p)) else share_of[p] for p in patterns]
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
    """Stacked counts of correct, wrong, unparsable and error per model and suite."""
    if frame.is_empty():
        return None
    columns = ("n_correct", "n_wrong", "n_unparsable", "n_error")
    totals = frame.group_by("model", "suite").agg(pl.col(columns).sum()).sort("model", "suite", nulls_last=True)
    labels = [_label(m, s) for m, s in totals.select("model", "suite").iter_rows()]
    fig, ax = plt.subplots(figsize=(8, 0.5 * totals.height + 1.5), layout="constrained")
    left = np.zeros(totals.height)
    for column, color in zip(columns, (COLORS[2], COLORS[3], COLORS[1], COLORS[7])):
        values = _floats(totals[column])
        ax.barh(labels, values, left=left, color=color, label=column.removeprefix("n_"))
        left += values
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    ax.set_xlabel("trials")
    ax.set_title("Outcomes per model and suite (errors are never counted as wrong)")
    return fig
