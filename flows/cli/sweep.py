"""``invarbench sweep``: its checks before the flow starts, the flow, stopping it cleanly, and the
summary it prints."""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Optional

import typer

from flows.cli.application import ConfigOpt, app, console, err, fail, load, print_rows
from flows.cli.prefect_server import TemporaryServer, spawn_server, start_prefect_server
from flows.cli.progress_bars import progress_bars
from flows.cli.stored import check_stored
from tasks.environment import settle_collector
from tasks.errors import ConfigError, storage_full
from tasks.runs import stopping
from tasks.suites.base import GeneratorError


def sweep_config(config: Optional[Path], overrides: dict[str, Any], select: dict[str, list[str]]) -> Any:
    """The sweep's configuration, its filters applied; exit 2 with one line when either is wrong."""
    try:
        return load(config, overrides).select(**select)
    except ConfigError as exc:
        fail(str(exc))


def check_sweep(cfg: Any) -> Any:
    """Everything else a sweep could reject, checked before its flow starts: the stored datasets
    and the generators' parameters (a parameter only a generator checks, ``n_step = -10``, fails
    here in a fraction of a second instead of after Prefect has started); exit 2 with one line
    otherwise. Returns the collected items (:data:`flows.sweep_run.Collected`: a table)."""
    from flows.sweep_run import collect_items

    try:
        if cfg.sweep.datasets:
            from tasks.lake.lake import Lake

            check_stored(Lake.of(cfg), "sweep.datasets", cfg.sweep.datasets)
        return collect_items(cfg)
    except (ConfigError, GeneratorError) as exc:
        fail(str(exc))


def answered_already(cfg: Any, rows: list[dict[str, Any]]) -> bool:
    """Whether every trial of the sweep has its answers in the ledger (one anti-join per model):
    such a sweep calls nothing and runs without Prefect."""
    import duckdb

    from tasks.lake.lake import Lake
    from tasks.models.call import unanswered_trials

    lake = Lake.of(cfg, read_only=True)
    if rows and _new_local_lake(cfg):
        # A new local warehouse answers none of them. Not asking its DuckDB (0.3-0.5 s of CPU to open)
        # saves that much; preload opens it while the server boots.
        return False
    try:
        return all(unanswered_trials(lake, rows, m, cfg.model(m), cfg.sweep.samples) == 0 for m in cfg.sweep.models)
    except duckdb.Error:  # a data file that does not read: the sweep's own reads set it aside (tasks.lake.quarantine)
        return False


def _new_local_lake(cfg: Any) -> bool:
    """Whether the sweep's lake is a local folder that holds no lake yet (no catalog, no lake of an
    earlier layout to import): it holds no answer and no earlier run, and nothing opens its DuckDB
    to know."""
    from tasks.lake import old_layout
    from tasks.lake.lake import Lake

    lake = Lake.of(cfg, read_only=True)
    return not lake.has_catalog() and not lake.is_url and not old_layout.found(lake.root, url=False)


def _no_lake_folder(cfg: Any) -> bool:
    """Whether the sweep's lake is a local folder, with its catalog inside, that does not exist
    yet: so a new local lake (:func:`_new_local_lake`), known without importing the lake's
    modules (pyarrow: 0.13 s of CPU before Prefect's server is spawned)."""
    return "://" not in cfg.lake_path and cfg.lake_catalog is None and not Path(cfg.lake_path).expanduser().exists()


