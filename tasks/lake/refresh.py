"""Bring the materialised views (``tasks.lake.materialised``) up to date: :func:`refresh`.

In the manner of dbt's incremental models. A refresh reads which rows of their source tables
changed since the snapshot of the last refresh (``ducklake_table_changes``, the mark being that
snapshot), derives from them the keys of each materialised view they touch (:data:`CHANGED_KEYS`),
and replaces the rows of those keys by what the view's definition from the raw lake
(``<name>_from_raw``) gives for them (reading only those keys' rows, :data:`SCOPES`), in load order, so a later view reads the earlier ones'
new rows. Everything, the mark included, is one DuckLake transaction: an interrupted refresh
leaves the previous state readable, and the next takes in what it missed. Without a usable mark
(never refreshed, their SQL changed, the mark's snapshot expired) it rebuilds every table, a slice
of keys at a time (:data:`ROWS_PER_SLICE`), so that its memory does not grow with the lake.
"""

from __future__ import annotations

import contextlib
import logging
import re
import resource
import sys
import threading
import time
from typing import Any, Iterator

import duckdb

from tasks.lake import ducklake, materialised
from tasks.lake.ducklake import ALIAS, current_snapshot
from tasks.lake.engine import connect
from tasks.lake.lake import Lake
from tasks.lake.materialised import MARK_TABLE, materialised_names
from tasks.lake.slices import same_key, sliced
from tasks.lake.sql import FROM_RAW, materialised_statements
from tasks.records import now_utc

log = logging.getLogger(__name__)

# The keys of each materialised view that the changed rows touch: SQL over ``changed_<table>``
# (the rows of a source table inserted or deleted since the mark), the raw views and
# ``keys_<view>``, another view's keys (each key set is computed once in a refresh, when first
# needed: deriving a family's keys scans every request and score). A key is recomputed whole, so a
# superset is harmless; a key left out would keep stale rows.
CHANGED_KEYS = {
    "latest_parses": "SELECT DISTINCT response_id FROM changed_parses",
    # a trial's scores, or its item (stored after it, or read again as another first row)
    "trial_scores": """
        SELECT trial_id FROM changed_scores
        UNION SELECT trial_id FROM raw_scores WHERE item_id IN (SELECT item_id FROM changed_items)""",
    "score_history": "SELECT * FROM keys_trial_scores",  # a trial's score versions, or its item
    # every trial of the family and model: a new score, an item, or a new parse of one of its responses
    "family_trials": """
        SELECT DISTINCT i.family_id, t.model
        FROM (SELECT item_id, model FROM changed_scores
              UNION SELECT item_id, model FROM raw_scores WHERE item_id IN (SELECT item_id FROM changed_items)
              UNION SELECT item_id, model FROM raw_requests
                    WHERE request_id IN (SELECT request_id FROM changed_parses)) t
        JOIN raw_items i USING (item_id)""",
    # a unit is within a family and model; a question (item and sample) within a family
    "family_units": "SELECT * FROM keys_family_trials",
    "item_outcomes": "SELECT DISTINCT family_id FROM keys_family_trials",
    # the groups counted whole: every (model, suite, prompt style) of a changed family's items (its
    # pooled families), every (model, suite, task, category, prompt style), and the same without model
    "family_unit_counts": """
        SELECT DISTINCT k.model, i.suite, i.prompt_style FROM keys_family_trials k JOIN raw_items i USING (family_id)""",
    "unit_outcome_counts": """
        SELECT DISTINCT k.model, i.suite, i.task, i.category, i.prompt_style
        FROM keys_family_trials k JOIN raw_items i USING (family_id)""",
    "question_outcome_counts": "SELECT DISTINCT suite, task, category, prompt_style FROM keys_unit_outcome_counts",
    # a run's requests, or the latest score or item of one of its trials (a trial may be in several runs)
    "run_bin_counts": """
        SELECT run_id FROM changed_requests
        UNION SELECT run_id FROM raw_requests WHERE trial_id IN (SELECT trial_id FROM keys_trial_scores)""",
}


