"""The ``refresh`` command: bring the lake's materialised views up to date (``tasks.lake.refresh``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from flows.cli.application import ConfigOpt, app, console, load
from flows.cli.progress_bars import progress_bars


@app.command()
def refresh(config: Optional[Path] = ConfigOpt,
            full: bool = typer.Option(False, "--full", help="rebuild every materialised table from the raw "
                                      "lake instead of taking in only what changed since the last refresh")) -> None:
    """Bring the materialised views (`latest_parses`, `trial_scores`, `score_history`, `family_trials`,
    `family_units`, `item_outcomes`, `family_unit_counts`, `unit_outcome_counts`, `question_outcome_counts`,
    `run_bin_counts`) up to date with what every sweep, rescore and import wrote since the last refresh; each of those runs
    ends with one, so this is for a run that ended early, or after `--full` is needed.

    One DuckLake transaction: an interrupted refresh leaves the previous state, and the next
    completes it. Until then the views read the raw lake: the answers are the same, only slower.
    """
    from tasks.lake.lake import Lake
    from tasks.lake.refresh import refresh as refresh_lake

    cfg = load(config, suites=False)
    with progress_bars():
        done = refresh_lake(Lake.of(cfg), full=full)
    what = "rebuilt" if done["full"] else f"{sum(done['keys'].values())} key(s) recomputed"
    console.print(f"refreshed to snapshot {done['snapshot']}: {what} in {done['seconds']:.1f} s", highlight=False)
    # where the time went: each table refreshed, with its slices (a rebuild) or keys recomputed
    counts, unit = (done["slices"], "slice(s)") if done["full"] else (done["keys"], "key(s)")
    for name, took in done.get("tables", {}).items():
        console.print(f"  {name:<24} {counts[name]:>10,} {unit:<8} {took['seconds']:8.1f} s "
                      f"({took['cpu_seconds']:.1f} s of CPU)", highlight=False)
