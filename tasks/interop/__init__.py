"""Doors to other evaluation tools: Inspect AI (export and logs) and lm-evaluation-harness samples.

:func:`plan_foreign` reads another tool's files into import plans (one per model) that
:func:`tasks.import_plan.store_import` stores, parses and scores like any import.
"""

from __future__ import annotations

from pathlib import Path

from tasks.imports import ImportRejected
from tasks.interop.mapping import ForeignImport, ItemIndex, plan_samples
from tasks.lake.lake import Lake

FORMATS = ("inspect", "lm-eval")


def plan_foreign(source: Path, fmt: str, lake: Lake, mapping: Path | None = None) -> ForeignImport:
    """Read ``source`` (a file or folder of ``fmt``'s files) and map it onto the lake's items;
    raises ImportRejected (nothing written) when it cannot be read or nothing maps."""
    from tasks.interop import inspect, lm_eval

    if mapping is not None and fmt != "lm-eval":
        raise ImportRejected("--mapping: only for --format lm-eval (Inspect logs carry the exported item ids)")
    skipped: list[dict[str, str]] = []
    if fmt == "inspect":
        samples = list(inspect.read_samples(source))
    elif fmt == "lm-eval":
        samples = lm_eval.read_samples(source, lm_eval.read_mapping(mapping) if mapping else None, skipped)
    else:
        raise ImportRejected(f"--format: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not samples and skipped:
        raise ImportRejected(f"{source}: no sample maps to an item: {skipped[0]['reason']} "
                             f"({len(skipped)} sample(s) like this)")
    planned = plan_samples(str(source), fmt, samples, ItemIndex.from_lake(lake))
    planned.unmapped[:0] = skipped
    return planned