def _changed_reads(name: str) -> frozenset[str]:
    """The source tables whose changes the keys of view ``name`` come from (its ``changed_<table>``
    relations, and those of the views whose keys it reads)."""
    sql = CHANGED_KEYS[name]
    return frozenset(re.findall(r"\bchanged_(\w+)", sql)).union(
        *(_changed_reads(view) for view in re.findall(r"\bkeys_(\w+)", sql)))


_CHANGED_READS = {name: _changed_reads(name) for name in CHANGED_KEYS}

# For each view, the relation its rows of a key are computed from (every row of that relation with
# the key, and no other) and what that relation reads as it is: while a key's rows are recomputed,
# the relation reads only the changed keys' rows.
SCOPES = {
    "latest_parses": ("all_parses", "raw_parses"),
    "trial_scores": ("all_scores", "raw_scores"),
    "score_history": ("all_scores", "raw_scores"),
    "family_trials": ("trial_scores", "lake_table('trial_scores')"),
    "family_units": ("family_trials", "lake_table('family_trials')"),
    "item_outcomes": ("family_trials", "lake_table('family_trials')"),
    "family_unit_counts": ("family_units", "lake_table('family_units')"),
    "unit_outcome_counts": ("family_units", "lake_table('family_units')"),
    "question_outcome_counts": ("item_outcomes", "lake_table('item_outcomes')"),
    "run_bin_counts": ("run_requests", "raw_requests"),
}

# A full rebuild computes each view over slices of its keys (tasks.lake.slices), about this many
# rows of its scope each, one INSERT per slice: the windows that pick the latest parse, score
# and trial then hold a slice, not the lake (one pass over 10,000,000 trials peaked at 8.3 GB).
ROWS_PER_SLICE = 1_000_000

_LOCK = threading.Lock()  # one refresh at a time in a process (other processes: DuckLake's conflicts)


def refresh(lake: Lake, full: bool = False, con: duckdb.DuckDBPyConnection | None = None) -> dict[str, Any]:
    """Bring the lake's materialised tables up to date with what changed since the last refresh
    (all of it when ``full``, never refreshed, or their SQL changed); returns what it did:
    ``full``, ``snapshot`` (the one taken in), ``keys`` (recomputed per view), ``slices`` (per view
    rebuilt), ``tables`` (per view refreshed, its ``seconds`` and ``cpu_seconds``: where the time
    went) and ``seconds``. ``con``: a DuckDB of the caller's to work on, which stays open with the
    lake attached for writing (the end of a run checks the catalog on it); else one of its own."""
    started = time.perf_counter()
    own = contextlib.closing(connect(limits=lake.limits)) if con is None else contextlib.nullcontext(con)
    with _LOCK, own as con:
        lake.ensure()
        lake.attach(con, read_only=False)
        _create_tables(lake, con)
        try:
            done = _refreshed(lake, con, full)
        except _ChangesUnknown as exc:
            log.warning("refresh: %s: rebuilding", exc)
            done = _refreshed(lake, con, True)
    log.info("refresh: %s", done)
    return {**done, "seconds": time.perf_counter() - started}


def _refreshed(lake: Lake, con: duckdb.DuckDBPyConnection, full: bool) -> dict[str, Any]:
    """The refresh's transaction (retried), with the views it reads created first when it has
    keys to recompute or tables to rebuild: creating them binds them (0.1 s of CPU), and a refresh
    with nothing to recompute, as after a sweep that called nothing, reads none of them."""
    try:
        return ducklake.retrying(lambda: _refresh_once(con, full, views=False))
    except _ViewsNeeded:  # raised before the transaction wrote anything, which then rolled back
        # only what the refresh reads: binding every view costs half a second
        lake.create_views(con, " ".join([*materialised_names(), *CHANGED_KEYS.values()]), materialised=True)
        return ducklake.retrying(lambda: _refresh_once(con, full, views=True))


