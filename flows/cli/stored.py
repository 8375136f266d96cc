"""The names a filter gives (``--run``, ``--model``, ``--suite``, ``sweep.datasets``), checked against
what the lake stores before any flow starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tasks.errors import ConfigError

if TYPE_CHECKING:  # the lake's modules load DuckDB and pyarrow: not for every command line
    from tasks.lake.lake import Lake


def lake_exists(lake: Lake) -> bool:
    """Whether anything was ever stored in ``lake`` (an object-store lake is assumed to exist)."""
    return lake.is_url or Path(lake.root).is_dir()


def check_stored(lake: Lake, option: str, values: list[str]) -> None:
    """Raise ConfigError naming the ``values`` of ``option`` the lake holds nothing of, before any
    flow starts. ``option`` is ``sweep.datasets``, ``--run``, ``--model`` or ``--suite``."""
    from flows.stages import check_datasets

    if not values:
        return
    if not lake_exists(lake):  # nothing is stored yet, and a read would create the lake's folders
        raise ConfigError(f"{option}: nothing is stored yet in {lake}, so no {', '.join(values)}")
    if option == "sweep.datasets":
        check_datasets(lake, values)
        return
    column, view, listing = STORED_NAMES[option]
    found = {r["name"] for r in lake.read(f"SELECT DISTINCT {column} AS name FROM {view} "
                                          f"WHERE {column} IN (SELECT unnest(?::VARCHAR[]))", [values])}
    missing = [v for v in values if v not in found]
    if missing:
        raise ConfigError(f"{option} {', '.join(missing)}: nothing stored by that name; see {listing}")


# option → (column, view, where to list the stored names) of the names a filter may give
STORED_NAMES = {
    "--run": ("run_id", "runs", "`invarbench runs`"),
    "--model": ("model", "requests", "`invarbench sql \"SELECT DISTINCT model FROM requests\"`"),
    "--suite": ("suite", "items", "`invarbench sql \"SELECT DISTINCT suite FROM items\"`"),
}
