"""The ``invarbench`` command line.

Exit codes: 0 success; 1 a run failed (a failed expectation, a crashed stage); 2 bad input or
configuration (nothing written); 130 / 143 a sweep stopped by SIGINT / by SIGTERM or a
cancellation in Prefect (tasks.runs.stopping).
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import gc
import json
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer
import typer.core
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
# typer vendors its own click, and raises its usage errors, not those of the click package.
from typer._click.exceptions import UsageError

from tasks.config import ConfigError, LakeError, load_config
from tasks.environment import apply_defaults
from tasks.lake.engine import check_versions
from tasks.runs import progress, stopping
from tasks.suites.base import GeneratorError

class _OneLineErrors:
    """Usage errors (a missing option, a value of the wrong type, an unknown command) as the one
    ``error:`` line every other bad input gets, exit 2, instead of click's usage box; and no
    ``<bool>`` after ``--help``."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc]
        except UsageError as exc:
            fail(f"{exc.format_message().rstrip('.')}; see {ctx.command_path} --help")
        return []

    def get_help_option(self, ctx: typer.Context) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""  # a flag takes no value; typer would print its type, <bool>
        return option


class Command(_OneLineErrors, typer.core.TyperCommand):
    """Every command of the CLI (see :class:`_OneLineErrors`)."""


class Group(_OneLineErrors, typer.core.TyperGroup):
    """The CLI itself (see :class:`_OneLineErrors`)."""

    def resolve_command(self, ctx: typer.Context, args: list[str]):
        """The command ``args`` name; an unknown one is one ``error:`` line, exit 2."""
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            fail(f"{exc.format_message().rstrip('.')}; see {ctx.command_path} --help")
        return None


    def invoke(self, ctx: typer.Context) -> Any:
        """Run the command; a lake it cannot use is a configuration problem: one line, exit 2."""
        try:
            return super().invoke(ctx)
        except LakeError as exc:
            fail(str(exc))
        return None


class App(typer.Typer):
    """A Typer whose commands are :class:`Command`, so a command added later gets the same errors."""

    def command(self, *args: Any, **kwargs: Any) -> Callable:
        """Register a command (typer's ``command``, with ``cls`` defaulting to :class:`Command`)."""
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


# Help in markdown: paragraphs reflow to the terminal's width and ``code`` prints as code.
app = App(help="invarbench: robustness of language models under answer-preserving transformations.",
          no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=Group,
          rich_markup_mode="markdown")
# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default. No markup:
# what is printed holds the user's text (paths, bins such as [lo, hi]), which must print as written.
console = Console(width=None if sys.stdout.isatty() else 160, markup=False)
err = Console(stderr=True, markup=False)