@app.command()
def sweep(
    config: Optional[Path] = ConfigOpt,
    models: Optional[str] = typer.Option(None, help="comma-separated model names (overrides sweep.models)"),
    samples: Optional[int] = typer.Option(None, help="repeats per item (overrides sweep.samples)"),
    warehouse: Optional[str] = typer.Option(None, help="warehouse folder (overrides warehouse.path)"),
    batch_size: Optional[int] = typer.Option(None, help="items per chunk: the unit of validation, storing, parsing and scoring (overrides sweep.batch_size)"),
    suite: Optional[list[str]] = typer.Option(None, "--suite", help="run this suite (repeatable; a filter: "
                                              "only what --suite, --task and --dataset name runs)"),
    task: Optional[list[str]] = typer.Option(None, "--task", help="run this task: suite.task, or a task name "
                                             "that one suite alone has (repeatable; a filter)"),
    dataset: Optional[list[str]] = typer.Option(None, "--dataset", help="run this stored dataset id "
                                                "(repeatable; a filter: alone, it runs only the dataset)"),
) -> None:
    """Run a sweep: generate, validate, call every model, parse, score, store; print the headline table.

    Without --suite, --task or --dataset the configuration says what runs; with any of them, only
    what they name runs.
    """
    overrides = _overrides(models, samples, warehouse, batch_size)
    select = {"suites": list(suite or []), "tasks": list(task or []), "datasets": list(dataset or [])}
    cfg = sweep_config(config, overrides, select)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # this process's Prefect and its server's
    # Prefect's temporary server boots (about 3 s of CPU, a cold sweep's critical path) in its own
    # process while this one checks and collects the items: spawned first on a new local
    # warehouse (it holds no answer, so the sweep calls), else once no earlier run of the same plan
    # answers it, and discarded when the ledger does. Great Expectations' worker is started as
    # early, on a new warehouse: it holds none of the items, so the sweep validates them.
    new_lake = _no_lake_folder(cfg)
    early = spawn_server() if new_lake else None
    if new_lake:
        _start_validation()
    with stopped_cleanly():
        summary = _known_sweep(cfg)
    if summary is None:
        early = early or spawn_server()
        from flows.sweep_run import hand_over
        from tasks.items import compact

        collected = check_sweep(cfg)
        answered = answered_already(cfg, compact.ItemRows(collected[0]))
        item_ids = compact.item_ids(collected[0])
        if not answered:
            # The flow takes the items in this process (its parameters go to Prefect's server), so
            # it does not generate them again; this frame keeps their ids, not the rows.
            hand_over(cfg, collected)
            collected = None
        elif early is not None:
            early.discard()
            early = None
        with stopped_cleanly():
            try:
                summary = _run_sweep(config, overrides, select, cfg, collected, item_ids, answered, early)
            finally:
                hand_over(cfg, None)  # not kept when the flow failed before taking them
    elif early is not None:
        early.discard()
    _print_summary(summary)


def _overrides(models: Optional[str], samples: Optional[int], warehouse: Optional[str],
               batch_size: Optional[int]) -> dict[str, Any]:
    """The configuration's values the command's options override (the shape of the file's tables)."""
    sweep: dict[str, Any] = {}
    if models:
        sweep["models"] = [m.strip() for m in models.split(",") if m.strip()]
    if samples is not None:
        sweep["samples"] = samples
    if batch_size is not None:
        sweep["batch_size"] = batch_size
    overrides: dict[str, Any] = {"sweep": sweep} if sweep else {}
    if warehouse:
        overrides["warehouse"] = {"path": warehouse}
    return overrides


def _known_sweep(cfg: Any) -> Optional[dict[str, Any]]:
    """The sweep recorded from an earlier run of the same plan whose answers the ledger holds
    (flows.known_sweep: no item generated, no Prefect), or None when there is no such run."""
    from flows.known_sweep import known_template, record_known_sweep

    with stopping.interruptible():  # reads only
        template = known_template(cfg)
    if template is None:
        return None
    return _performed(functools.partial(record_known_sweep, cfg, template))