def _create_tables(lake: Lake, con: duckdb.DuckDBPyConnection) -> None:
    """The mark table and, empty, each materialised table the lake lacks (their columns: their
    views' over the raw lake), so that the views over them can be created."""
    have = set(ducklake.lake_tables(con))
    missing = [name for name in materialised_names() if name not in have]
    if MARK_TABLE in have and not missing:
        return
    lake.create_views(con, " ".join(materialised_names()), materialised=False)
    statements = [f"CREATE TABLE IF NOT EXISTS {ALIAS}.main.{MARK_TABLE} ({materialised.MARK_COLUMNS})"]
    statements += [f"CREATE TABLE IF NOT EXISTS {ALIAS}.main.{name} AS SELECT * FROM {name} LIMIT 0" for name in missing]
    # One commit (one catalog transaction instead of seven on a new lake); the mark table stays
    # empty, so the tables are not current until the refresh that follows fills them.
    ducklake.retrying(lambda: ducklake.in_transaction(con, statements))


def _refresh_once(con: duckdb.DuckDBPyConnection, full: bool, views: bool) -> dict[str, Any]:
    con.execute("BEGIN")
    try:
        done = _within(con, full, views)
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    return done


def _within(con: duckdb.DuckDBPyConnection, full: bool, views: bool) -> dict[str, Any]:
    """The refresh inside its transaction: the snapshot it reads is the one it takes in. Raises
    _ViewsNeeded, before writing, when it has work that reads the views and ``views`` is false."""
    snapshot = current_snapshot(con)
    last = materialised.mark(con)
    full = full or last is None or last[1] != materialised.definition_digest()
    keys: dict[str, int] = {}
    if not full:
        changed = materialised.changed_tables(con, last[0])
        if not changed:  # the mark stays: no source changed since it
            return {"full": False, "snapshot": last[0], "keys": keys}
    if not views and (full or any(reads & changed for reads in _CHANGED_READS.values())):
        raise _ViewsNeeded
    if not full:
        _changes(con, last[0] + 1, snapshot, changed)
    slices: dict[str, int] = {}
    tables: dict[str, dict[str, float]] = {}
    made: set[str] = set()  # the views whose keys_<view> this refresh computed
    for stmt in materialised_statements():
        (name,) = stmt.defines
        with _timed(name, tables, *((slices, "slice(s)") if full else (keys, "key(s)"))):
            if full:
                slices[name] = _rebuild(con, name, stmt.key)
            else:
                # a view whose keys read only unchanged tables has no key to recompute
                keys[name] = _recompute(con, name, stmt.key, made) if _CHANGED_READS[name] & changed else 0
    con.execute(f"INSERT INTO {ALIAS}.main.{MARK_TABLE} VALUES (?, ?, ?, ?, ?)",
                [snapshot, materialised.definition_digest(), full, sum(keys.values()), now_utc()])
    return {"full": full, "snapshot": snapshot, "keys": keys, "slices": slices, "tables": tables}


@contextlib.contextmanager
def _timed(name: str, tables: dict[str, dict[str, float]], counts: dict[str, int], unit: str) -> Iterator[None]:
    """Record in ``tables[name]`` the wall and CPU seconds of the block (CPU: the process's, every
    DuckDB thread), and log them with the process's peak RSS so far: where a refresh's time and
    memory go, table by table (``counts[name]``: its ``unit``, keys or slices, which the block sets)."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    tables[name] = {"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}
    log.info("refresh: %s: %s %s in %.1f s (%.1f s of CPU), peak RSS so far %d MiB", name, counts.get(name), unit,
             tables[name]["seconds"], tables[name]["cpu_seconds"],
             _peak_rss_mib())


def _peak_rss_mib() -> int:
    """The process's peak resident memory in MiB (``ru_maxrss`` is in KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // (1 << 20) if sys.platform == "darwin" else peak // 1024


