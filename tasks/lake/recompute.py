"""The incremental part of a refresh (``tasks.lake.refresh``): the rows of each source table changed
since the mark (:func:`load_changes`), the keys of each materialised view they touch
(:data:`CHANGED_KEYS`), and those keys' rows of a view computed again (:func:`recompute`).

A key's rows are computed from the relation the view is computed from (:data:`SCOPES`), read for
those keys only. Finding them there means a pass over the whole relation (10,400,000 rows at
10,000,000 responses); when none of the keys had a row before the refresh, as after a sweep of a
new run, its rows are exactly the relation's rows new since the mark (:class:`Fresh`): a source
table's rows inserted since it (DuckLake's changes) or a view's rows this refresh inserted, and a
count of the keys' rows (their key columns only, a third of the pass) proves it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from typing import Iterator

import duckdb

from tasks.lake import materialised
from tasks.lake.ducklake import ALIAS
from tasks.lake.slices import same_key
from tasks.lake.sql import FROM_RAW, materialised_statements

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
    # (a new parse's request is looked for among every request only when not stored since the mark)
    "family_trials": """
        SELECT DISTINCT i.family_id, t.model
        FROM (SELECT item_id, model FROM changed_scores
              UNION SELECT item_id, model FROM raw_scores WHERE item_id IN (SELECT item_id FROM changed_items)
              UNION SELECT item_id, model FROM changed_requests
                    WHERE request_id IN (SELECT request_id FROM changed_parses)
              UNION SELECT item_id, model FROM raw_requests
                    WHERE request_id IN (SELECT request_id FROM changed_parses
                                         EXCEPT SELECT request_id FROM changed_requests)) t
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

# The views whose definition reads ``items`` only joined on its scope's item_id: a recompute reads
# the scope's items alone (``items`` picks an item's first stored row among that item's rows, so
# the rows are the same). Picking it among every item costs 2 s of CPU at 10,000,000 responses.
ITEMS_OF_SCOPE = frozenset({"score_history", "trial_scores", "family_trials"})

# The views a definition reads besides its scope, each with the column of the scope that holds its
# key: when every value of it is a key this refresh recomputed in that view, the view's rows of
# them are the ones it inserted (its fresh rows), read instead of a pass over the whole view.
# (family_trials.sql joins a trial's last response to latest_parses: a trial that has none joins none.)
ALSO_READS = {"run_bin_counts": {"trial_scores": "trial_id"},
              "family_trials": {"latest_parses": "json_extract_string(response_ids, '$[#-1]')"}}

# A recompute whose keys have at most this many rows in the scope holds them in a temporary table
# (read once, and again for the items they name) and keeps the rows it computed for the views
# computed from it; more are read from the relation as before, so that memory stays bounded.
KEPT_ROWS = 1_000_000

def _changed_reads(name: str) -> frozenset[str]:
    """The source tables whose changes the keys of view ``name`` come from (its ``changed_<table>``
    relations, and those of the views whose keys it reads)."""
    sql = CHANGED_KEYS[name]
    return frozenset(re.findall(r"\bchanged_(\w+)", sql)).union(
        *(_changed_reads(view) for view in re.findall(r"\bkeys_(\w+)", sql)))


CHANGED_READS = {name: _changed_reads(name) for name in CHANGED_KEYS}
# The views another view is computed from (its scope reads their lake table): their new rows are kept.
_READ_BY_OTHERS = frozenset(re.findall(r"lake_table\('(\w+)'\)", " ".join(source for _, source in SCOPES.values()))
                            ).union(*ALSO_READS.values())


@dataclasses.dataclass
class Fresh:
    """What one incremental refresh knows: the snapshot it takes in (``snapshot``); whether the
    tables hold what their views gave at the mark (``whole``, ``materialised.whole_at``); the views
    whose ``keys_<view>`` it computed (``made``); per relation a scope reads (:data:`SCOPES`), a
    relation of its rows new since the mark, none removed (``rows``: ``changed_<table>`` of a
    source table with insertions only, ``fresh_<view>`` of a view this refresh recomputed), and
    which of those relations only grew since the mark (``grown``: such a source table, or a view
    that lost no row in this refresh); ``counts``, the rows of some keys in a relation."""

    snapshot: int
    whole: bool = False
    made: set[str] = dataclasses.field(default_factory=set)
    rows: dict[str, str] = dataclasses.field(default_factory=dict)
    grown: set[str] = dataclasses.field(default_factory=set)
    counts: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)

    def copy(self) -> Fresh:
        """A copy, to go back to when a transaction that changed this one rolls back."""
        return Fresh(self.snapshot, self.whole, set(self.made), dict(self.rows), set(self.grown), dict(self.counts))


class ChangesUnknown(Exception):
    """DuckLake cannot list the changes since the mark (a snapshot expired since): rebuild."""