@contextlib.contextmanager
def stopped_cleanly() -> Iterator[None]:
    """SIGTERM and Ctrl-C stop the sweep cleanly (tasks.runs.stopping): it ends with exit code 130
    or 143 and a message; the Prefect server this process started ends with it."""
    stopping.reset()
    try:
        with stopping.on_signals():
            yield
    except (stopping.Stopped, stopping.StopNow) as exc:
        why = str(exc) if isinstance(exc, stopping.StopNow) else stopping.reason()
        fail(f"sweep stopped ({why}). Its run, if it had begun, reads `cancelled` (invarbench runs); every "
             "answer received is stored, and the next sweep sends only what has none.", stopping.exit_code())


# A sweep validates every chunk before its first call (flows.sweep_run.prepare_items): its Great
# Expectations worker, about 0.3 GB, is stopped this long after the last validation.
VALIDATOR_IDLE_S = 5.0


def _start_validation() -> None:
    """Start Great Expectations' worker process (tasks.items.validate.prepare): its import, about
    1.7 s of CPU, runs on the other core while this process imports Prefect and the temporary
    server boots, instead of on this process's critical path."""
    from tasks.items import validate

    validate.prepare(idle_s=VALIDATOR_IDLE_S)


def _lacks_items(cfg: Any, item_ids: list[str]) -> bool:
    """Whether the lake lacks some of the items (one query): the sweep then validates their chunks."""
    from tasks.lake.lake import Lake
    from tasks.lake.writes import stored_item_ids

    return len(stored_item_ids(Lake.of(cfg, read_only=True), item_ids)) < len(item_ids)


def preload(cfg: Any, validating: bool) -> None:
    """Import what a sweep with calls to make needs later on its critical path, while Prefect's
    temporary server boots in its own process (this process would otherwise wait idle): what each
    model's first request asks of litellm (:func:`tasks.models.direct.prepare`: litellm itself only
    for a model the direct path does not serve, or whose answers no earlier process kept); when the
    sweep validates items (``validating``), the tokenizer of their surface features (Great
    Expectations imports in a process of its own: :func:`_start_validation`); and what Prefect
    imports only once the flow is called (its flow and task engines, the encoder of the flow's
    parameters: about 1 s of CPU at the flow's start otherwise), and what the flow's steps would
    import on its critical path once the server is up (the progress artifacts; the Arrow scan
    DuckDB imports to store the first rows)."""
    import fastapi.encoders  # noqa: F401  (prefect.flows validates parameters with it)
    import prefect.artifacts  # noqa: F401
    import prefect.flow_engine  # noqa: F401
    import prefect.task_engine  # noqa: F401
    import prefect.utilities.visualization  # noqa: F401
    import pyarrow.dataset  # noqa: F401

    from tasks.items import features
    from tasks.models.direct import prepare

    for name in cfg.sweep.models:
        prepare(cfg.model(name), cfg.sweep.samples)
    if validating:
        features.prepare()


def _run_sweep(config: Optional[Path], overrides: dict[str, Any], select: dict[str, list[str]],
               cfg: Any, collected: Any, item_ids: list[str], answered: bool,
               early: Optional[TemporaryServer] = None) -> dict[str, Any]:
    """The sweep, as the ``sweep`` flow; or, when every answer is in the ledger (``answered``),
    without Prefect: neither its import nor its temporary server (most of such a sweep's time),
    and no flow run (docs/operations.md). ``collected``: the items (None for the flow, which
    takes them from :func:`flows.sweep_run.hand_over`); ``item_ids``: their ids; ``early``: the
    temporary server spawned already (:func:`flows.cli.prefect_server.spawn_server`)."""
    on_server: ContextManager[object] = contextlib.nullcontext()
    # Start-up (seconds of imports and the server's boot) has nothing in flight: a signal ends it at once.
    with stopping.interruptible():
        if not answered:
            # Asked first (it opens the lake's DuckDB: preload would, while the server boots), so
            # that Great Expectations imports in its worker while this process imports Prefect.
            validating = _lacks_items(cfg, item_ids)
            if validating:
                _start_validation()
            server_up = start_prefect_server(early)
            from flows.sweep import sweep as run  # imported while the server boots

            preload(cfg, validating)
            on_server = server_up()
        else:
            from flows.sweep_run import perform_sweep

            run = functools.partial(perform_sweep, collected=collected, answered=True)
    settle_collector()  # what start-up made (the imports, the configuration, the items) lives as long as the run
    with on_server:
        return _performed(functools.partial(run, str(config) if config else None, overrides, select=select))