def _rebuild(con: duckdb.DuckDBPyConnection, name: str, key: tuple[str, ...]) -> int:
    """Replace the lake table ``name`` by its definition from the raw lake, computed over slices
    of its keys (:data:`ROWS_PER_SLICE`, ``tasks.lake.slices``); returns how many slices. A key's
    rows are all in one slice, so each slice gives exactly that key's rows of the whole definition."""
    with sliced(con, SCOPES[name][1], key, ROWS_PER_SLICE) as parts:
        for i, part in enumerate(parts):
            write = f"CREATE OR REPLACE TABLE {ALIAS}.main.{name} AS" if i == 0 else f"INSERT INTO {ALIAS}.main.{name}"
            _insert_scoped(con, name, write, part)
        return len(parts)


def _recompute(con: duckdb.DuckDBPyConnection, name: str, key: tuple[str, ...], made: set[str]) -> int:
    """Replace the rows of the keys the changes touch in the lake table ``name``; returns how many keys.

    Its definition runs with the relation it is computed from (:data:`SCOPES`) restricted to those
    keys, so the work follows the change rather than the size of the lake."""
    keys = _keys(con, name, made)
    n_keys = con.execute(f"SELECT count(*) FROM {keys}").fetchone()[0]
    if not n_keys:
        return 0
    con.execute(f"DELETE FROM {ALIAS}.main.{name} r USING {keys} k WHERE {same_key('r', key)}")
    _insert_scoped(con, name, f"INSERT INTO {ALIAS}.main.{name}",
                   f"SELECT s.* FROM {SCOPES[name][1]} s SEMI JOIN {keys} k ON {same_key('s', key)}")
    return n_keys


def _keys(con: duckdb.DuckDBPyConnection, name: str, made: set[str]) -> str:
    """The temporary table ``keys_<name>`` of the keys of view ``name`` the changes touch
    (:data:`CHANGED_KEYS`), made once per refresh (``made``), with the other views' keys it reads first."""
    if name not in made:
        for other in re.findall(r"\bkeys_(\w+)", CHANGED_KEYS[name]):
            _keys(con, other, made)
        con.execute(f"CREATE OR REPLACE TEMP TABLE keys_{name} AS {CHANGED_KEYS[name]}")
        made.add(name)
    return f"keys_{name}"


def _insert_scoped(con: duckdb.DuckDBPyConnection, name: str, write: str, scope: str) -> None:
    """``write`` (an INSERT or CREATE TABLE ... AS) the rows of ``name``'s definition from the raw
    lake with the relation it is computed from (:data:`SCOPES`) read as ``scope`` (a SELECT of its
    rows of some whole keys)."""
    # A temporary view shadows the view of its name, in the views that read it too; and unlike
    # that view, it may be created in a transaction that writes to the lake.
    view = SCOPES[name][0]
    con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {scope}")
    try:
        con.execute(f"{write} SELECT * FROM {FROM_RAW.format(name)}")
    finally:
        con.execute(f"DROP VIEW temp.main.{view}")


class _ViewsNeeded(Exception):
    """The refresh has keys to recompute or tables to rebuild, and their views are not created yet."""


class _ChangesUnknown(Exception):
    """DuckLake cannot list the changes since the mark (a snapshot expired since): rebuild."""


def _changes(con: duckdb.DuckDBPyConnection, first: int, last: int, changed: frozenset[str]) -> None:
    """Load the rows of each source table inserted or deleted in snapshots ``first`` to ``last``
    into ``changed_<table>`` (none for a table not in ``changed``, whose rows those snapshots left
    as they were); raises _ChangesUnknown when DuckLake cannot say."""
    for table in sorted(materialised.source_tables()):
        if first > last or table not in changed:
            query = f"SELECT * FROM {ALIAS}.main.{table} LIMIT 0"
        else:
            query = f"SELECT * FROM ducklake_table_changes('{ALIAS}', 'main', '{table}', {first}, {last})"
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE changed_{table} AS {query}")
        except duckdb.InvalidInputException as exc:
            raise _ChangesUnknown(f"the changes of {table} since snapshot {first - 1} are unknown ({exc})") from None
