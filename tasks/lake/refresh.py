"""Bring the materialised views (``tasks.lake.materialised``) up to date: :func:`refresh`.

In the manner of dbt's incremental models. A refresh reads which rows of their source tables
changed since the snapshot of the last refresh (``ducklake_table_changes``, the mark being that
snapshot), derives from them the keys of each materialised view they touch, and replaces the rows
of those keys by what the view's definition from the raw lake (``<name>_from_raw``) gives for them
(``tasks.lake.recompute``), in load order, so a later view reads the earlier ones' new rows.

Each table is one DuckLake transaction, and the mark one more, last: the views read the tables only
while the mark is current (``tasks.lake.materialised``), so an interrupted refresh leaves every
query answering as before (from the raw lake, its source having changed since the mark), and the
next refresh recomputes every key changed since the mark, in every table, completing it. (One
transaction for all held every table's uncommitted change, which each later read merged: 1 GB more
memory at 10,000,000 responses.) Without a usable mark (never refreshed, their SQL changed, the
mark's snapshot expired) it rebuilds every table, a slice of keys at a time
(:data:`ROWS_PER_SLICE`), so that its memory does not grow with the lake. A new lake's first
refresh (no materialised table yet, no raw source above :data:`FIRST_BUILD_ROWS` rows: a small
first sweep's end) builds every table and the mark in one transaction instead (``_first_build``):
the same rows, one commit.

Two refreshes of one lake run one after the other (``Lake.exclusive("refresh")``): each planned
from the same mark would insert a new key's rows, and DuckLake does not take two appends to one
table as a conflict, so the table would hold them twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import resource
import sys
import threading
import time
from typing import Any, Callable, Iterator, TypeVar

import duckdb

from tasks.lake import ducklake, materialised
from tasks.lake.ducklake import ALIAS, current_snapshot
from tasks.lake.engine import connect
from tasks.lake.lake import Lake, Made
from tasks.lake.materialised import MARK_TABLE, materialised_names
from tasks.lake.recompute import (
    CHANGED_KEYS,
    CHANGED_READS,
    SCOPES,
    ChangesUnknown,
    Fresh,
    load_changes,
    recompute,
    scoped,
)
from tasks.lake.slices import sliced
from tasks.lake.sql import FROM_RAW, materialised_statements
from tasks.records import now_utc

log = logging.getLogger(__name__)

# A full rebuild computes each view over slices of its keys (tasks.lake.slices), about this many
# rows of its scope each, one INSERT per slice: the windows that pick the latest parse, score
# and trial then hold a slice, not the lake (one pass over 10,000,000 trials peaked at 8.3 GB).
ROWS_PER_SLICE = 1_000_000
# The largest raw source a first refresh builds in one transaction (``_first_build``). Larger, the
# one transaction holds every table's rows until its commit: a 200,000-item sweep's end rose from
# 1.58 to 2.40 GB of RSS that way (bench/results.md, "Issue #26 at rest after the s13 merges"),
# against about 0.2 GB through the general path's commit per table.
FIRST_BUILD_ROWS = 20_000

__all__ = ["CHANGED_KEYS", "SCOPES", "ROWS_PER_SLICE", "refresh"]

T = TypeVar("T")

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
    with _LOCK, lake.exclusive("refresh"), own as con:
        lake.ensure()
        lake.attach(con, read_only=False)
        have = set(ducklake.lake_tables(con))
        done = _first_build(lake, con, have)
        if done is None:
            _create_tables(lake, con, have)
            try:
                done = _refreshed(lake, con, full, have)
            except ChangesUnknown as exc:
                log.warning("refresh: %s: rebuilding", exc)
                done = _refreshed(lake, con, True, have)
    log.info("refresh: %s", done)
    return {**done, "seconds": time.perf_counter() - started}


@dataclasses.dataclass
class _Plan:
    """What a refresh does: rebuild every table (``full``) or take in the changes to ``changed``
    (the source tables changed since the mark), ``snapshot`` being the last snapshot it takes in."""

    full: bool
    snapshot: int
    changed: frozenset[str] = frozenset()
    fresh: Fresh | None = None  # what the recomputes know (tasks.lake.recompute)

    def __post_init__(self) -> None:
        self.fresh = self.fresh or Fresh(self.snapshot)


def _refreshed(lake: Lake, con: duckdb.DuckDBPyConnection, full: bool, have: set[str]) -> dict[str, Any]:
    """The refresh: what it does, read in one transaction, then each table's change in a
    transaction of its own (retried), and the mark. The views it reads are created only when it
    has keys to recompute or tables to rebuild: creating them binds them (0.1 s of CPU), and a
    refresh with nothing to recompute, as after a sweep that called nothing, reads none of them.
    ``have``: the lake's tables when the refresh began."""
    plan = ducklake.retrying(lambda: _committed(con, lambda: _planned(con, full)))
    if isinstance(plan, dict):  # no source changed since the mark, which stays
        return plan
    if plan.full or any(reads & plan.changed for reads in CHANGED_READS.values()):
        # only what the refresh reads: binding every view costs half a second
        lake.create_views(con, " ".join([*materialised_names(), *CHANGED_KEYS.values()]), materialised=True,
                          absent=lake.absent_tables(con, have))
    return _applied(con, plan)