def _performed(sweep: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``sweep()``'s summary, its progress shown as bars; a stop ends it with ``Stopped``, a known
    failure with its message (:func:`_fail_on`)."""
    try:
        with progress_bars():
            return sweep()
    except Exception as exc:
        # First, so that a stop never waits for what naming the other errors imports (litellm, if not yet).
        if stopping.requested():  # a stopped flow raises Prefect's CancelledRun; a sweep without Prefect, what stopped it
            raise stopping.Stopped(stopping.reason()) from None
        _fail_on(exc)
        raise


def _fail_on(exc: Exception) -> None:
    """Exit with the message of a sweep's known failures; return for any other exception."""
    from tasks.items.validate import ValidationFailed
    from tasks.models import embedded
    from tasks.models.cost import BudgetExceeded

    if isinstance(exc, ValidationFailed):
        fail(f"validation failed, nothing was stored and no model was called:\n{exc}", 1)
    if isinstance(exc, embedded.EmbeddedModelCrashed):
        fail(f"{exc}\nThe run ended `failed` (see `invarbench runs`). Every answer received is stored and "
             "the other models ran; the requests the dead worker did not answer are `error` responses, "
             "which the next sweep sends again. See the README, \"When an embedded model crashes\".", 1)
    if isinstance(exc, BudgetExceeded):
        fail(f"run failed: {exc}", 1)
    if isinstance(exc, (ConfigError, GeneratorError)):
        fail(str(exc))
    if full := storage_full(exc):
        fail(f"run failed: a write found the {full} full ({str(exc).splitlines()[0]}). What was stored before stays "
             "whole (a write is one DuckLake commit: a file cut short is in no snapshot, and compact deletes it); "
             "free some space and run the sweep again: it resumes, sending only what has no answer.", 1)


def _print_summary(summary: dict[str, Any]) -> None:
    from flows.sweep_run import concurrency_rows

    print_rows([{k: v for k, v in r.items() if k != "bin_lo"} for r in summary["headline"]],
               title=f"run {summary['run_id']}: accuracy per task and bin")
    console.print(
        f"{summary['items']} items, {summary['requests']} requests: {summary['sent']} sent, "
        f"{summary['cached']} from the ledger, {summary['errors']} errors\n"
        f"warehouse: {summary['warehouse']}\ncatalog:   {summary['catalog']}  "
        f"(invarbench sql \"SELECT * FROM accuracy_by_bin\")\n"
        f"prefect flow run: {summary['flow_run_id'] or 'none (every answer was in the ledger)'}",
        highlight=False,
    )
    if summary.get("report"):
        console.print(f"report:    {summary['report']}", highlight=False)
    if summary["dropped_families"]:
        err.print(f"{len(summary['dropped_families'])} family(ies) dropped: each repeats a prompt of an "
                  "earlier family of its suite (one problem counts once)", style="yellow", highlight=False)
    print_rows(summary["cost"], title="tokens and cost of this run (USD; empty = no price known)")
    print_rows(concurrency_rows(summary["concurrency"]), title="adaptive concurrency")
    print_rows(summary["models"], title="calls per model (wall_s: its stream from start to end)")
    if summary["waiting"]:
        err.print(f"{summary['waiting']} request(s) wait in provider batch jobs: the run is `waiting`; "
                  "the next sweep collects the finished jobs", style="yellow")
    if summary["errors"]:
        err.print(f"{summary['errors']} request(s) ended in error; the next sweep sends them again", style="yellow")
