"""Parsing and scoring: derived, versioned rows computed from stored responses only.

Neither calls a model, which is what makes re-scoring free: ``parse_responses`` parses every
``ok`` response of the selection that has no parse of the current parser version yet (storing
its canonical answer, so consistency is known as soon as the parse is), and
``score_trials`` scores every trial of the selection that has no score of the current scorer
version over the same responses.

Trial-level rule (``SCORER_VERSION`` 2):
- a step without a response, or whose response is an error after retries → ``error``;
- a chain stopped because a step's answer needed by the next one was unparsable → ``unparsable``,
  or cut at the token limit before it was stated → ``truncated`` (the stream sends no request built
  from a number pulled out of a cut reply);
- the final step's parse unparsable → ``unparsable``; truncated (cut at the token limit before an
  answer was stated) → ``truncated`` (new in version 2: scored, never correct, counted apart);
- otherwise ``correct`` or ``wrong`` by the answer type's ``matches``; where the parser module
  defines ``lenient``, its result is stored as ``lenient_correct`` (a separately labelled score).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from tasks.lake.lake import Lake
from tasks.lake.writes import write_table
from tasks.records import n_steps_sql, now_utc, step_answer_type
from tasks.scoring import parse as parsing
from tasks.scoring.selection import Selection

SCORER_VERSION = "2"


def scorer_version(answer_type: str) -> str:
    """The version stamped on score rows: the trial rule's and the answer type's parser version."""
    return f"score/{SCORER_VERSION}+{parsing.parser_version(answer_type)}"


@dataclass
class StageStats:
    """Rows a derived stage examined and wrote."""

    examined: int = 0
    written: int = 0


# What each stage's queries read, by the kind of selection. A selection of some runs or items (a
# sweep's chunk: a run, a model, 1,000 items) reads only its own rows of the lake: its requests'
# items (table macro items_of) and ledger rows (ledger_of), their responses' parses
# (latest_parses_of) and its trials' scores. The views items, ledger and latest_parses rank every
# item, response and parse of the lake, and each chunk of a sweep paid for that, so its reads grew
# with the lake. A selection of every run (a rescore by model, suite or date, or of everything)
# reads the views: picking the ids first only adds a semi-join over most of the lake (at 1,000,000
# responses, a rescore of everything took 30% more CPU and 50% more memory; bench/results.md,
# "chunk-reads"). `{}` is the relation whose ids are picked; picked_items is items_of('picked'),
# a CTE of _selected.
_NARROW = {"items": "picked_items", "ledger": "ledger_of('{}')", "latest_parses": "latest_parses_of('{}')",
           "parses": "(SELECT * FROM all_parses WHERE response_id IN (SELECT response_id FROM {}))",
           "scores": "(SELECT * FROM all_scores WHERE trial_id IN (SELECT trial_id FROM {}))"}
_BROAD = {"items": "items", "ledger": "ledger", "latest_parses": "latest_parses", "parses": "all_parses",
          "scores": "all_scores"}


def _reads(selection: Selection) -> dict[str, str]:
    """The relations the stages read for ``selection`` (``_NARROW`` or ``_BROAD``)."""
    return _NARROW if selection.run_ids or selection.item_ids else _BROAD


def _connect(lake: Lake, reads: dict[str, str], names: str) -> duckdb.DuckDBPyConnection:
    """A connection with the views and macros of ``names`` (keys of ``reads``) and run_requests
    only: creating a view binds it, and every view of sql/ took 0.4-0.5 s of CPU, paid by the
    first parse of each process (every sweep of the test suite, every cached sweep)."""
    return lake.connect(" ".join(["run_requests items_of", *(reads[n] for n in names.split())]))


def parse_responses(lake: Lake, selection: Selection) -> StageStats:
    """Parse the selection's ``ok`` responses that lack a parse of the current parser version.

    Each distinct (answer type, text) is parsed once: stored responses repeat (the same answer to
    many prompts, the same reply on every sample), and the rest of the work stays in DuckDB.
    """
    reads = _reads(selection)
    picked, where, params = _selected(selection, reads, "rr.request_id, rr.step")
    with _connect(lake, reads, "items ledger parses") as con:
        selected = con.sql(
            f"""
            WITH {picked},
            -- distinct before the texts join in: the ledger holds one response per request
            asked AS (
                SELECT DISTINCT rr.request_id, rr.step, i.answer_type AS item_answer_type, i.solver, i.steps
                FROM picked rr JOIN {reads["items"]} i ON i.item_id = rr.item_id
                WHERE {where}
            )
            SELECT l.response_id, a.request_id, l.text, l.finish_reason, a.step, a.item_answer_type, a.solver, a.steps
            FROM asked a JOIN {reads["ledger"].format("asked")} l ON l.request_id = a.request_id AND l.status = 'ok'
            """,
            params=params,
        ).to_arrow_table()
        con.register("selected", selected)
        con.register("step_types", _step_types(con))
        # one row per response and parser version that has no parse yet (among the parses of the
        # selected responses only)
        todo = con.sql(
            f"""
            WITH done AS (SELECT response_id, parser_version FROM {reads["parses"].format("selected")})
            SELECT s.response_id, s.request_id, s.text, s.finish_reason, t.answer_type, t.parser_version
            FROM selected s
            JOIN step_types t ON t.item_answer_type IS NOT DISTINCT FROM s.item_answer_type
                AND t.solver IS NOT DISTINCT FROM s.solver AND t.steps IS NOT DISTINCT FROM s.steps
                AND t.step IS NOT DISTINCT FROM s.step
            WHERE NOT EXISTS (SELECT 1 FROM done p
                              WHERE p.response_id = s.response_id AND p.parser_version = t.parser_version)
            QUALIFY row_number() OVER (PARTITION BY s.response_id, t.parser_version) = 1
            """
        ).to_arrow_table()
        con.register("todo", todo)
        parsed = []
        # the finish reason matters only where it marks a cut: other values parse alike
        for answer_type, text, cut in con.sql(
                f"SELECT DISTINCT answer_type, text, finish_reason = '{parsing.TRUNCATED_FINISH}' FROM todo").fetchall():
            one = parsing.parse(answer_type, text, parsing.TRUNCATED_FINISH if cut else None)
            parsed.append((answer_type, text, "1" if cut else None, one.status, one.value, one.extracted,
                           parsing.answer_key(answer_type, one.value)))
        con.register("parsed", _strings(parsed, ("answer_type", "text", "cut", "status", "value", "extracted",
                                                 "canonical")))
        out = con.sql(
            f"""
            SELECT t.response_id, t.request_id, t.answer_type, t.parser_version,
                   p.status, p.value, p.extracted, p.canonical
            FROM todo t JOIN parsed p ON p.answer_type = t.answer_type AND p.text IS NOT DISTINCT FROM t.text
                AND (p.cut IS NOT NULL) = coalesce(t.finish_reason = '{parsing.TRUNCATED_FINISH}', false)
            """
        ).to_arrow_table()
    write_table(lake, "parses", _stamped(out))
    return StageStats(examined=selected.num_rows, written=out.num_rows)


def _selected(selection: Selection, reads: dict[str, str], columns: str) -> tuple[str, str, list[Any]]:
    """The selection's requests: a CTE ``picked`` (the ``columns`` of the ``run_requests`` rows,
    alias ``rr``, that its request clauses select, with the columns its predicate reads and the
    item id) and, for a narrow selection, ``picked_items``
    (their items: ``reads["items"]`` names it), then its whole predicate over ``rr`` and ``i`` (the
    suite is an item's), and the parameters of both, in order."""
    requests, request_params = selection.where(requests_only=True)
    where, params = selection.where()
    ctes = (f"picked AS (SELECT {columns}, rr.run_id, rr.model, rr.item_id, rr.created_at "
            f"FROM run_requests rr WHERE {requests})")
    if reads["items"] == "picked_items":
        ctes += ",\n            picked_items AS (SELECT * FROM items_of('picked'))"
    return ctes, where, request_params + params


def _step_types(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """The answer type and parser version of each distinct step (item answer type, solver, steps,
    step name) of the registered ``selected`` responses."""
    rows = []
    for item_type, solver, steps, step in con.sql(
            "SELECT DISTINCT item_answer_type, solver, steps, step FROM selected").fetchall():
        answer_type = step_answer_type({"answer_type": item_type, "solver": solver, "steps": steps}, step)
        rows.append((item_type, solver, steps, step, answer_type, parsing.parser_version(answer_type)))
    return _strings(rows, ("item_answer_type", "solver", "steps", "step", "answer_type", "parser_version"))


def judge(answer_type: str, gold: str, n_steps: int, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Score one trial from its steps (ordered; each with response status, parse status and value)."""
    if any(s["response_status"] != "ok" for s in steps):
        return {"status": "error", "correct": None, "lenient_correct": None, "predicted": None}
    if len(steps) < n_steps:
        no_answer = [s["parse_status"] for s in steps if s["parse_status"] in ("unparsable", "truncated")]
        status = no_answer[-1] if no_answer else "error"
        return {"status": status, "correct": None, "lenient_correct": None, "predicted": None}
    final = steps[-1]
    if final["parse_status"] != "ok":
        status = "truncated" if final["parse_status"] == "truncated" else "unparsable"
        return {"status": status, "correct": None, "lenient_correct": None, "predicted": None}
    module = parsing.parser_for(answer_type)
    correct = bool(module.matches(final["value"], gold))
    lenient = bool(module.lenient(final["value"], gold)) if hasattr(module, "lenient") else None
    return {"status": "correct" if correct else "wrong", "correct": correct,
            "lenient_correct": lenient, "predicted": final["value"]}


def score_trials(lake: Lake, selection: Selection, run_id: str) -> StageStats:
    """Score the selection's trials that lack a score of the current version over the same responses.

    DuckDB gathers each trial's steps; :func:`judge` runs once per distinct (answer type, gold,
    steps) among the trials to score (stored trials repeat them), and its verdicts are joined back.
    """
    reads = _reads(selection)
    with _connect(lake, reads, "items ledger latest_parses scores") as con:
        trials = _trials_with_steps(con, selection, reads)
        con.register("trials", trials)
        todo = _unscored(con, trials, reads)
        con.register("todo", todo)
        con.register("verdicts", _verdicts(con, trials.schema.field("steps")))
        out = con.sql(
            """
            SELECT t.trial_id, ? AS run_id, t.item_id, t.model, t.sample_idx, t.scorer_version,
                   v.status, v.correct, v.lenient_correct, v.predicted, t.response_ids
            FROM todo t JOIN verdicts v ON v.answer_type = t.answer_type AND v.gold IS NOT DISTINCT FROM t.gold
                AND v.n_steps = t.n_steps AND v.steps IS NOT DISTINCT FROM t.steps
            """,
            params=[run_id],
        ).to_arrow_table()
    write_table(lake, "scores", _stamped(out))
    return StageStats(examined=trials.num_rows, written=out.num_rows)


def _trials_with_steps(con: duckdb.DuckDBPyConnection, selection: Selection, reads: dict[str, str]) -> pa.Table:
    """The selected trials, one row each: item, model, sample, gold, answer type, the number of
    steps the trial must answer, its steps in order (:func:`judge`'s input) and its response ids."""
    picked, where, params = _selected(selection, reads, "rr.trial_id, rr.sample_idx, rr.step_index, rr.request_id")
    return con.sql(
        f"""
        WITH {picked},
        req AS (
            SELECT rr.trial_id, rr.item_id, rr.model, rr.sample_idx, rr.step_index, rr.request_id
            FROM picked rr JOIN {reads["items"]} i ON i.item_id = rr.item_id
            WHERE {where}
            -- the latest request per trial and step among those selected (sql/macros/requests.sql)
            QUALIFY request_recency(rr.trial_id, rr.step_index, rr.created_at) = 1
        ),
        -- each step's ledger row, among those of the selected requests only
        answered AS (
            SELECT req.*, l.response_id, l.status
            FROM req LEFT JOIN {reads["ledger"].format("req")} l ON l.request_id = req.request_id
        ),
        -- one row per trial (its requests share its item, model and sample), its steps gathered
        -- unordered and sorted by step index after: an ordered aggregate took twice as long
        gathered AS (
            SELECT a.trial_id, any_value(a.item_id) AS item_id, any_value(a.model) AS model,
                   any_value(a.sample_idx) AS sample_idx, any_value(i.gold) AS gold,
                   any_value(i.answer_type) AS answer_type,
                   -- the steps a trial must answer (tasks.records.step_plan)
                   ({n_steps_sql("any_value(i.solver)", "any_value(i.steps)")})::BIGINT AS n_steps,
                   list_sort(list({{'step_index': a.step_index, 'response_id': a.response_id,
                                    'response_status': a.status, 'parse_status': p.status,
                                    'value': p.value}})) AS steps
            FROM answered a
            JOIN {reads["items"]} i ON i.item_id = a.item_id
            LEFT JOIN {reads["latest_parses"].format("answered")} p ON p.response_id = a.response_id
            GROUP BY a.trial_id
        )
        SELECT trial_id, item_id, model, sample_idx, gold, answer_type, n_steps,
               -- judge's input: the steps without their response ids
               list_transform(steps, lambda s: {{'response_status': s.response_status,
                                                 'parse_status': s.parse_status, 'value': s.value}}) AS steps,
               -- json.dumps of the ids, as stored before (the same text for ASCII ids: uuid hex)
               '[' || array_to_string(list_transform(steps, lambda s: coalesce(to_json(s.response_id)::VARCHAR,
                                                                               'null')), ', ') || ']' AS response_ids
        FROM gathered
        """,
        params=params,
    ).to_arrow_table()


def _unscored(con: duckdb.DuckDBPyConnection, trials: pa.Table, reads: dict[str, str]) -> pa.Table:
    """The ``trials`` (registered under that name) without a score of their current scorer
    version over the same responses (among the scores of those trials only), each with that version."""
    versions = [(t, scorer_version(t)) for t in pc.unique(trials["answer_type"]).to_pylist()]
    con.register("versions", _strings(versions, ("answer_type", "scorer_version")))
    return con.sql(
        f"""
        WITH done AS (SELECT trial_id, scorer_version, response_ids FROM {reads["scores"].format("trials")})
        SELECT t.*, v.scorer_version
        FROM trials t JOIN versions v USING (answer_type)
        WHERE NOT EXISTS (SELECT 1 FROM done s WHERE s.trial_id = t.trial_id
                          AND s.scorer_version = v.scorer_version AND s.response_ids = t.response_ids)
        """
    ).to_arrow_table()


def _verdicts(con: duckdb.DuckDBPyConnection, steps_field: pa.Field) -> pa.Table:
    """:func:`judge`'s verdict on each distinct (answer type, gold, n_steps, steps) of the
    registered ``todo``, with those four; ``steps_field`` is the field DuckDB gives the steps, so
    that the verdicts join back on them."""
    verdicts = [
        {"answer_type": answer_type, "gold": gold, "n_steps": n_steps, "steps": steps,
         **judge(answer_type, gold, n_steps, steps)}
        for answer_type, gold, n_steps, steps in con.sql(
            "SELECT DISTINCT answer_type, gold, n_steps, steps FROM todo").fetchall()
    ]
    return pa.Table.from_pylist(verdicts, schema=_VERDICT.set(_VERDICT.get_field_index("steps"), steps_field))


# What score_trials joins judge's verdicts on, then judge's verdict.
_VERDICT = pa.schema([
    ("answer_type", pa.string()), ("gold", pa.string()), ("n_steps", pa.int64()),
    ("steps", pa.null()),  # the type DuckDB gives the trial's steps
    ("status", pa.string()), ("correct", pa.bool_()), ("lenient_correct", pa.bool_()), ("predicted", pa.string()),
])


def _strings(rows: list[tuple], names: tuple[str, ...]) -> pa.Table:
    """Rows of strings (or None) as an Arrow table, typed even when empty."""
    return pa.Table.from_pylist([dict(zip(names, r)) for r in rows],
                                schema=pa.schema([(n, pa.string()) for n in names]))


def _stamped(table: pa.Table) -> pa.Table:
    """``table`` with a ``created_at`` column: now, on every row."""
    now = pa.scalar(now_utc(), pa.timestamp("us", tz="UTC"))
    return table.append_column("created_at", pa.repeat(now, table.num_rows))