def _planned(con: duckdb.DuckDBPyConnection, full: bool) -> _Plan | dict[str, Any]:
    """The refresh's plan, with the changed rows loaded (``tasks.lake.recompute.load_changes``), or
    its result when there is nothing to do."""
    snapshot = current_snapshot(con)
    last = materialised.mark(con)
    if full or last is None or last[1] != materialised.definition_digest():
        return _Plan(True, snapshot)
    changed = materialised.changed_tables(con, last[0])
    if not changed:
        return {"full": False, "snapshot": last[0], "keys": {}}
    return _Plan(False, snapshot, changed, load_changes(con, last[0] + 1, snapshot, changed))


def _applied(con: duckdb.DuckDBPyConnection, plan: _Plan) -> dict[str, Any]:
    """Each table rebuilt or its changed keys recomputed, in load order, each in its transaction;
    then the mark, in one of its own: the tables are current from then on."""
    keys: dict[str, int] = {}
    slices: dict[str, int] = {}
    tables: dict[str, dict[str, float]] = {}
    for stmt in materialised_statements():
        (name,) = stmt.defines
        with _timed(name, tables, *((slices, "slice(s)") if plan.full else (keys, "key(s)"))):
            if plan.full:
                slices[name] = _table_transaction(con, plan, lambda: _rebuild(con, name, stmt.key))
            elif CHANGED_READS[name] & plan.changed:
                keys[name] = _table_transaction(con, plan, lambda: recompute(con, name, stmt.key, plan.fresh))
            else:  # a view whose keys read only unchanged tables has no key to recompute
                keys[name] = 0
    _table_transaction(con, plan, lambda: con.execute(
        f"INSERT INTO {ALIAS}.main.{MARK_TABLE} VALUES (?, ?, ?, ?, ?)",
        [plan.snapshot, materialised.definition_digest(), plan.full, sum(keys.values()), now_utc()]))
    for relation in plan.fresh.rows.values():
        if relation.startswith("fresh_"):  # a view's new rows, kept for the views computed from it
            con.execute(f"DROP TABLE IF EXISTS temp.main.{relation}")
    return {"full": plan.full, "snapshot": plan.snapshot, "keys": keys, "slices": slices, "tables": tables}


def _table_transaction(con: duckdb.DuckDBPyConnection, plan: _Plan, work: Callable[[], T]) -> T:
    """``work()`` in a transaction of its own, retried (``ducklake.retrying``); what a transaction
    that rolled back had added to ``plan.fresh`` (its temporary tables, rolled back) is forgotten."""
    def once() -> T:
        before = plan.fresh.copy()
        try:
            return _committed(con, work)
        except BaseException:
            plan.fresh = before
            raise
    return ducklake.retrying(once)


def _committed(con: duckdb.DuckDBPyConnection, work: Callable[[], T]) -> T:
    """``work()`` in a transaction, committed, or rolled back when it raises."""
    con.execute("BEGIN")
    try:
        done = work()
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    return done


