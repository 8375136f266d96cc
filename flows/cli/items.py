"""The commands that write items for use elsewhere without calling a model: ``generate`` and
``export``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from flows.cli.application import ConfigOpt, app, console, err, fail, load
from tasks.errors import ConfigError
from tasks.suites.base import GeneratorError


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
    cfg = load(config, suites={suite})  # the other configured suites' generators are not needed
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
    from tasks.items.validate import ValidationFailed, dropped_family, prepare

    if fmt not in EXPORTERS:
        fail(f"--format: unknown format {fmt!r}; expected one of {', '.join(EXPORTERS)}")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: exists and is not a folder")
    prepare()  # Great Expectations imports in its worker while the items are generated
    try:
        cfg = load(config).select(suites=list(suite or []), tasks=list(task or []), datasets=list(dataset or []))
        summary = export_items(cfg, fmt, out)
    except (ConfigError, GeneratorError) as exc:
        fail(str(exc))
    except ValidationFailed as exc:
        fail(f"validation failed, nothing was written:\n{exc}", 1)
    console.print(f"wrote {summary['written']} items to {out} (dataset.jsonl, task.py); {summary['stored']} "
                  f"new in the warehouse\nrun them: inspect eval {out / 'task.py'} --model PROVIDER/MODEL",
                  highlight=False)
    for d in summary["dropped_families"]:
        err.print(dropped_family(d), style="yellow", highlight=False)
    if summary["left_out"]:
        err.print(f"{summary['left_out']} multi-call (chain) item(s) left out: Inspect's generate() "
                  "makes one call per sample", style="yellow", highlight=False)
