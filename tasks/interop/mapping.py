"""Samples read from another tool's files, mapped onto stored items and turned into import plans.

The readers (:mod:`tasks.interop.inspect`, :mod:`tasks.interop.lm_eval`) decode their tool's own
files into :class:`Sample` objects; this module finds each sample's item in the lake and builds one
:class:`tasks.import_plan.ImportPlan` per model, which :func:`tasks.import_plan.store_import` stores,
parses and scores exactly as a plain import. A sample is mapped

1. by the item id its source names (Inspect metadata ``item_id`` written by ``invarbench export``,
   or an lm-eval mapping file), when the lake holds that item;
2. else by content: any of the sample's texts (its prompt, the document's string fields) equal,
   whitespace normalised, to a stored item's prompt. Several items with that prompt are narrowed
   by the sample's target; still several is *ambiguous*.

A sample that maps to no item is reported (``unmapped``, with the reason), never dropped silently.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from tasks.import_plan import ImportPlan
from tasks.imports import ImportRejected
from tasks.lake.lake import Lake
from tasks.models.call import trial_id
from tasks.records import Request, Route


@dataclass
class Sample:
    """One model answer as another tool recorded it."""

    where: str  # file and position, for messages
    provider: str  # route provider of its requests: "inspect", "lm-eval"
    model: str
    sample_idx: int
    text: str | None
    contents: tuple[str, ...] = ()  # texts that may equal a stored item's prompt
    target: str | None = None
    item_hint: str | None = None  # an item id the source names
    api_base: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)  # what the source says about the call
    error: str | None = None
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


@dataclass
class ForeignImport:
    """The plans of one import (one per model) and what could not be imported, with reasons."""

    source: str
    fmt: str
    plans: list[ImportPlan]
    unmapped: list[dict[str, str]]
    duplicates: int = 0
    finish_reasons: dict[str, int] = field(default_factory=dict)


def normalise(text: str) -> str:
    """Text compared for content mapping: whitespace runs as one space, ends stripped."""
    return " ".join(text.split())


class ItemIndex:
    """The lake's items by id and by normalised prompt."""

    def __init__(self, rows: Iterable[dict[str, Any]]):
        self.by_id: dict[str, dict[str, Any]] = {}
        self.by_prompt: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            self.by_id[row["item_id"]] = row
            self.by_prompt.setdefault(normalise(row["prompt"]), []).append(row)

    @classmethod
    def from_lake(cls, lake: Lake) -> "ItemIndex":
        """Every stored item (the items view keeps one row per item id)."""
        return cls(lake.read("SELECT * FROM items ORDER BY item_id"))

    def find(self, sample: Sample) -> tuple[dict[str, Any] | None, str]:
        """(item row, "") or (None, the reason it maps to no item)."""
        if sample.item_hint and sample.item_hint in self.by_id:
            return self.by_id[sample.item_hint], ""
        found: dict[str, dict[str, Any]] = {}
        for text in sample.contents:
            for row in self.by_prompt.get(normalise(text), []):
                found[row["item_id"]] = row
        if sample.target is not None and len(found) > 1:
            same_gold = {k: r for k, r in found.items() if normalise(r["gold"]) == normalise(sample.target)}
            found = same_gold or found
        if len(found) == 1:
            return next(iter(found.values())), ""
        hint = f"item {sample.item_hint} is not in the warehouse; " if sample.item_hint else ""
        if found:
            return None, f"{hint}ambiguous: {len(found)} stored items have its prompt ({', '.join(sorted(found))})"
        return None, f"{hint}no stored item has its prompt"


def _messages(row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((m["role"], m["content"]) for m in json.loads(row["messages"]))


def _recorded(sample: Sample) -> dict[str, Any]:
    return {"status": "error" if sample.error else "ok", "error": sample.error, "latency_s": sample.latency_s,
            "prompt_tokens": sample.prompt_tokens, "completion_tokens": sample.completion_tokens,
            "finish_reason": sample.finish_reason}


def _plan(source: str, model: str, requests: list[tuple[Request, Sample]],
          items: dict[str, dict[str, Any]]) -> ImportPlan:
    used = {req.item_id for req, _ in requests}
    rows = [items[i] for i in sorted(used)]
    return ImportPlan(source=source, model=model, items=rows, requests=[req for req, _ in requests],
                      texts={req.request_id: s.text for req, s in requests},
                      answer_types={r["task"]: r["answer_type"] for r in rows},
                      recorded={req.request_id: _recorded(s) for req, s in requests})


def plan_samples(source: str, fmt: str, samples: list[Sample], index: ItemIndex) -> ForeignImport:
    """Map samples to items and build one plan per model; raises ImportRejected when none maps."""
    if not samples:
        raise ImportRejected(f"{source}: no samples to import")
    unmapped: list[dict[str, str]] = []
    per_model: dict[str, dict[str, tuple[Request, Sample]]] = {}
    items: dict[str, dict[str, Any]] = {}
    duplicates = 0
    for s in samples:
        row, reason = index.find(s)
        if row is None or row["solver"] != "generate":
            unmapped.append({"sample": s.where, "model": s.model,
                             "reason": reason or f"item {row['item_id']} is a multi-call (chain) item"})
            continue
        items[row["item_id"]] = row
        route = Route(provider=s.provider, model=s.model, api_base=s.api_base)
        # The item id in the sampling keeps two items with one prompt two requests (as tasks.imports does).
        sampling = {"item": row["item_id"], **s.sampling}
        req = Request(trial_id=trial_id(row["item_id"], asdict(route), sampling, s.sample_idx),
                      item_id=row["item_id"], model=s.model, step="main", route=route, messages=_messages(row),
                      sampling=sampling, sample_idx=s.sample_idx)
        plans = per_model.setdefault(s.model, {})
        if req.request_id in plans:
            duplicates += 1  # the same call twice (one log imported twice): the first one counts
            continue
        plans[req.request_id] = (req, s)
    if not per_model:
        # one line per kind of reason: item ids and the ambiguous items' list left out
        reasons = Counter(re.sub(r"\b[0-9a-f]{16}\b", "<id>", u["reason"]).split(" (")[0] for u in unmapped)
        raise ImportRejected(f"{source}: none of {len(samples)} sample(s) maps to a stored item ("
                             + "; ".join(f"{n}: {r}" for r, n in reasons.most_common()) + "); "
                             "export the items first (invarbench export) or give a mapping file")
    finish = Counter(s.finish_reason for by in per_model.values() for _, s in by.values() if s.finish_reason)
    plans = [_plan(source, model, list(by.values()), items) for model, by in sorted(per_model.items())]
    return ForeignImport(source=source, fmt=fmt, plans=plans, unmapped=unmapped, duplicates=duplicates,
                         finish_reasons=dict(sorted(finish.items())))
