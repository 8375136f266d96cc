"""A sweep's run: generate → dedupe/validate → call → parse → score → store, the same inside the
``sweep`` flow (:mod:`flows.sweep`) and without Prefect.

Generation, validation, parsing and scoring work chunk by chunk (up to ``sweep.batch_size`` items),
never item by item, and the calls are one stream per model, every model at once, each chunk parsed
and scored while the calls go on (the stages are in :mod:`flows.stages`: task runs inside a flow
run); with ``sweep.report`` the ``stats`` task then computes the statistics and the ``report``
task draws the report from the warehouse. Nothing reaches the lake before every chunk has passed
validation, so a failing expectation leaves the lake untouched.

``invarbench sweep`` runs a sweep whose every answer is already in the ledger without Prefect
(:func:`unanswered_trials` decides): its run is recorded in ``runs`` as any other, with no flow
run; the progress and summary artifacts exist only inside a flow run.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Sequence

import pyarrow as pa

from flows.stages import (
    VALIDATION_ROWS,
    artifact_key,
    generate_items,
    load_datasets,
    STORE_ROWS,
    store_items_chunks,
    stream_sweep,
    validate_chunks,
)
from tasks import progress
from tasks.config import Config, load_config
from tasks.environment import apply_defaults
from tasks.items.compact import (
    ItemRows,
    concat,
    consecutive_groups,
    item_ids,
    items_table,
    pack,
    table_chunks,
    unpack,
)
from tasks.items.features import add_features
from tasks.items.validate import dedupe_table, dropped_family
from tasks.lake.lake import Lake
from tasks.lake.writes import stored_item_ids
from tasks.models import embedded
from tasks.models.call import CallStats
from tasks.models.cost import BudgetExceeded
from tasks.models.stream import ITEM_COLUMNS
from tasks.records import canonical_json, content_hash
from tasks.runs import lifecycle, stopping
from tasks.runs.orchestration import in_flow_run, run_logger, stage_task
from tasks.runs.plan import plan_columns, plan_key
from tasks.suites.base import GeneratorError

# Items per chunk of the calls, parses and scores of a sweep whose every answer is in the ledger:
# a chunk's fixed costs (a connection's views, the materialised views' currency, a commit) were most
# of such a sweep's time at 1,000 items a chunk, while the stream holds up to LOOKAHEAD chunks'
# request rows at once (about 6 KB an item), so larger chunks would cost memory, not time.
ANSWERED_CHUNK = 10_000


@stage_task(name="stats")
def compute_statistics(cfg: Config) -> dict[str, Any]:
    """The statistics SQL cannot compute (bootstrap intervals, regressions) over the warehouse,
    written to the lake for the report and the views to read."""
    from tasks.analysis.stats import (
        compute_stats,  # scipy and polars: loaded only by a sweep that reports
    )

    with progress.stage("statistics", 1) as advance:
        summary = compute_stats(Lake.of(cfg), resamples=cfg.sweep.bootstrap_resamples, seed=cfg.sweep.seed)
        advance(1)
    return summary


@stage_task(name="report")
def write_report(cfg: Config, run_id: str) -> Path:
    """The HTML report with its figures, read from the warehouse (it writes nothing to the lake)."""
    from tasks.report.html import (
        build_report,  # matplotlib: loaded only by a sweep that reports
    )

    with progress.stage("report", 1) as advance:
        path = build_report(cfg, cfg.warehouse_path / "reports" / run_id)
        advance(1)
    return path


def headline(lake: Lake, run_id: str) -> list[dict[str, Any]]:
    """Per model, suite, task and bin: accuracy of this run's trials (all variants together),
    read from the ``run_accuracy_by_bin`` mart (rounded for the summary)."""
    return lake.read(
        """
        SELECT model, suite, task, bin, bin_lo, n_scored, n_correct, n_unparsable, n_error,
               round(accuracy, 3) AS accuracy
        FROM run_accuracy_by_bin WHERE run_id = ?
        ORDER BY model, suite, task, bin_lo
        """,
        [run_id],
    )


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """A markdown table of ``rows`` (for the Prefect artifact)."""
    if not rows:
        return "_no scored trials_"
    cols = [c for c in rows[0] if c != "bin_lo"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def concurrency_rows(concurrency: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Per model: the smallest and final adaptive concurrency and the throttled attempts (429s)."""
    return [{"model": m, "min_concurrency": c["min"], "final_concurrency": c["final"], "throttled_429": c["throttled"]}
            for m, c in sorted(concurrency.items())]


