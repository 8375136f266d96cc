"""The ``check`` command: verify the lake (``tasks.check``) and list what it found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from flows.cli.application import ConfigOpt, app, console, fail, load, print_rows
from flows.cli.progress_bars import progress_bars
from flows.cli.stored import lake_exists


@app.command()
def check(config: Optional[Path] = ConfigOpt,
          examples: int = typer.Option(5, min=0, help="examples to show of each check's findings"),
          as_json: bool = typer.Option(False, "--json", help="print the report as JSON, for scripts")) -> None:
    """Verify the lake: every data file reads, no request is answered twice, every response, parse
    and score is tied to what it derives from, request and item ids match their content; runs left
    `running` by a process that is gone are warnings.

    Exit code 0 when clean (warnings allowed), 1 on damage, 2 on a bad configuration. Reads only.
    """
    from tasks.check import check_lake
    from tasks.lake.lake import Lake

    cfg = load(config, suites=False)
    lake = Lake.of(cfg, read_only=True)
    if not lake_exists(lake):
        fail(f"no lake at {lake}: nothing was ever stored there (see warehouse.path)")
    with progress_bars():
        report = check_lake(lake, examples)
    if as_json:
        print(json.dumps(report.as_dict(), default=str))
    else:
        for f in report.findings:
            if f.examples:
                print_rows(f.examples, title=f"{f.check}: {f.count} found ({f.severity})"
                           + (f", the first {len(f.examples)}" if len(f.examples) < f.count else ""))
        print_rows([{"check": f.check, "found": f"could not run: {f.error}" if f.error else f.count,
                     "severity": f.severity, "what a finding means": f.meaning} for f in report.findings],
                   title="lake check")
        console.print(report.summary(), highlight=False, soft_wrap=True)
    raise typer.Exit(1 if report.damaged else 0)
