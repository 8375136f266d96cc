"""The commands that store what was made elsewhere: ``import-families`` (geometry families) and
``import-responses`` (a table of responses, Inspect AI logs, lm-eval samples)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from flows.cli.application import ConfigOpt, app, console, err, fail, load, print_rows
from tasks.suites.base import GeneratorError


@app.command("import-families")
def import_families(
    file: Path = typer.Argument(..., help="JSON, JSONL or CSV: id, category, euclid, coord, vector, answer"),
    prompt_styles: str = typer.Option("direct", help="comma-separated: direct, json, convert_then_solve"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """Import a parallel geometry set as families and variants (validated; stored as one dataset).

    The import is a Prefect flow and a run of kind ``import-families`` (see ``invarbench runs``).
    """
    load(config)
    if not file.is_file():
        fail(f"{file}: no such file")
    styles = [s.strip() for s in prompt_styles.split(",") if s.strip()]
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from tasks.items import validate

    validate.prepare()  # Great Expectations imports in its worker while this process imports Prefect
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


def _import_foreign(source: Path, fmt: str, mapping: Optional[Path], config: Optional[Path], cfg) -> None:
    from flows.imports import import_foreign
    from flows.sweep_run import headline
    from tasks.imports import ImportRejected
    from tasks.interop import plan_foreign
    from tasks.lake.lake import Lake

    lake = Lake.of(cfg)
    try:  # checked here, before the flow starts Prefect, as a table import is
        plan_foreign(source, fmt, lake, mapping)
    except ImportRejected as exc:
        fail(str(exc))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    result = import_foreign(str(source), fmt, str(mapping) if mapping else None, str(config) if config else None)
    for summary in result["runs"]:
        print_rows([{k: v for k, v in r.items() if k != "bin_lo"} for r in headline(lake, summary["run_id"])],
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
    cfg = load(config)
    if fmt != "table":
        if model is not None:
            fail(f"--model: not with --format {fmt}: the model is read from its files")
        _import_foreign(file, fmt, mapping, config, cfg)
        return
    if model is None or mapping is not None:
        fail("--model: a model name is needed" if model is None else "--mapping: only with --format lm-eval")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from flows.imports import import_responses as import_flow
    from flows.sweep_run import headline
    from tasks.imports import ImportRejected, plan_import
    from tasks.lake.lake import Lake

    try:  # checked here, before the flow starts Prefect: a bad file costs a fraction of a second
        plan_import(file, model)
    except ImportRejected as exc:
        fail(str(exc))
    summary = import_flow(str(file), model, str(config) if config else None)
    print_rows([{k: v for k, v in r.items() if k != "bin_lo"} for r in headline(Lake.of(cfg), summary["run_id"])],
               title=f"run {summary['run_id']}: accuracy per task and bin")
    types = ", ".join(f"{task}: {t}" for task, t in sorted(summary["answer_types"].items()))
    console.print(f"{summary['message']}\n{summary['items']} items, {summary['requests']} requests; "
                  f"answer types {types}\nprefect flow run: {summary['flow_run_id']}", highlight=False)
    if summary["bins"]:
        console.print("bins (as written → stored): "
                      + ", ".join(f"{given} → {label}" for given, label in summary["bins"].items()), highlight=False)
    if summary["ignored_columns"]:
        err.print(f"ignored columns: {', '.join(summary['ignored_columns'])}", style="yellow", highlight=False)