def model_rows(per_model: dict[str, CallStats]) -> list[dict[str, Any]]:
    """Per model: the wall time of its stream (start to end; 0 for dispatched units), and what it sent."""
    return [{"model": m, "wall_s": round(s.elapsed_s, 2), "requests": s.requests, "sent": s.sent,
             "cached": s.cached, "errors": s.errors, "unsent": s.unsent} for m, s in per_model.items()]


def progress_artifacts(models: Sequence[str], n_chunks: int, run_id: str) -> dict[str, Callable[[float], None]]:
    """Per model, a function that sets its progress artifact to a share done (in percent); outside
    a flow run there is no artifact and the functions do nothing."""
    if not in_flow_run():
        return {m: lambda share: None for m in models}
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    return {m: functools.partial(update_progress_artifact, create_progress_artifact(
        0.0 if n_chunks else 100.0, key=artifact_key(m),
        description=f"invarbench sweep {run_id}: share of {m}'s {n_chunks} chunk(s) answered, parsed and scored"))
        for m in models}


def run_models(lake: Lake, chunks: list[list[dict[str, Any]]], cfg: Config, run_id: str, config_path: str | None,
               overrides: dict[str, Any] | None, dispatch: bool) -> dict[str, CallStats]:
    """Every model on every chunk, here as one stream per model or dispatched to workers, with one
    progress artifact per model (the share of its chunks parsed and scored). Per model, its stats."""
    models = cfg.sweep.models
    show = progress_artifacts(models, len(chunks), run_id)
    done = dict.fromkeys(models, 0)

    def chunk_done(model: str) -> None:  # called by one thread only, the stream's Finisher
        done[model] += 1
        show[model](100.0 * done[model] / len(chunks))

    try:
        if dispatch:
            # Prefect's client, imported only here: a dispatched sweep runs in a flow run.
            from flows import unit as scale_out

            # Units finish on workers in any order: every model's figure shows the run's share done.
            units = [(m, i) for m in models for i in range(len(chunks))]
            totals = scale_out.dispatch_units(lake, config_path, overrides, run_id, units, chunks,
                                              lambda n: [s(100.0 * n / len(units)) for s in show.values()])
            return {m: totals.get(m, CallStats()) for m in models}
        return stream_sweep(lake, chunks, cfg, run_id, chunk_done)
    finally:
        embedded.stop_all()  # the embedded models' worker processes end with the calls


# The run's items (an Arrow table of the lake's ``items`` schema, tasks.items.compact), how many
# identical ones were dropped, and the families dropped for repeating a prompt of another.
Collected = tuple[pa.Table, int, list[dict[str, Any]]]


def collect_items(cfg: Config) -> Collected:
    """The run's item rows: generated (a generator's error names its parameters' key) and read
    from the configured datasets, deduplicated, as one table (a task's rows made into Arrow as
    they are generated: tasks.items.compact). Returns the table, how many identical rows were
    dropped and the families dropped for repeating a prompt of another."""
    tables: list[pa.Table] = []
    selected = cfg.selected_tasks()
    with progress.stage("generate", len(selected)) as advance:
        for suite, task_name in selected:
            try:
                tables.append(generate_items(suite, task_name, cfg.task_params(suite, task_name), cfg.sweep.seed))
            except GeneratorError as exc:
                raise GeneratorError(f"suites.{suite}.params.{task_name}: {exc}") from None
            advance(1)
    if cfg.sweep.datasets:
        tables.append(items_table(load_datasets(Lake.of(cfg), cfg.sweep.datasets)))
    return dedupe_table(concat(tables))


# The items the CLI collected to check the generators, left for the flow run it starts in this
# process (:func:`hand_over`): at most one (key, items).
_HANDED: list[tuple[str, Collected]] = []