ConfigOpt = typer.Option(None, "--config", "-c", help="configuration file (default: ./invarbench.toml if present)")


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` on stderr and exit with ``code``."""
    err.print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def print_rows(rows: list[dict[str, Any]], title: str | None = None) -> None:
    """Print rows as a table (floats to 3 decimals)."""
    if not rows:
        console.print(f"{title + ': ' if title else ''}(no rows)")
        return
    table = Table(title=title, show_lines=False)
    for col in rows[0]:
        table.add_column(str(col), overflow="fold")
    for r in rows:
        table.add_row(*["" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v)) for v in r.values()])
    console.print(table)


def emit_rows(rows: list[dict[str, Any]], fmt: str, title: str | None = None) -> None:
    """Print rows as ``table`` (for people), ``csv`` or ``json`` (for scripts: nothing folded)."""
    if fmt == "json":
        print(json.dumps(rows, default=str))
    elif fmt == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    else:
        print_rows(rows, title=title)


FormatOpt = typer.Option("table", "--format", help="table, csv or json")


class RichListener:
    """Progress bars on the terminal, one per stage; the stages running and the last few finished.

    rich rebuilds every bar it holds ten times a second, in a thread that holds the GIL while it
    does: a 200,000-item sweep has 600 per-batch stages, and with every finished one kept, redrawing
    them grew to most of a core (0.6 s per redraw at 600 bars) and slowed each batch more than the
    last. Finished bars beyond ``keep_finished`` are dropped.
    """

    def __init__(self, bar: Progress, keep_finished: int = 8):
        self.bar = bar
        self.keep_finished = keep_finished
        self.finished: collections.deque = collections.deque()

    def start(self, name: str, total: int) -> object:
        return self.bar.add_task(name, total=total, errors=0)

    def advance(self, handle: object, n: int, errors: int = 0) -> None:
        if errors:
            task = next(t for t in self.bar.tasks if t.id == handle)
            self.bar.update(handle, errors=task.fields.get("errors", 0) + errors)
        self.bar.advance(handle, n)

    def finish(self, handle: object) -> None:
        self.finished.append(handle)
        while len(self.finished) > self.keep_finished:
            self.bar.remove_task(self.finished.popleft())
        self.bar.refresh()


class RateColumn(ProgressColumn):
    """A running stage's units per second, and its errors when it has any (a model's calls)."""

    def render(self, task: Task) -> Text:
        rate = f"{task.speed:.1f}/s" if task.speed and not task.finished else ""
        errors = task.fields.get("errors", 0)
        return Text(f"{rate} {errors} errors".strip() if errors else rate)


@contextlib.contextmanager
def progress_bars() -> Iterator[None]:
    """Show the progress of long stages (tasks.runs.progress) as bars on stderr while the block runs."""
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
    progress.set_listener(RichListener(bar))
    try:
        with bar:
            yield
    finally:
        progress.set_listener(None)


def start_prefect_server() -> Callable[[], None]:
    """Start Prefect's temporary API server now, in the background, when a flow would start one
    (no ``PREFECT_API_URL``); returns a function that waits until it is up (a no-op otherwise).

    The server is a separate process that takes seconds to boot, and a flow starts it only when
    it runs, then waits: started first, it boots while this process imports the flow's modules.
    Prefect keeps one such server per process, so the flow then finds it running. A failed start
    is not reported here: the flow starts the server again and reports it.
    """
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return lambda: None
    # Created here, not in the thread: two threads importing overlapping modules can deadlock.
    server = stopping.ephemeral_server()

    up = threading.Event()

    def start() -> None:
        try:
            server.start()
        except Exception:  # noqa: BLE001 - the flow's own start raises it again, with Prefect's message
            pass
        up.set()
        # The server dies with the thread that started it (stopping.ephemeral_server): this one
        # lives as long as the process, so a SIGKILLed sweep takes its server with it.
        threading.Event().wait()

    thread = threading.Thread(target=start, name="prefect-server-start", daemon=True)
    thread.start()
    return up.wait


def parse_date(option: str, value: str | None) -> dt.date | None:
    """The date an option gives as YYYY-MM-DD (None when not given); exit 2 naming the option otherwise."""
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        fail(f"{option} {value}: expected a date as YYYY-MM-DD")
    return None


def lake_exists(lake: str) -> bool:
    """Whether anything was ever stored in ``lake`` (an object-store lake is assumed to exist)."""
    from tasks.lake.filesystem import is_url, lake_root

    return is_url(lake) or Path(lake_root(lake)).is_dir()


def check_stored(lake: str, option: str, values: list[str]) -> None:
    """Raise ConfigError naming the ``values`` of ``option`` the lake holds nothing of, before any
    flow starts. ``option`` is ``sweep.datasets``, ``--run``, ``--model`` or ``--suite``."""
    from flows.stages import check_datasets
    from tasks.lake.views import read

    if not values:
        return
    if not lake_exists(lake):  # nothing is stored yet, and a read would create the lake's folders
        raise ConfigError(f"{option}: nothing is stored yet in {lake}, so no {', '.join(values)}")
    if option == "sweep.datasets":
        check_datasets(lake, values)
        return
    column, view, listing = STORED_NAMES[option]
    found = {r["name"] for r in read(lake, f"SELECT DISTINCT {column} AS name FROM {view} "
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


def check_generators(cfg: Any) -> None:
    """Run every selected generator once, before the flow: a parameter only a generator checks
    (``n_step = -10``) raises GeneratorError here, in a fraction of a second, instead of inside
    the flow after Prefect has started. Generating is cheap next to calling a model."""
    from tasks.items.generate import generate_task

    for suite, task in cfg.selected_tasks():
        try:
            generate_task(suite, task, cfg.task_params(suite, task), cfg.sweep.seed)
        except GeneratorError as exc:
            raise GeneratorError(f"suites.{suite}.params.{task}: {exc}") from None


def check_sweep(config: Optional[Path], overrides: dict[str, Any], select: dict[str, list[str]]) -> None:
    """Everything a sweep could reject, checked before its flow starts: the configuration, the
    filters, the stored datasets and the generators' parameters; exit 2 with one line otherwise."""
    try:
        cfg = _load(config, overrides).select(**select)
        if cfg.sweep.datasets:
            check_stored(cfg.lake_path, "sweep.datasets", cfg.sweep.datasets)
        check_generators(cfg)
    except (ConfigError, GeneratorError) as exc:
        fail(str(exc))


def _load(config: Optional[Path], overrides: dict[str, Any] | None = None, suites: bool | set[str] = True):
    # suites=False for the commands that only read the warehouse (see load_config)
    try:
        check_versions()
        return load_config(config, overrides, suites=suites)
    except (ConfigError, GeneratorError) as exc:
        fail(str(exc))


@app.command()
def sweep(
    config: Optional[Path] = ConfigOpt,
    models: Optional[str] = typer.Option(None, help="comma-separated model names (overrides sweep.models)"),
    samples: Optional[int] = typer.Option(None, help="repeats per item (overrides sweep.samples)"),
    warehouse: Optional[str] = typer.Option(None, help="warehouse folder (overrides warehouse.path)"),
    batch_size: Optional[int] = typer.Option(None, help="items per batch (overrides sweep.batch_size)"),
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
    overrides: dict[str, Any] = {}
    select = {"suites": list(suite or []), "tasks": list(task or []), "datasets": list(dataset or [])}
    if models:
        overrides.setdefault("sweep", {})["models"] = [m.strip() for m in models.split(",") if m.strip()]
    if samples is not None:
        overrides.setdefault("sweep", {})["samples"] = samples
    if batch_size is not None:
        overrides.setdefault("sweep", {})["batch_size"] = batch_size
    if warehouse:
        overrides["warehouse"] = {"path": warehouse}
    check_sweep(config, overrides, select)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    with stopped_cleanly():
        summary = _run_sweep(config, overrides, select)
    _print_summary(summary)


@contextlib.contextmanager
def stopped_cleanly() -> Iterator[None]:
    """SIGTERM and Ctrl-C stop the sweep cleanly (tasks.runs.stopping): it ends with exit code 130
    or 143 and a message; the Prefect server this process started ends with it."""
    from prefect.exceptions import CancelledRun

    stopping.reset()
    try:
        with stopping.on_signals():
            yield
    except (CancelledRun, stopping.Stopped, stopping.StopNow) as exc:
        why = str(exc) if isinstance(exc, stopping.StopNow) else stopping.reason()
        fail(f"sweep stopped ({why}). Its run, if it had begun, reads `cancelled` (invarbench runs); every "
             "answer received is stored, and the next sweep sends only what has none.", stopping.exit_code())


def _run_sweep(config: Optional[Path], overrides: dict[str, Any], select: dict[str, list[str]]) -> dict[str, Any]:
    server_up = start_prefect_server()
    from flows.sweep import sweep as sweep_flow
    from tasks.items.validate import ValidationFailed, prepare_validation
    from tasks.models.cost import BudgetExceeded
    from tasks.models.embedded import EmbeddedModelCrashed

    prepare_validation()  # Great Expectations' import, while the server boots
    server_up()
    stopping.raise_if_requested()

    try:
        with progress_bars():
            return sweep_flow(str(config) if config else None, overrides, select=select)
    except ValidationFailed as exc:
        fail(f"validation failed, nothing was stored and no model was called:\n{exc}", 1)
    except EmbeddedModelCrashed as exc:
        fail(f"{exc}\nThe run ended `failed` (see `invarbench runs`). Every answer received is stored and "
             "the other models ran; the requests the dead worker did not answer are `error` responses, "
             "which the next sweep sends again. See the README, \"When an embedded model crashes\".", 1)
    except BudgetExceeded as exc:
        fail(f"run failed: {exc}", 1)
    except (ConfigError, GeneratorError) as exc:
        fail(str(exc))
    raise AssertionError("unreachable: fail() exits")


def _print_summary(summary: dict[str, Any]) -> None:
    from flows.sweep import concurrency_rows

    print_rows([{k: v for k, v in r.items() if k != "bin_lo"} for r in summary["headline"]],
               title=f"run {summary['run_id']}: accuracy per task and bin")
    console.print(
        f"{summary['items']} items, {summary['requests']} requests: {summary['sent']} sent, "
        f"{summary['cached']} from the ledger, {summary['errors']} errors\n"
        f"warehouse: {summary['warehouse']}\ncatalog:   {summary['catalog']}  "
        f"(invarbench sql \"SELECT * FROM accuracy_by_bin\")\n"
        f"prefect flow run: {summary['flow_run_id']}",
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


@app.command()
def generate(
    suite: str = typer.Option(..., help="suite name: symmetry, lissard, geometry"),
    task: Optional[str] = typer.Option(None, help="one task of the suite (default: all configured, or all)"),
    config: Optional[Path] = ConfigOpt,
    out: Path = typer.Option(..., help="output file: .parquet or .jsonl"),
) -> None:
    """Write items to Parquet or JSONL without calling any model."""
    from tasks.items.generate import generate_task, item_row

    if out.suffix not in (".parquet", ".jsonl"):
        fail(f"--out {out}: the file must end in .parquet or .jsonl")
    cfg = _load(config, suites={suite})  # the other configured suites' generators are not needed
    try:
        names = [task] if task else cfg.tasks_of(suite)
        if not names:
            fail(f"--suite {suite}: the configuration runs none of its tasks (tasks = []); name one with --task")
        rows = []
        for name in names:
            params = cfg.task_params(suite, name) if suite in cfg.suites else {}
            dataset, items = generate_task(suite, name, params, cfg.sweep.seed)
            rows.extend(item_row(i, dataset) for i in items)
    except GeneratorError as exc:
        fail(str(exc))
    for r in rows:
        r["messages"] = json.loads(r["messages"])
        r["steps"] = json.loads(r["steps"])
        r["created_at"] = r["created_at"].isoformat()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    if out.suffix == ".jsonl":
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), tmp)
    tmp.replace(out)
    console.print(f"wrote {len(rows)} items to {out}", highlight=False)


@app.command("import-families")
def import_families(
    file: Path = typer.Argument(..., help="JSON, JSONL or CSV: id, category, euclid, coord, vector, answer"),
    prompt_styles: str = typer.Option("direct", help="comma-separated: direct, json, convert_then_solve"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Import a parallel geometry set as families and variants (validated; stored as one dataset).

    The import is a Prefect flow and a run of kind ``import-families`` (see ``invarbench runs``).
    """
    _load(config)
    if not file.is_file():
        fail(f"{file}: no such file")
    styles = [s.strip() for s in prompt_styles.split(",") if s.strip()]
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from flows.imports import import_families as import_flow
    from flows.imports import plan_families
    from tasks.items.validate import ValidationFailed
    from tasks.suites.geometry.imported import ImportFamiliesError

    try:  # checked here, before the flow starts Prefect: a bad file costs a fraction of a second
        plan_families(str(file), styles)
    except GeneratorError as exc:
        fail(f"--prompt-styles: {exc}")
    except (ImportFamiliesError, ValidationFailed) as exc:
        fail(f"{file}: nothing imported: {exc}")
    summary = import_flow(str(file), styles, str(config) if config else None)
    dataset = summary["dataset"]
    console.print(f"{summary['message']}\n"
                  f"run them: invarbench sweep --dataset {dataset}   (or add it to sweep.datasets)\n"
                  f"prefect flow run: {summary['flow_run_id']}", highlight=False)


@app.command()
def sql(
    query_text: Optional[str] = typer.Argument(None, metavar="QUERY", help="SQL over the warehouse views"),
    config: Optional[Path] = ConfigOpt,
    fmt: str = FormatOpt,
) -> None:
    """Run SQL over the warehouse and print the result; without a query, tell how to open it."""
    import duckdb

    from tasks.lake.catalog import open_catalog
    from tasks.lake.tables import read_only
    from tasks.lake.views import query

    if fmt not in ("table", "csv", "json"):
        fail(f"--format {fmt}: expected table, csv or json")
    cfg = _load(config, suites=False)
    catalog = cfg.catalog_path
    if not query_text:
        console.print(
            f"The warehouse catalog is {catalog} (views only, over Parquet in {cfg.warehouse.lake or cfg.lake_path}).\n"
            f"Open it with the DuckDB shell:   invarbench shell   (or: .venv/bin/duckdb -readonly {catalog})\n"
            f"or from Python:                  duckdb.connect('{catalog}', read_only=True)\n"
            "Views: items, runs, requests, responses, ledger, parses, scores, trial_scores, accuracy_by_bin, ...\n"
            "List them with: invarbench sql \"SELECT view_name FROM duckdb_views() WHERE NOT internal\"",
            highlight=False,
        )
        return
    try:
        # Rebuilt first when built for another lake (a copied or moved warehouse) or older sql/;
        # read-only, so that read-only credentials do (the catalog is a local file of views).
        with read_only():
            con = open_catalog(catalog, cfg.lake_path)
    except LakeError as exc:
        fail(str(exc))
    except duckdb.IOException as exc:
        fail(f"cannot open {catalog}: {exc}", 1)
    try:
        rows = query(con, query_text)
    except duckdb.Error as exc:
        fail(f"query failed: {exc}", 1)
    finally:
        con.close()
    emit_rows(rows, fmt)


@app.command()
def shell(config: Optional[Path] = ConfigOpt) -> None:
    """Open the warehouse read-only, with every view, in the DuckDB shell installed with invarbench.

    The shell reads SQL from standard input when it is not a terminal: ``echo "FROM runs" | invarbench shell``.
    """
    import subprocess
    import tempfile

    import duckdb

    from tasks.lake.engine import s3_shell_sql, shell_command
    from tasks.lake.catalog import open_catalog
    from tasks.lake.filesystem import is_url

    cfg = _load(config, suites=False)
    with tempfile.TemporaryDirectory() as tmp:
        init = None
        try:
            # Rebuilt first when missing, written by another DuckDB, or built for another lake or sql/.
            open_catalog(cfg.catalog_path, cfg.lake_path).close()
            if is_url(cfg.lake_path):  # credentials in a private file, never on a command line
                init = Path(tmp) / "init.sql"
                init.write_text(s3_shell_sql(cfg.warehouse.endpoint_url, cfg.warehouse.region), encoding="utf-8")
            command = shell_command(cfg.catalog_path, init)
        except (ConfigError, LakeError) as exc:
            fail(str(exc))
        except duckdb.IOException as exc:
            fail(f"cannot open {cfg.catalog_path}: {exc}", 1)
        code = subprocess.call(command)
    raise typer.Exit(code)


@app.command()
def runs(config: Optional[Path] = ConfigOpt, limit: int = typer.Option(20, min=1, help="most recent runs to list"),
         fmt: str = FormatOpt) -> None:
    """List runs with their Prefect flow-run ids, status, models, counts, errors, tokens and cost.

    A ``failed`` run's message says why; open its flow run in the Prefect UI by its id. A sweep
    shows ``crashed`` when its process died without a word (its heartbeat is stale, see the README).
    Tokens and cost (USD) are what the run paid for (answers from the ledger cost nothing), in
    total and per model; a cost is empty when no response of the run has a price.
    """
    from tasks.lake.tables import read_only
    from tasks.runs.lifecycle import list_runs

    if fmt not in ("table", "csv", "json"):
        fail(f"--format {fmt}: expected table, csv or json")
    cfg = _load(config, suites=False)
    with read_only():
        rows = list_runs(cfg.lake_path, limit)
    if fmt == "table":  # cents are too coarse for small runs
        rows = [{**r, "cost_usd": None if r["cost_usd"] is None else f"{r['cost_usd']:.6f}"} for r in rows]
    emit_rows(rows, fmt, title="runs")


@app.command()
def compact(config: Optional[Path] = ConfigOpt,
            before: Optional[str] = typer.Option(None, help="compact day folders before YYYY-MM-DD "
                                                 "(default: yesterday, UTC)")) -> None:
    """Merge the small Parquet files of each table and day into one file, and delete the files a
    killed compaction left behind.

    Runs and dispatched units compact what they wrote when they end; this finishes the rest (files
    of killed processes, lakes written before compaction). Only day folders before yesterday are
    touched, where no run writes; run one at a time.
    """
    from tasks.lake.compact import compact_lake

    day = parse_date("--before", before)
    cfg = _load(config, suites=False)
    with progress_bars():
        stats = compact_lake(cfg.lake_path, day)
    console.print(f"merged {stats.merged} file(s) into {stats.written}; deleted {stats.deleted} file(s)",
                  highlight=False)


@app.command()
def models(config: Optional[Path] = ConfigOpt) -> None:
    """List the known models: route, sampling, limits (API keys are named by variable, never shown)."""
    from tasks.models.routes import route_for

    cfg = _load(config, suites=False)
    rows = []
    for name, m in sorted(cfg.all_models().items()):
        route = route_for(m)
        rows.append({
            "name": name, "in sweep": "yes" if name in cfg.sweep.models else "",
            "route": f"{route.model} @ {route.api_base or '-'}", "temperature": m.temperature,
            "max_tokens": m.max_tokens, "rpm": m.requests_per_minute or "-", "tpm": m.tokens_per_minute or "-",
            "concurrency": m.concurrency, "timeout_s": m.timeout_s, "retries": m.retries,
            "api key": f"${m.api_key_env}" if m.api_key_env else "-",
        })
    print_rows(rows, title="models")


@app.command()
def rescore(
    run: Optional[list[str]] = typer.Option(None, "--run", help="run id to rescore (repeatable)"),
    model: Optional[list[str]] = typer.Option(None, "--model", help="model name (repeatable)"),
    suite: Optional[list[str]] = typer.Option(None, "--suite", help="suite name (repeatable)"),
    since: Optional[str] = typer.Option(None, "--since", help="only requests made on or after YYYY-MM-DD (UTC)"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Re-parse and re-score stored responses with the current parser and scorer; calls no model."""
    since_date = parse_date("--since", since)
    cfg = _load(config)
    try:
        for option, values in (("--run", run), ("--model", model), ("--suite", suite)):
            check_stored(cfg.lake_path, option, list(values or []))
    except ConfigError as exc:
        fail(str(exc))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    server_up = start_prefect_server()
    from flows.rescore import rescore as rescore_flow

    server_up()
    summary = rescore_flow(str(config) if config else None, runs=run or (), models=model or (),
                           suites=suite or (), since=since_date)
    print_rows([{k: c[k] for k in ("model", "suite", "task", "variant", "gold", "previous_status", "status",
                                   "previous_predicted", "predicted", "flipped")} for c in summary["changed"]],
               title=f"rescore {summary['run_id']}: changed scores")
    console.print(summary["message"], highlight=False)


@app.command()
def report(
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: `<warehouse>/reports/<timestamp>/`)"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Compute the statistics (unless the stored ones are current), then write the HTML report
    (self-contained, offline) and a PNG per figure; print the HTML path."""
    from tasks.report.html import build_report

    cfg = _load(config, suites=False)
    path = build_report(cfg, out, progress=lambda step: err.print(f"report: {step}", highlight=False),
                        refresh_stats=True)
    console.print(str(path), highlight=False, soft_wrap=True)


@app.command()
def export(
    fmt: str = typer.Option(..., "--format", help="inspect: an Inspect AI dataset (dataset.jsonl) and task (task.py)"),
    out: Path = typer.Option(..., "--out", help="folder to write the files into"),
    suite: Optional[list[str]] = typer.Option(None, "--suite", help="export this suite (repeatable; as sweep's)"),
    task: Optional[list[str]] = typer.Option(None, "--task", help="export this task (repeatable; as sweep's)"),
    dataset: Optional[list[str]] = typer.Option(None, "--dataset", help="export this stored dataset (repeatable)"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Write the items a sweep would run (or the selection) for another tool, and store them so
    that `import-responses --format FMT` maps the tool's results back to them."""
    from flows.export import EXPORTERS, export_items
    from tasks.items.validate import ValidationFailed

    if fmt not in EXPORTERS:
        fail(f"--format: unknown format {fmt!r}; expected one of {', '.join(EXPORTERS)}")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: exists and is not a folder")
    try:
        cfg = _load(config).select(suites=list(suite or []), tasks=list(task or []), datasets=list(dataset or []))
        summary = export_items(cfg, fmt, out)
    except (ConfigError, GeneratorError) as exc:
        fail(str(exc))
    except ValidationFailed as exc:
        fail(f"validation failed, nothing was written:\n{exc}", 1)
    console.print(f"wrote {summary['written']} items to {out} (dataset.jsonl, task.py); {summary['stored']} "
                  f"new in the warehouse\nrun them: inspect eval {out / 'task.py'} --model PROVIDER/MODEL",
                  highlight=False)
    if summary["left_out"]:
        err.print(f"{summary['left_out']} multi-call (chain) item(s) left out: Inspect's generate() "
                  "makes one call per sample", style="yellow", highlight=False)


def _import_foreign(source: Path, fmt: str, mapping: Optional[Path], config: Optional[Path], cfg) -> None:
    from flows.imports import import_foreign
    from flows.sweep import headline
    from tasks.imports import ImportRejected

    try:
        result = import_foreign(str(source), fmt, str(mapping) if mapping else None, str(config) if config else None)
    except ImportRejected as exc:
        fail(str(exc))
    for summary in result["runs"]:
        print_rows([{k: v for k, v in r.items() if k != "bin_lo"} for r in headline(cfg.lake_path, summary["run_id"])],
                   title=f"run {summary['run_id']}, {summary['model']}: accuracy per task and bin")
        console.print(summary["message"], highlight=False, soft_wrap=True)
    console.print(f"{fmt}: {len(result['runs'])} run(s), one per model; prefect flow run: "
                  f"{result['runs'][0]['flow_run_id']}", highlight=False)
    if result["finish_reasons"]:
        console.print("finish reasons: " + ", ".join(f"{k} {n}" for k, n in result["finish_reasons"].items()),
                      highlight=False)
    if result["duplicates"]:
        err.print(f"{result['duplicates']} sample(s) repeat an imported one (same model, item and "
                  "sample): the first counts", style="yellow", highlight=False)
    if result["unmapped"]:
        err.print(f"{len(result['unmapped'])} sample(s) not imported:", style="yellow", highlight=False)
        for u in result["unmapped"]:
            err.print(f"  {u['sample']} ({u['model']}): {u['reason']}", highlight=False, soft_wrap=True)


@app.command("import-responses")
def import_responses(
    file: Path = typer.Argument(..., help="CSV, JSONL or Parquet: prompt/input/question, "
                                          "target/gold/answer/out, prediction/response/output/pred, optional "
                                          "task, family_id, variant, bin/bins, key_entities, finish_reason "
                                          "(names in any case); with --format: a file or folder of "
                                          "Inspect logs or lm-eval samples"),
    model: Optional[str] = typer.Option(None, "--model", help="name the responses are stored under (route "
                                        "provider: imported); not with --format inspect/lm-eval (their files name it)"),
    fmt: str = typer.Option("table", "--format", help="table (CSV, JSONL, Parquet rows), inspect (Inspect AI "
                            ".eval/.json logs) or lm-eval (lm_eval --log_samples output)"),
    mapping: Optional[Path] = typer.Option(None, "--mapping", help="lm-eval: CSV or JSON of task, doc_id or "
                                           "doc_hash, item_id (default: map documents by content)"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Store responses produced elsewhere as a run, then parse and score them like any sweep's.

    Nothing is written when a column is missing, the file is empty or a row cannot be decoded
    (exit 2, the message names the row and column). The import is a Prefect flow and a run of
    kind ``import`` (see ``invarbench runs``); Inspect logs and lm-eval samples give one run per model.
    """
    cfg = _load(config)
    if fmt != "table":
        if model is not None:
            fail(f"--model: not with --format {fmt}: the model is read from its files")
        _import_foreign(file, fmt, mapping, config, cfg)
        return
    if model is None or mapping is not None:
        fail("--model: a model name is needed" if model is None else "--mapping: only with --format lm-eval")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from flows.imports import import_responses as import_flow
    from flows.sweep import headline
    from tasks.imports import ImportRejected, plan_import

    try:  # checked here, before the flow starts Prefect: a bad file costs a fraction of a second
        plan_import(file, model)
    except ImportRejected as exc:
        fail(str(exc))
    summary = import_flow(str(file), model, str(config) if config else None)
    print_rows([{k: v for k, v in r.items() if k != "bin_lo"} for r in headline(cfg.lake_path, summary["run_id"])],
               title=f"run {summary['run_id']}: accuracy per task and bin")
    types = ", ".join(f"{task}: {t}" for task, t in sorted(summary["answer_types"].items()))
    console.print(f"{summary['message']}\n{summary['items']} items, {summary['requests']} requests; "
                  f"answer types {types}\nprefect flow run: {summary['flow_run_id']}", highlight=False)
    if summary["bins"]:
        console.print("bins (as written → stored): "
                      + ", ".join(f"{given} → {label}" for given, label in summary["bins"].items()), highlight=False)
    if summary["ignored_columns"]:
        err.print(f"ignored columns: {', '.join(summary['ignored_columns'])}", style="yellow", highlight=False)


def main() -> None:
    """Console-script entry point."""
    # llama-cpp-python keeps two /dev/null handles open for the life of the process; the
    # interpreter's exit would otherwise report them under every table this CLI prints.
    warnings.filterwarnings("ignore", category=ResourceWarning)
    apply_defaults()  # before any command loads Prefect or litellm
    try:
        app()
    finally:
        # The interpreter's last garbage collection walks every object Prefect, litellm and Great
        # Expectations created: 10 s and more on a busy machine after a sweep, so a stopped sweep
        # would linger. Nothing at exit needs those objects collected (atexit handlers still run).
        gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
