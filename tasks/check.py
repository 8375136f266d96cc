"""``invarbench check``: verify the lake and list what is wrong with it (:func:`check_lake`).

Each check (:data:`CHECKS`) has a name, counts what it finds and keeps a few examples. A finding
is **damage** (the lake holds something the pipeline never writes: a file that cannot be read or
was set aside for it, a request answered twice, a row tied to nothing, an id that does not match its content,
a materialised view's table that differs from its definition) or a
**warning** (a run left ``running`` by a process that is gone: the next sweep marks it crashed).
A check that cannot run (a file it reads is unreadable) is damage too.

Every check reads the lake's views (``Lake.connect`` / ``Lake.read``) but one: whether every data
file reads, which takes the list of data files (:func:`data_files`, the one place that knows how
the lake stores them) and opens each (:func:`unreadable_files`).

It is a module of its own above the packages it checks, not in ``tasks.lake``: it checks what
runs wrote against the pipeline's own definitions (item and request ids, the ledger's rule for an
answered request, a run whose process is gone), which the storage layer beneath them all does not
import.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Iterator

import duckdb

from tasks import progress
from tasks.items.generate import item_from_row
from tasks.lake.lake import Lake
from tasks.lake.materialised import is_current, materialised_names
from tasks.lake.quarantine import quarantined, read_error
from tasks.lake.schemas import SCHEMAS
from tasks.lake.sql import FROM_RAW
from tasks.models.call import request_from_row
from tasks.records import Item
from tasks.runs.lifecycle import stale_runs

DAMAGE, WARNING = "damage", "warning"


@dataclass
class Finding:
    """What one check found: how many (``count``) and the first few (``examples``); ``error``
    when the check could not run."""

    check: str
    severity: str
    meaning: str
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def found(self) -> bool:
        """Whether the check found anything, or could not run."""
        return bool(self.count) or self.error is not None


@dataclass
class Report:
    """Every check's finding, in the order of :data:`CHECKS`."""

    findings: list[Finding]

    @property
    def damaged(self) -> bool:
        """Whether any check found damage (or could not run)."""
        return any(f.found and f.severity == DAMAGE for f in self.findings)

    def summary(self) -> str:
        """One line: clean, or which checks found damage and which warn."""
        def named(severity: str) -> list[str]:
            return [f"{f.check} ({'could not run' if f.error else f.count})" for f in self.findings
                    if f.found and f.severity == severity]

        damage, warnings = named(DAMAGE), named(WARNING)
        if not damage and not warnings:
            return f"the lake is clean: {len(self.findings)} checks, nothing found"
        parts = [f"damage: {', '.join(damage)}" if damage else "no damage"]
        if warnings:
            parts.append(f"warnings: {', '.join(warnings)}")
        return f"{len(self.findings)} checks; " + "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """The report for machines (``invarbench check --json``)."""
        return {"damaged": self.damaged, "summary": self.summary(),
                "checks": [asdict(f) for f in self.findings]}


# --- the data files -----------------------------------------------------------------------------

def data_files(lake: Lake) -> list[str]:
    """Every data file of the lake's tables, as DuckLake lists them (``ducklake_list_files``): a
    local path or an object-store URL. Rows inlined in the catalog have no file."""
    with lake.connect("") as con:
        tables = sorted(set(SCHEMAS) - lake.absent_tables(con))  # none before the first write
        return sorted(path for table in tables for (path,) in con.execute(
            "SELECT data_file FROM ducklake_list_files('lake', ?)", [table]).fetchall())


def unreadable_files(lake: Lake, paths: list[str]) -> list[dict[str, Any]]:
    """The files among ``paths`` that do not read to the end (:func:`tasks.lake.quarantine.read_error`),
    each with the first line of its error. Read through the lake's connection, so an object-store
    lake's files are read with its credentials."""
    bad = []
    with progress.stage("check: data files", len(paths)) as advance, lake.connect("") as con:
        for path in paths:
            error = read_error(con, path)
            if error is not None:
                bad.append({"file": path, "error": error})
            advance(1)
    return bad