def load_changes(con: duckdb.DuckDBPyConnection, first: int, last: int, changed: frozenset[str]) -> Fresh:
    """Load the rows of each source table inserted or deleted in snapshots ``first`` to ``last``
    into ``changed_<table>`` (none for a table not in ``changed``, whose rows those snapshots left
    as they were); returns what that makes known. Raises ChangesUnknown when DuckLake cannot say."""
    fresh = Fresh(last, materialised.whole_at(con, first - 1))
    for table in sorted(materialised.source_tables()):
        if first > last or table not in changed:
            query = f"SELECT * FROM {ALIAS}.main.{table} LIMIT 0"
        else:
            query = f"SELECT * FROM ducklake_table_changes('{ALIAS}', 'main', '{table}', {first}, {last})"
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE changed_{table} AS {query}")
        except duckdb.InvalidInputException as exc:
            raise ChangesUnknown(f"the changes of {table} since snapshot {first - 1} are unknown ({exc})") from None
        if table in changed and not con.execute(f"SELECT count(*) FROM changed_{table} "
                                                "WHERE change_type <> 'insert'").fetchone()[0]:
            fresh.rows[f"raw_{table}"] = f"(SELECT * EXCLUDE (snapshot_id, rowid, change_type) FROM changed_{table})"
            fresh.grown.add(f"raw_{table}")
    return fresh


def recompute(con: duckdb.DuckDBPyConnection, name: str, key: tuple[str, ...], fresh: Fresh) -> int:
    """Replace the rows of the keys the changes touch in the lake table ``name``; returns how many keys.

    Its definition runs with the relation it is computed from (:data:`SCOPES`) restricted to those
    keys, so the work follows the change rather than the size of the lake."""
    keys = _keys(con, name, fresh.made)
    n_keys = con.execute(f"SELECT count(*) FROM {keys}").fetchone()[0]
    if not n_keys:
        return 0
    source = SCOPES[name][1]
    delete = f"DELETE FROM {ALIAS}.main.{name} r USING {keys} k WHERE {same_key('r', key)}"
    if source in fresh.grown:  # its new rows alone may be all the keys' rows
        scope, new = _rows_of_keys(con, name, (source, fresh.rows[source]), keys, key, fresh.counts)
        # A key's rows come from its rows in the source alone: with none there at the mark, the
        # table has none, if it holds what it gave then and this transaction reads the snapshot
        # taken in (the pass over the table's keys to find none costs a second of CPU at 10M).
        deleted = 0 if new and _reads_the_mark_state(con, fresh) else con.execute(delete).fetchone()[0]
    else:
        # a relation that lost rows since the mark: look through the table's own rows first, and
        # through the relation's new rows only when the table had none of these keys
        deleted = con.execute(delete).fetchone()[0]
        scope = _rows_of_keys(con, name, (source, None if deleted else fresh.rows.get(source)), keys, key,
                              fresh.counts)[0]
    _insert(con, name, scope, f"SELECT s.* FROM {source} s SEMI JOIN {keys} k ON {same_key('s', key)}", fresh)
    if not deleted and f"lake_table('{name}')" in fresh.rows:  # the table only grew: its new rows are all new
        fresh.grown.add(f"lake_table('{name}')")
    return n_keys


def _reads_the_mark_state(con: duckdb.DuckDBPyConnection, fresh: Fresh) -> bool:
    """Whether the tables held, before this refresh, what their views gave at the mark, and this
    transaction reads the snapshot the refresh takes in (no source changed since; if one did, the
    tables recomputed from here on read it, and ``fresh.whole`` no longer holds)."""
    fresh.whole = fresh.whole and not materialised.changed_tables(con, fresh.snapshot)
    return fresh.whole


def _insert(con: duckdb.DuckDBPyConnection, name: str, scope: str | None, keys_rows: str, fresh: Fresh) -> None:
    """Insert into the lake table ``name`` its definition's rows with its scope read as ``scope``,
    held in a temporary table, or as ``keys_rows`` (the keys' rows of the relation, read as they
    are) when ``scope`` is None; the rows inserted are kept for the views computed from it."""
    write = f"INSERT INTO {ALIAS}.main.{name}"
    if scope is None:
        with scoped(con, name, keys_rows):
            con.execute(f"{write} SELECT * FROM {FROM_RAW.format(name)}")
        return
    con.execute(f"CREATE OR REPLACE TEMP TABLE scope_{name} AS {scope}")
    try:
        with scoped(con, name, f"FROM scope_{name}", _shadows(con, name, fresh)):
            if name in _READ_BY_OTHERS:
                con.execute(f"CREATE OR REPLACE TEMP TABLE fresh_{name} AS SELECT * FROM {FROM_RAW.format(name)}")
                con.execute(f"{write} FROM fresh_{name}")
                fresh.rows[f"lake_table('{name}')"] = f"fresh_{name}"
            else:
                con.execute(f"{write} SELECT * FROM {FROM_RAW.format(name)}")
    finally:
        con.execute(f"DROP TABLE IF EXISTS temp.main.scope_{name}")


