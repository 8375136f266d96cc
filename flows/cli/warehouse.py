"""The commands over the warehouse: ``sql``, ``shell``, ``runs``, ``compact``, ``models``,
``rescore`` and ``report``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from flows.cli.application import (
    ConfigOpt,
    FormatOpt,
    app,
    console,
    emit_rows,
    err,
    fail,
    load,
    parse_date,
    print_rows,
)
from flows.cli.prefect_server import start_prefect_server
from flows.cli.progress_bars import progress_bars
from flows.cli.stored import check_stored
from tasks.errors import ConfigError, LakeError

if TYPE_CHECKING:
    import duckdb

    from tasks.lake.lake import Lake


@app.command()
def sql(
    query_text: Optional[str] = typer.Argument(None, metavar="QUERY", help="SQL over the warehouse views"),
    config: Optional[Path] = ConfigOpt,
    fmt: str = FormatOpt,
    at: Optional[str] = typer.Option(None, "--at", metavar="RUN|SNAPSHOT|TIME",
                                     help="answer as the lake was when a run ended (its id), at a DuckLake "
                                     "snapshot id, or at an ISO time (UTC unless it names a zone)"),
) -> None:
    """Run SQL over the warehouse and print the result; without a query, tell how to open it."""
    import duckdb

    from tasks.lake.catalog import attach_file, open_catalog
    from tasks.lake.lake import Lake
    from tasks.lake.views import query

    if fmt not in ("table", "csv", "json"):
        fail(f"--format {fmt}: expected table, csv or json")
    cfg = load(config, suites=False)
    catalog = cfg.catalog_path
    if not query_text:
        console.print(
            f"The warehouse catalog is {catalog} (views only, over the DuckLake lake in {cfg.warehouse.lake or cfg.lake_path}).\n"
            f"Open it with the DuckDB shell:   invarbench shell   "
            f"(or: .venv/bin/duckdb -readonly -cmd \".read '{attach_file(catalog)}'\" '{catalog}')\n"
            "Views: items, runs, requests, responses, ledger, latest_parses, latest_scores, trial_scores, accuracy_by_bin, ...\n"
            "List them with: invarbench sql \"SELECT view_name FROM duckdb_views() WHERE NOT internal\"",
            highlight=False,
        )
        return
    try:
        # Rebuilt first when built for another lake (a copied or moved warehouse) or older sql/;
        # read-only, so that read-only credentials do (the catalog is a local file of views).
        lake = Lake.of(cfg, read_only=True)
        con = open_catalog(catalog, lake) if at is None else _as_of(lake, at)
    except LakeError as exc:
        fail(str(exc))
    except ConfigError as exc:  # from resolve_snapshot when --at names no snapshot
        fail(f"--at {at}: {exc}" if at is not None else str(exc))
    except duckdb.IOException as exc:
        fail(f"cannot open {catalog}: {exc}", 1)
    try:
        rows = query(con, query_text)
    except duckdb.OutOfMemoryException as exc:
        fail(f"query failed: {str(exc).splitlines()[0]}: it needs more memory than warehouse.memory_limit "
             f"({cfg.warehouse.memory_limit}) allows; raise it in {config or 'the configuration'}", 1)
    except duckdb.Error as exc:
        fail(f"query failed: {exc}", 1)
    finally:
        con.close()
    emit_rows(rows, fmt)


def _as_of(lake: Lake, at: str) -> duckdb.DuckDBPyConnection:
    """A connection with every view reading the lake at the snapshot ``at`` names
    (tasks.lake.snapshots.resolve_snapshot); ConfigError when it names none."""
    import contextlib

    from tasks.lake.snapshots import resolve_snapshot

    with contextlib.closing(lake.connect("")) as latest:  # the lake attached; no view needed
        snapshot = resolve_snapshot(latest, at)
    return lake.connect(at=snapshot)


@app.command()
def shell(config: Optional[Path] = ConfigOpt) -> None:
    """Open the warehouse read-only, with every view, in the DuckDB shell installed with invarbench.

    The shell reads SQL from standard input when it is not a terminal: ``echo "FROM runs" | invarbench shell``.
    """
    import subprocess
    import tempfile

    import duckdb

    from tasks.lake.catalog import attach_file, open_catalog
    from tasks.lake.engine import shell_command
    from tasks.lake.lake import Lake

    cfg = load(config, suites=False)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            # Rebuilt first when missing, written by another DuckDB, or built for another lake or sql/.
            lake = Lake.of(cfg)
            open_catalog(cfg.catalog_path, lake).close()
            init = attach_file(cfg.catalog_path)
            if lake.is_url:  # credentials in a private file, never on a command line
                init = Path(tmp) / "attach.sql"
                init.write_text(lake.attach_sql(read_only=True), encoding="utf-8")
            command = shell_command(cfg.catalog_path, lake.limits, init)
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
    from tasks.lake.lake import Lake
    from tasks.runs.lifecycle import list_runs

    if fmt not in ("table", "csv", "json"):
        fail(f"--format {fmt}: expected table, csv or json")
    cfg = load(config, suites=False)
    rows = list_runs(Lake.of(cfg, read_only=True), limit)
    if fmt == "table":  # cents are too coarse for small runs
        rows = [{**r, "cost_usd": None if r["cost_usd"] is None else f"{r['cost_usd']:.6f}"} for r in rows]
    emit_rows(rows, fmt, title="runs")


@app.command()
def compact(config: Optional[Path] = ConfigOpt,
            expire_days: Optional[float] = typer.Option(None, min=0, help="expire the snapshots older than "
                                                        "this many days (the lake as of them is no longer "
                                                        "readable) and delete the files only they needed; "
                                                        "default: keep every snapshot")) -> None:
    """DuckLake's maintenance: small inserts written out to Parquet, small files merged, the files
    no snapshot needs any more deleted (with --expire-days, older snapshots first expired).

    Safe while sweeps write, and beside another compaction: each step is a DuckLake transaction.
    A lake in the layout before DuckLake is imported first.
    """
    import datetime as dt

    from tasks.lake.lake import Lake
    from tasks.records import now_utc

    cfg = load(config, suites=False)
    expire_before = None if expire_days is None else now_utc() - dt.timedelta(days=expire_days)
    try:
        with progress_bars():
            merged = Lake.of(cfg).compact(expire_before)
    except LakeError as exc:
        fail(str(exc))
    console.print(f"merged {merged} file(s)", highlight=False)


@app.command()
def models(config: Optional[Path] = ConfigOpt) -> None:
    """List the known models: route, sampling, limits (API keys are named by variable, never shown)."""
    from tasks.models.routes import route_for

    cfg = load(config, suites=False)
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
    from tasks.lake.lake import Lake

    since_date = parse_date("--since", since)
    cfg = load(config)
    try:
        for option, values in (("--run", run), ("--model", model), ("--suite", suite)):
            check_stored(Lake.of(cfg), option, list(values or []))
    except ConfigError as exc:
        fail(str(exc))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    server_up = start_prefect_server()
    from flows.rescore import rescore as rescore_flow

    with server_up():
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

    cfg = load(config, suites=False)
    path = build_report(cfg, out, progress=lambda step: err.print(f"report: {step}", highlight=False),
                        refresh_stats=True)
    console.print(str(path), highlight=False, soft_wrap=True)