def quarantined_files(lake: Lake) -> list[dict[str, Any]]:
    """The files in the lake's quarantine folder (:func:`tasks.lake.quarantine.quarantined`), an
    object-store lake's listed with its credentials."""
    with lake.connect("") as con:
        return quarantined(con, lake.root)


# --- ids that must match their content ----------------------------------------------------------

def _mismatches(lake: Lake, sql: str, id_column: str, rebuild: Callable[[dict[str, Any]], str],
                stage: str) -> Iterator[dict[str, Any]]:
    """The rows of ``sql`` whose ``id_column`` is not what ``rebuild`` makes of the row's content."""
    with lake.connect(sql) as con:
        (total,) = con.execute(f"SELECT count(*) FROM ({sql})").fetchone()
        batches = con.execute(sql).to_arrow_reader(10_000)
        with progress.stage(stage, total) as advance:
            for batch in batches:
                rows = batch.to_pylist()
                for row in rows:
                    try:
                        content_id = rebuild(row)
                    except (ValueError, KeyError, TypeError) as exc:  # content no longer decodes
                        content_id = f"(content unreadable: {exc})"
                    if content_id != row[id_column]:
                        yield {id_column: row[id_column], "content_hash": content_id}
                advance(len(rows))


_REQUEST_CONTENT = ("SELECT DISTINCT request_id, trial_id, item_id, model, step, provider, route_model, api_base, "
                    "sampling, sample_idx, messages FROM run_requests")
_ITEM_CONTENT = f"SELECT DISTINCT item_id, {', '.join(f.name for f in fields(Item))} FROM raw_items"


def _request_ids(lake: Lake) -> Iterator[dict[str, Any]]:
    return _mismatches(lake, _REQUEST_CONTENT, "request_id", lambda r: request_from_row(r).request_id,
                       "check: request ids")


def _item_ids(lake: Lake) -> Iterator[dict[str, Any]]:
    return _mismatches(lake, _ITEM_CONTENT, "item_id", lambda r: item_from_row(r).item_id, "check: item ids")


# --- rows that must exist together --------------------------------------------------------------

# check name → the query of what it finds: one row per finding.
_QUERIES = {
    # the ledger's rule (tasks.models.call.USABLE_LEDGER_ROWS): a request is answered by an ok response
    "answered_twice": """
        SELECT request_id, count(*) AS ok_rows, count(DISTINCT response_id) AS responses,
               string_agg(DISTINCT run_id, ', ') AS runs
        FROM responses WHERE status = 'ok' GROUP BY request_id HAVING count(*) > 1""",
    "response_without_request": """
        SELECT response_id, request_id, run_id, model FROM responses r
        WHERE NOT EXISTS (SELECT 1 FROM run_requests q WHERE q.request_id = r.request_id)""",
    "request_without_item": """
        SELECT DISTINCT request_id, item_id, run_id, model FROM run_requests q
        WHERE NOT EXISTS (SELECT 1 FROM raw_items i WHERE i.item_id = q.item_id)""",
    "parse_without_response": """
        SELECT DISTINCT response_id, request_id, parser_version FROM all_parses p
        WHERE NOT EXISTS (SELECT 1 FROM responses r WHERE r.response_id = p.response_id)""",
    # a score names the responses of its trial's steps (null: a step never answered); an ok one is parsed
    "score_without_parse": """
        WITH named AS (
            SELECT DISTINCT trial_id, run_id, scorer_version,
                   unnest(from_json(response_ids, '["VARCHAR"]')) AS response_id FROM all_scores)
        SELECT n.trial_id, n.run_id, n.scorer_version, n.response_id,
               CASE WHEN r.response_id IS NULL THEN 'no such response' ELSE 'the response has no parse' END AS problem
        FROM named n LEFT JOIN (SELECT DISTINCT response_id, status FROM responses) r USING (response_id)
        WHERE n.response_id IS NOT NULL AND (r.response_id IS NULL OR (r.status = 'ok' AND NOT EXISTS
              (SELECT 1 FROM all_parses p WHERE p.response_id = n.response_id)))""",
}


def _query(name: str) -> Callable[[Lake], list[dict[str, Any]]]:
    return lambda lake: lake.read(f"{_QUERIES[name]} ORDER BY ALL")


# --- materialised views that must equal their definition ----------------------------------------