def _rows_of_keys(con: duckdb.DuckDBPyConnection, name: str, relation: tuple[str, str | None], keys: str,
                  key: tuple[str, ...], counts: dict[tuple[str, str], int]) -> tuple[str | None, bool]:
    """A SELECT of the rows of ``relation`` (the relation, and a relation of its rows new since
    the mark or None) with a key of ``keys`` to hold, and whether they are all among its new rows
    (counted: a pass over the key columns of the relation only), then read from those; else from
    the relation. None when they are more than :data:`KEPT_ROWS`, or holding them gains nothing
    (no new rows to read them from, and no items to pick for them). ``counts``: the rows of some
    keys in a relation, counted once per refresh."""
    source, new = relation
    if new is None and name not in ITEMS_OF_SCOPE:
        return None, False

    def rows_in(relation: str) -> str:
        return f"{relation} s SEMI JOIN {keys} k ON {same_key('s', key)}"
    if (source, keys) not in counts:  # views of the same keys and relation count once
        counts[source, keys] = con.execute(f"SELECT count(*) FROM {rows_in(source)}").fetchone()[0]
    n_rows = counts[source, keys]
    if n_rows > KEPT_ROWS:
        return None, False
    # every row of those keys is new (``new`` holds only rows still in ``source``)
    if new is not None and con.execute(f"SELECT count(*) FROM {rows_in(new)}").fetchone()[0] == n_rows:
        return f"SELECT s.* FROM {rows_in(new)}", True
    return (f"SELECT s.* FROM {rows_in(source)}" if name in ITEMS_OF_SCOPE else None), False


def _shadows(con: duckdb.DuckDBPyConnection, name: str, fresh: Fresh) -> list[tuple[str, str]]:
    """The views that a recompute of ``name`` reads as fewer rows, with its scope held in
    ``scope_<name>``: the raw items of the scope's items (:data:`ITEMS_OF_SCOPE`), and a view's
    fresh rows when they are all its rows the scope names (:data:`ALSO_READS`)."""
    shadows = []
    if name in ITEMS_OF_SCOPE:
        database = con.execute("SELECT current_database()").fetchone()[0]
        shadows.append(("raw_items", f"SELECT * FROM {database}.main.raw_items "
                                     f"WHERE item_id IN (SELECT item_id FROM scope_{name})"))
    for view, column in ALSO_READS.get(name, {}).items():
        rows = fresh.rows.get(f"lake_table('{view}')")
        (key,) = next(stmt.key for stmt in materialised_statements() if view in stmt.defines)
        # (a NULL joins no row: NOT IN would also drop every row if a key were NULL)
        if rows and view in fresh.made and not con.execute(
                f"SELECT count(*) FROM (SELECT {column} AS v FROM scope_{name} WHERE v IS NOT NULL) s "
                f"ANTI JOIN keys_{view} k ON s.v = k.{key}").fetchone()[0]:
            shadows.append((view, f"FROM {rows}"))
    return shadows


def _keys(con: duckdb.DuckDBPyConnection, name: str, made: set[str]) -> str:
    """The temporary table ``keys_<name>`` of the keys of view ``name`` the changes touch
    (:data:`CHANGED_KEYS`), made once per refresh (``made``), with the other views' keys it reads first."""
    same = re.fullmatch(r"SELECT \* FROM (keys_\w+)", CHANGED_KEYS[name])
    if same:  # another view's keys
        return _keys(con, same.group(1)[len("keys_"):], made)
    if name not in made:
        for other in re.findall(r"\bkeys_(\w+)", CHANGED_KEYS[name]):
            _keys(con, other, made)
        con.execute(f"CREATE OR REPLACE TEMP TABLE keys_{name} AS {CHANGED_KEYS[name]}")
        made.add(name)
    return f"keys_{name}"


@contextlib.contextmanager
def scoped(con: duckdb.DuckDBPyConnection, name: str, scope: str, shadows: list[tuple[str, str]] = ()) -> Iterator[None]:
    """Within the block, the relation view ``name`` is computed from (:data:`SCOPES`) reads as
    ``scope`` (a SELECT of its rows of some whole keys), so that ``<name>_from_raw`` gives those
    keys' rows; and each view of ``shadows`` (name, SELECT) as its SELECT."""
    # A temporary view shadows the view of its name, in the views that read it too; and unlike
    # that view, it may be created in a transaction that writes to the lake.
    views = [(SCOPES[name][0], scope), *shadows]
    for view, sql in views:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {sql}")
    try:
        yield
    finally:
        for view, _ in views:
            con.execute(f"DROP VIEW IF EXISTS temp.main.{view}")
