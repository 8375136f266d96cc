"""The import flows: ``import-responses`` (answers produced elsewhere, stored and scored as a run)
and ``import-families`` (a parallel geometry set stored as one dataset of families).

Both are Prefect flows, so an import has a flow run (in the UI, and its id in ``runs``) and goes
through the run lifecycle of every run (:mod:`tasks.runs.lifecycle`): a run of kind ``import`` or
``import-families`` that ends ``completed`` or ``failed``, then the catalog rebuilt. A file that
cannot be imported raises before the run starts (ImportRejected, ImportFamiliesError,
ValidationFailed): nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from prefect import flow

from tasks.config import load_config
from tasks.environment import apply_defaults
from tasks.imports import plan_import, run_config, store_import
from tasks.items.generate import family_rows
from tasks.items.validate import validate_items
from tasks.lake.store import write_memberships, write_new_items
from tasks.records import canonical_json
from tasks.runs import lifecycle


@flow(name="import-responses", log_prints=False)
def import_responses(file: str, model: str, config_path: str | None = None,
                     overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store the responses of ``file`` under ``model`` as a run, then parse and score them; returns
    the summary of :func:`tasks.imports.store_import` with the flow run id."""
    apply_defaults()
    cfg = load_config(config_path, overrides)
    plan = plan_import(Path(file), model)
    run = lifecycle.Run(cfg.lake_path, lifecycle.new_run_id(), "import", config=run_config(plan),
                        models=canonical_json([model]), flow_run_id=lifecycle.flow_run_id())
    with run.start(n_items=len(plan.items)):
        summary = store_import(plan, cfg.lake_path, run.run_id)
        run.finish(summary["message"], n_requests=summary["requests"], n_sent=0, n_cached=summary["cached"],
                   n_errors=0)
    lifecycle.rebuild_catalog(cfg)
    return {**summary, "flow_run_id": run.flow_run_id}


def plan_families(file: str, prompt_styles: Sequence[str]) -> tuple[str, list[dict[str, Any]]]:
    """The dataset id and validated item rows of a parallel set; raises ImportFamiliesError,
    GeneratorError or ValidationFailed, writes nothing (the CLI calls it before the flow starts)."""
    dataset, rows = family_rows(file, list(prompt_styles))
    validate_items(rows, batch_name="import")
    return dataset, rows


@flow(name="import-families", log_prints=False)
def import_families(file: str, prompt_styles: Sequence[str], config_path: str | None = None,
                    overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store a parallel set (``file``) as the families of one dataset, in each of ``prompt_styles``;
    returns the run id, flow run id, dataset id and counts (items new, and already stored)."""
    apply_defaults()
    cfg = load_config(config_path, overrides)
    dataset, rows = plan_families(file, prompt_styles)
    families = len({r["family_id"] for r in rows})
    run = lifecycle.Run(cfg.lake_path, lifecycle.new_run_id(), "import-families",
                        config=canonical_json({"source": file, "prompt_styles": list(prompt_styles),
                                               "dataset_id": dataset}),
                        models=canonical_json([]), flow_run_id=lifecycle.flow_run_id())
    with run.start(n_items=len(rows)):
        written = write_new_items(cfg.lake_path, rows)
        write_memberships(cfg.lake_path, dataset, [r["item_id"] for r in rows])
        message = (f"imported {families} families ({len(rows)} items) as dataset {dataset}: "
                   f"{written} new, {len(rows) - written} already stored")
        run.finish(message)
    lifecycle.rebuild_catalog(cfg)
    return {"run_id": run.run_id, "flow_run_id": run.flow_run_id, "dataset": dataset, "families": families,
            "items": len(rows), "written": written, "message": message}