def items_key(cfg: Config) -> str:
    """What :func:`collect_items` of ``cfg`` depends on: its resolved configuration (selection
    included) and the lake its datasets are read from."""
    return content_hash({"config": cfg.resolved(), "lake": cfg.lake_path}, length=0)


def hand_over(cfg: Config, collected: Collected | None) -> None:
    """Leave ``collected`` (:func:`collect_items` of ``cfg``) to this process's next
    :func:`prepare_items`, which takes it instead of generating every item again (about 20 s of
    CPU at 200,000 items) when its configuration has the same :func:`items_key`; None drops what
    was left. The CLI collects the items before Prefect starts, to reject a generator's bad
    parameter at once; they are no parameter of the ``sweep`` flow, as Prefect would serialise
    and validate a table of 0.37 GB (200,000 items) for its server. A flow run in another process
    (a deployment's, a dispatched one) finds nothing here and collects its items."""
    _HANDED.clear()
    if collected is not None:
        _HANDED.append((items_key(cfg), collected))


def _handed(cfg: Config) -> Collected | None:
    """The items handed over for ``cfg``, or None; the slot is emptied either way (taken once)."""
    if not _HANDED:
        return None
    key, collected = _HANDED.pop()
    return collected if key == items_key(cfg) else None


Prepared = tuple[int, dict[int, pa.Buffer], list[pa.Buffer], list[dict[str, Any]]]


def prepare_items(cfg: Config, collected: Collected | None = None) -> Prepared:
    """The run's items (``collected``, else those handed over: :func:`hand_over`, else
    :func:`collect_items`), validated (the chunks with an item the lake does not hold, with their
    surface features; up to VALIDATION_ROWS rows at once) before anything is written. Returns
    how many items, those chunks by number, every chunk (each a table of the ``items`` schema,
    packed: tasks.items.compact.pack; a validated one with its features) and the families
    dropped for repeating a prompt of another."""
    logger = run_logger()
    table, identical, dropped_families = collected or _handed(cfg) or collect_items(cfg)
    del collected  # the chunks hold the rows from here: each validated one is replaced by its copy
    for d in dropped_families:
        logger.warning("%s", dropped_family(d))
    n_items, chunks = table.num_rows, table_chunks(table, cfg.sweep.batch_size)
    # Items are content-addressed: a chunk the lake already holds whole passed validation when it
    # was stored, so only chunks with a new item are checked (and Great Expectations is imported).
    # Read-only: nothing (not even a schema file) is written before every chunk has passed.
    stored = stored_item_ids(Lake.of(cfg, read_only=True), item_ids(table))
    del table
    fresh = [i for i, chunk in enumerate(chunks) if any(item_id not in stored for item_id in item_ids(chunk))]
    with progress.stage("validate", len(fresh)) as advance:
        for group in [[fresh[p] for p in g] for g in consecutive_groups([chunks[i].num_rows for i in fresh], VALIDATION_ROWS)]:
            # A chunk's rows are dicts only while validated; the chunk is then the lake's table (features
            # included), held packed until the calls (a ninth of its size) once all have passed.
            rows = {i: add_features(chunks[i].to_pylist()) for i in group}
            validate_chunks([row for i in group for row in rows[i]], group[0], group[-1])
            for i in group:
                chunks[i] = items_table(rows.pop(i))
            advance(len(group))
    packed = [pack(chunk) for chunk in chunks]
    logger.info("generated %d items (%d identical dropped, %d repeated families dropped) in %d chunk(s), "
                "%d already stored and not validated again", n_items, identical, len(dropped_families),
                len(chunks), len(chunks) - len(fresh))
    return n_items, {i: packed[i] for i in fresh}, packed, dropped_families