def _first_build(lake: Lake, con: duckdb.DuckDBPyConnection, have: set[str]) -> dict[str, Any] | None:
    """A lake's first refresh (no materialised table, no mark) as one build, when every raw source
    holds at most :data:`FIRST_BUILD_ROWS` rows (a new lake's first sweep): each table created from
    its view over the raw lake, in load order, and the mark, in one transaction; None (nothing done)
    otherwise.

    The same rows as creating the tables empty, then rebuilding each in a transaction of its own
    (the general path, 12 commits): a view over the raw lake gives each key's rows of its
    definition, which its table then holds, and a later table is computed from the tables built
    before it, as the general path computes it. One commit, and the views bound once instead of
    twice: 0.3-0.4 s of a new lake's first sweep ("The first refresh of a new lake",
    bench/results.md); the later tables from the earlier ones: 0.2 s of CPU less. Larger lakes (a first sweep of many items, one never refreshed from before
    the materialised views) keep the general path, whose slices and commits per table bound its
    memory. ``have``: the lake's tables."""
    names = materialised_names()
    if MARK_TABLE in have or have.intersection(names):
        return None
    # The raw sources are counted before the materialised views are bound (0.4 s of CPU), which
    # a lake that takes the general path would otherwise pay twice.
    raw = sorted({source for _, source in SCOPES.values() if not source.startswith("lake_table")})
    made: Made = {}
    lake.create_views(con, " ".join(raw), materialised=False, made=made, absent=lake.absent_tables(con, have))
    counts = ", ".join(f"(SELECT count(*) FROM {source})" for source in raw)
    if con.execute(f"SELECT greatest({counts})").fetchone()[0] > FIRST_BUILD_ROWS:
        return None
    lake.create_views(con, " ".join(names), materialised=False, made=made, absent=lake.absent_tables(con, have))
    tables: dict[str, dict[str, float]] = {}
    slices = dict.fromkeys(names, 1)

    def build() -> int:
        snapshot = current_snapshot(con)
        con.execute(f"CREATE TABLE IF NOT EXISTS {ALIAS}.main.{MARK_TABLE} ({materialised.MARK_COLUMNS})")
        for name in names:  # load order: a later view reads what is built before it
            with _timed(name, tables, slices, "slice(s)"):
                con.execute(f"CREATE OR REPLACE TABLE {ALIAS}.main.{name} AS SELECT * FROM {name}")
                # The views computed from it read its table from now on, as the general path's
                # do: not its definition over the raw lake again (what the table holds), which
                # each later table's query would otherwise plan and compute once more. A
                # temporary view (the one transaction may write the lake and it, no other
                # database) is found before the view of its name (DuckDB binds a view's names
                # at each query) and is rolled back with the tables, or dropped after.
                con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM lake_table('{name}')")
        con.execute(f"INSERT INTO {ALIAS}.main.{MARK_TABLE} VALUES (?, ?, true, 0, ?)",
                    [snapshot, materialised.definition_digest(), now_utc()])
        return snapshot

    snapshot = ducklake.retrying(lambda: _committed(con, build))
    con.execute(";".join(f"DROP VIEW IF EXISTS temp.main.{name}" for name in names))
    return {"full": True, "snapshot": snapshot, "keys": {}, "slices": slices, "tables": tables}


def _create_tables(lake: Lake, con: duckdb.DuckDBPyConnection, have: set[str]) -> None:
    """The mark table and, empty, each materialised table the lake lacks (``have``: the lake's
    tables; their columns: their views' over the raw lake), so that the views over them can be
    created."""
    missing = [name for name in materialised_names() if name not in have]
    if MARK_TABLE in have and not missing:
        return
    lake.create_views(con, " ".join(materialised_names()), materialised=False, absent=lake.absent_tables(con, have))
    statements = [f"CREATE TABLE IF NOT EXISTS {ALIAS}.main.{MARK_TABLE} ({materialised.MARK_COLUMNS})"]
    statements += [f"CREATE TABLE IF NOT EXISTS {ALIAS}.main.{name} AS SELECT * FROM {name} LIMIT 0" for name in missing]
    # One commit (one catalog transaction instead of seven on a new lake); the mark table stays
    # empty, so the tables are not current until the refresh that follows fills them.
    ducklake.retrying(lambda: ducklake.in_transaction(con, statements))


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
            with scoped(con, name, part):
                con.execute(f"{write} SELECT * FROM {FROM_RAW.format(name)}")
        return len(parts)