def _materialised_differences(lake: Lake) -> list[dict[str, Any]]:
    """Per materialised view whose stored table the views read (it is current:
    ``tasks.lake.materialised.is_current``), the rows it holds that its definition from the raw lake
    does not give, and those it lacks; nothing to compare when not current (the views then read the
    raw lake). Floating-point columns are compared to 9 decimals: a refresh sums in another order."""
    found = []
    with lake.connect(None) as con:
        if not is_current(con):
            return []
        for name in materialised_names():
            columns = con.execute(f"DESCRIBE {name}").fetchall()
            select = ", ".join(f'round("{c}", 9)' if kind in ("DOUBLE", "FLOAT") else f'"{c}"' for c, kind, *_ in columns)
            stored, derived = name, FROM_RAW.format(name)
            for extra, other, problem in ((stored, derived, "stored, not derived from the raw lake"),
                                          (derived, stored, "derived from the raw lake, not stored")):
                (rows,) = con.execute(f"SELECT count(*) FROM (SELECT {select} FROM {extra} "
                                      f"EXCEPT ALL SELECT {select} FROM {other})").fetchone()
                if rows:
                    found.append({"view": name, "rows": rows, "problem": problem})
    return found


def _dead_runs(lake: Lake) -> list[dict[str, Any]]:
    return [{k: r.get(k) for k in ("run_id", "kind", "host", "pid", "updated_at")} for r in stale_runs(lake)]


@dataclass(frozen=True)
class Check:
    """One check: its name, the severity of what it finds, what a finding means, and how to find it."""

    name: str
    severity: str
    meaning: str
    find: Callable[[Lake], Any]  # Lake → the findings, one dict each (an iterable)


CHECKS: tuple[Check, ...] = (
    Check("unreadable_files", DAMAGE, "a data file that does not read: every query of its table fails",
          lambda lake: unreadable_files(lake, data_files(lake))),
    Check("quarantined_files", DAMAGE, "a data file set aside because it did not read (tasks.lake.quarantine): its "
          "rows are out of its table; restore them from a backup, then delete the file", quarantined_files),
    Check("answered_twice", DAMAGE, "a request with more than one ok response: paid twice, or a row stored twice",
          _query("answered_twice")),
    Check("response_without_request", DAMAGE, "a response whose request no run recorded", _query("response_without_request")),
    Check("request_without_item", DAMAGE, "a request whose item is not stored", _query("request_without_item")),
    Check("parse_without_response", DAMAGE, "a parse of a response that is not stored", _query("parse_without_response")),
    Check("score_without_parse", DAMAGE, "a score naming a response that is not stored, or an ok one never parsed",
          _query("score_without_parse")),
    Check("request_id_mismatch", DAMAGE, "a request row whose id is not the hash of its route, messages, "
          "sampling and sample_idx: edited after it was written", _request_ids),
    Check("item_id_mismatch", DAMAGE, "an item row whose id is not the hash of its content: edited after it was written",
          _item_ids),
    Check("materialised_differs", DAMAGE, "a materialised view's stored table, which the views read while it is "
          "current, differs from its definition on the raw lake: queries answer from wrong rows",
          _materialised_differences),
    Check("dead_running_run", WARNING, "a run still `running` whose process is gone (no heartbeat, or its pid "
          "has ended on this machine); the next sweep marks it crashed", _dead_runs),
)


def run_check(check: Check, lake: Lake, examples: int) -> Finding:
    """Run one check; a query that fails (a file it reads is unreadable) is its ``error``."""
    finding = Finding(check.name, check.severity, check.meaning)
    try:
        for row in check.find(lake):
            finding.count += 1
            if len(finding.examples) < examples:
                finding.examples.append(row)
    except duckdb.Error as exc:
        finding.error = str(exc).splitlines()[0]
    return finding


def check_lake(lake: Lake, examples: int = 5) -> Report:
    """Run every check of :data:`CHECKS` on ``lake``, keeping up to ``examples`` examples of each."""
    findings = []
    with progress.stage("check", len(CHECKS)) as advance:
        for check in CHECKS:
            findings.append(run_check(check, lake, examples))
            advance(1)
    return Report(findings)
