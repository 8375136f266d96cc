"""The import flows: ``import-responses`` (answers produced elsewhere, stored and scored as a run),
``import-foreign`` (the same for Inspect logs and lm-eval samples: one run per model) and
``import-families`` (a parallel geometry set stored as one dataset of families).

All are Prefect flows, so an import has a flow run (in the UI, and its id in ``runs``) and goes
through the run lifecycle of every run (:mod:`tasks.runs.lifecycle`): a run of kind ``import`` or
``import-families`` that ends ``completed`` or ``failed``, then the catalog rebuilt. A file that
cannot be imported raises before the run starts (ImportRejected, ImportFamiliesError,
ValidationFailed): nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from prefect import flow

from tasks.config import load_config
from tasks.environment import apply_defaults
from tasks.import_plan import ImportPlan, run_config, store_import
from tasks.imports import plan_import
from tasks.interop import plan_foreign
from tasks.items.generate import family_rows
from tasks.items.validate import validate_items
from tasks.lake.lake import Lake
from tasks.lake.writes import write_memberships, write_new_items
from tasks.records import canonical_json
from tasks.runs import lifecycle


@flow(name="import-responses", log_prints=False)
def import_responses(file: str, model: str, config_path: str | None = None,
                     overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store the responses of ``file`` under ``model`` as a run, then parse and score them; returns
    the summary of :func:`tasks.import_plan.store_import` with the flow run id."""
    apply_defaults()
    cfg = load_config(config_path, overrides)
    plan = plan_import(Path(file), model)
    summary = _store_run(Lake.of(cfg), plan, run_config(plan))
    lifecycle.rebuild_catalog(cfg)
    return summary


def _store_run(lake: Lake, plan: ImportPlan, config: str) -> dict[str, Any]:
    """Store one plan as a run of kind ``import``; its summary with the flow run id."""
    with lifecycle.begin(lake, "import", config=config, models=[plan.model], n_items=len(plan.items)) as run:
        summary = store_import(plan, lake, run.run_id)
        # A file's own columns give only some fields (a CSV's finish_reason, no status): no status is ok.
        errors = sum(1 for r in plan.recorded.values() if r.get("status", "ok") == "error")
        run.finish(summary["message"], n_requests=summary["requests"], n_sent=0, n_cached=summary["cached"],
                   n_errors=errors)
    return {**summary, "model": plan.model, "flow_run_id": run.flow_run_id}


@flow(name="import-foreign", log_prints=False)
def import_foreign(source: str, fmt: str, mapping: str | None = None, config_path: str | None = None,
                   overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store another tool's results (``fmt``: ``inspect`` logs, ``lm-eval`` samples) as one import
    run per model (:mod:`tasks.interop`); returns the runs' summaries and the samples left out."""
    apply_defaults()
    cfg = load_config(config_path, overrides)
    lake = Lake.of(cfg)
    planned = plan_foreign(Path(source), fmt, lake, Path(mapping) if mapping else None)
    runs = [_store_run(lake, plan, canonical_json({
        **json.loads(run_config(plan)), "format": fmt, "mapping": mapping,
        "unmapped": len(planned.unmapped), "duplicates": planned.duplicates})) for plan in planned.plans]
    lifecycle.rebuild_catalog(cfg)
    return {"runs": runs, "unmapped": planned.unmapped, "duplicates": planned.duplicates,
            "finish_reasons": planned.finish_reasons}


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
    config = canonical_json({"source": file, "prompt_styles": list(prompt_styles), "dataset_id": dataset})
    lake = Lake.of(cfg)
    with lifecycle.begin(lake, "import-families", config=config, models=[], n_items=len(rows)) as run:
        written = write_new_items(lake, rows)
        write_memberships(lake, dataset, [r["item_id"] for r in rows])
        message = (f"imported {families} families ({len(rows)} items) as dataset {dataset}: "
                   f"{written} new, {len(rows) - written} already stored")
        run.finish(message)
    lifecycle.rebuild_catalog(cfg)
    return {"run_id": run.run_id, "flow_run_id": run.flow_run_id, "dataset": dataset, "families": families,
            "items": len(rows), "written": written, "message": message}