def start_run(cfg: Config, run_id: str, n_items: int, plan: dict[str, Any]) -> lifecycle.Run:
    """The run, started (its `running` row written, with ``plan``: its plan's columns,
    :func:`tasks.runs.plan.plan_columns`) once the lake is usable, the stale runs of earlier
    processes are marked crashed and no stop was asked for."""
    logger = run_logger()
    lake = Lake.of(cfg)
    lake.ensure()  # an unusable lake (wrong credentials, no bucket) stops here, before anything is written
    # Runs of earlier processes that died without a word (SIGKILL, power loss) end here as
    # `crashed`; after validation, so that a sweep stopped by it has written nothing at all. A
    # lake this process has just made and not written to holds no run to read (a query of 50-80 ms
    # of CPU); one another process began and lost since, in those milliseconds, the next sweep marks.
    for stale in [] if lake.made_empty_here else lifecycle.mark_stale_crashed(lake):
        logger.warning("run %s marked crashed: %s", stale["run_id"], stale["message"])
    stopping.raise_if_requested()  # stopped before its run began: nothing of it is written
    return lifecycle.begin(lake, "sweep", config=canonical_json(cfg.resolved()), models=cfg.sweep.models,
                           run_id=run_id, n_items=n_items, **plan)


def run_sweep(run: lifecycle.Run, cfg: Config, n_items: int, new_chunks: dict[int, pa.Buffer],
              chunks: list[Any], dropped_families: list[dict[str, Any]], config_path: str | None,
              overrides: dict[str, Any] | None, dispatch: bool) -> tuple[dict[str, Any], CallStats]:
    """The run's main body: store the items of ``new_chunks`` (those holding an item the lake did
    not, by chunk number; the others it holds whole), call every model on ``chunks`` (each chunk
    parsed and scored as it is answered; ``chunks`` is first cut in place to the columns the calls
    read, :class:`tasks.items.compact.ItemRows`), rebuild the catalog, then
    the statistics and report with ``sweep.report``. The run ends `completed`, `waiting` (batch
    jobs still running) or as the exception that stopped it. Returns the run summary and the call totals."""
    lake = Lake.of(cfg)
    crashes_before = len(embedded.crashes())
    with run:  # an exception ends the run failed or cancelled, with the counts kept so far
        # The calls read five columns of an item (tasks.models.stream.ITEM_COLUMNS), as dicts a chunk at a time: the
        # others go once the items are stored, in place, so that no caller's reference keeps them alive.
        chunks[:] = [ItemRows(unpack(chunk).select(ITEM_COLUMNS)) for chunk in chunks]
        with progress.stage("store items", len(new_chunks)) as advance:
            fresh = list(new_chunks)
            for group in [[fresh[p] for p in g] for g in consecutive_groups([len(chunks[i]) for i in fresh], STORE_ROWS)]:
                store_items_chunks(lake, concat(unpack(new_chunks.pop(i)) for i in group), group[0], group[-1])
                advance(len(group))

        per_model = run_models(lake, chunks, cfg, run.run_id, config_path, overrides, dispatch)
        totals = CallStats.total(per_model.values())
        run.count(n_requests=totals.requests, n_sent=totals.sent, n_cached=totals.cached, n_errors=totals.errors)
        stopping.raise_if_requested()  # the run ends `cancelled`, with the counts of what it did
        budget = next((s.budget for s in per_model.values() if s.budget), "")
        if budget:
            raise BudgetExceeded(budget)  # after every model ended: what was answered is parsed and scored

        # The summary is read while the catalog is rebuilt (in a thread: lifecycle.rebuilding_catalog).
        with lifecycle.rebuilding_catalog(cfg) as catalog:
            # Every other model has had its turn; what the dead worker had answered is stored.
            embedded.check_crashes(crashes_before)
            summary = summarize(cfg, run, n_items, dropped_families, per_model, totals, catalog)
        # A run whose batch jobs are still running is not done: the next sweep collects them.
        if totals.waiting:
            run.wait(f"{totals.waiting} request(s) wait in provider batch jobs; the next sweep collects them",
                     report_path=summary["report"])
        else:
            run.finish(report_path=summary["report"])
    return summary, totals


def summarize(cfg: Config, run: lifecycle.Run, n_items: int, dropped_families: list[dict[str, Any]],
              per_model: dict[str, CallStats], totals: CallStats, catalog: Path) -> dict[str, Any]:
    """The run summary: what was sent, the headline table, the report (drawn here with
    ``sweep.report``), cost, concurrency and each model's stream."""
    lake, run_id = Lake.of(cfg), run.run_id
    table = headline(lake, run_id)
    report = None
    if cfg.sweep.report:
        compute_statistics(cfg)
        report = write_report(cfg, run_id)
    return {
        "run_id": run_id, "flow_run_id": run.flow_run_id, "items": n_items,
        "requests": totals.requests, "sent": totals.sent, "cached": totals.cached, "errors": totals.errors,
        "dropped_families": dropped_families,
        "warehouse": str(cfg.warehouse_path), "catalog": str(catalog), "lake": lake.location, "headline": table,
        "report": str(report) if report else None, "waiting": totals.waiting,
        "concurrency": totals.concurrency, "models": model_rows(per_model),
        "cost": lake.read("SELECT model, prompt_tokens, completion_tokens, cost_usd, n_unpriced "
                          "FROM cost_by_run WHERE run_id = ? ORDER BY model", [run_id]),
    }


def summary_artifact(summary: dict[str, Any]) -> None:
    """The run summary as the flow run's ``sweep-summary`` markdown artifact."""
    from prefect.artifacts import create_markdown_artifact

    run_id, table = summary["run_id"], summary["headline"]
    create_markdown_artifact(
        key="sweep-summary",
        markdown=(f"# invarbench sweep {run_id}\n\n{summary['items']} items, {summary['requests']} requests "
                  f"({summary['sent']} sent, {summary['cached']} from the ledger, {summary['errors']} errors).\n\n"
                  f"Warehouse: `{summary['warehouse']}`\n\nReport: `{summary['report'] or 'not built'}`\n\n"
                  f"{markdown_table(table)}\n\n## Cost and concurrency\n\n{markdown_table(summary['cost'])}\n\n"
                  f"{markdown_table(concurrency_rows(summary['concurrency']))}\n\n## Models\n\n"
                  f"{markdown_table(summary['models'])}\n"),
        description=f"invarbench sweep {run_id}",
    )


def perform_sweep(config_path: str | None = None, overrides: dict[str, Any] | None = None,
                  dispatch: bool = False, select: dict[str, list[str]] | None = None,
                  collected: Collected | None = None, answered: bool = False) -> dict[str, Any]:
    """Run a sweep: every configured task on every configured model. Returns the run summary.

    ``select`` (keys ``suites``, ``tasks``, ``datasets``: the CLI's filters) restricts the run to
    what it names (:meth:`Config.select`); the run's stored configuration is the restricted one.
    With ``dispatch`` (inside a flow run only), each (model, chunk) unit runs as a flow run of the
    ``sweep-unit`` deployment that any worker on the pool may pick up (:mod:`flows.unit`); without
    it, here. ``collected``: the items, when the caller has collected them already
    (:func:`collect_items`; the CLI hands a flow run its items over instead, :func:`hand_over`).
    ``answered``: the caller found every answer in the ledger; the calls, parses and scores
    then take chunks of at least :data:`ANSWERED_CHUNK` items (bench/results.md,
    "Cached sweep at 200,000 items"); the rows are the same. Inside a flow run the summary is also
    its ``sweep-summary`` artifact.
    """
    apply_defaults()
    cfg = load_config(config_path, overrides).select(**(select or {}))
    stopping.configure(cfg.sweep.stop_grace_s, cfg.sweep.cancel_poll_s)
    if dispatch:
        from flows import unit as scale_out

        scale_out.require_server()
    run_id = lifecycle.new_run_id()
    with stopping.interruptible():  # reads only: a stop ends it at once, before the run begins
        n_items, new_chunks, chunks, dropped_families = prepare_items(cfg, collected)
    del collected  # the chunks hold the rows now: run_sweep cuts them to what the calls read once stored
    # A dispatched sweep's rows are written by its workers: it is no template (tasks.runs.plan).
    run = start_run(cfg, run_id, n_items, plan_columns(None if dispatch else plan_key(cfg), dropped_families))
    if answered:
        chunks = [pack(c) for c in table_chunks(concat(map(unpack, chunks)), max(cfg.sweep.batch_size, ANSWERED_CHUNK))]
    summary, _ = run_sweep(run, cfg, n_items, new_chunks, chunks, dropped_families, config_path, overrides,
                           dispatch)
    if in_flow_run():
        summary_artifact(summary)
    return summary
