"""Hand-built lakes for the analytics tests: items, requests, responses, parses and scores written
with the real ``tasks.lake.writes.write_rows``, so every expected count in a test is known by hand.

``LakeBuilder.trial`` records one scored trial (request, ok response, parse, score) in one call;
``LakeBuilder.answered`` records a request and its response only, for the re-scoring tests.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import tasks.analysis.stats  # noqa: F401  - registers the stats tables until tasks.lake.schemas lists them
from tasks.lake.lake import Lake
from tasks.lake.views import query
from tasks.lake.writes import write_rows
from tasks.models.spool import spool_dir
from tasks.records import content_hash, now_utc

RUN = "run-fixture"


class LakeBuilder:
    """Accumulates rows per table; ``flush`` writes them as one Parquet file per table."""

    def __init__(self, root: Path):
        self.lake = Lake(str(root / "lake"))
        self.rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._clock = now_utc()

    def tick(self) -> dt.datetime:
        """A strictly increasing timestamp, so 'latest' is well defined between rows."""
        self._clock += dt.timedelta(milliseconds=1)
        return self._clock

    def item(self, family_id: str, variant: str = "none", *, suite: str = "symmetry", task: str = "closure",
             prompt_style: str = "direct", category: str = "", key_entities: int = 5, bin: str = "5-30",
             bin_lo: int = 5, bin_hi: int = 30, gold: str = "5", answer_type: str = "integer", seed: int = 0,
             params: dict | None = None, steps: list | None = None, n_tokens: int = 10,
             symbol_density: float = 0.1, n_numbers: int = 2) -> str:
        """Add an item; returns its id (a hash of the defining fields)."""
        identity = [suite, task, family_id, variant, prompt_style, category, key_entities, gold, seed, params, steps]
        item_id = content_hash(identity)
        self.rows["items"].append({
            "item_id": item_id, "dataset_id": "ds-fixture", "suite": suite, "task": task, "family_id": family_id,
            "variant": variant, "prompt_style": prompt_style, "category": category, "key_entities": key_entities,
            "bin": bin, "bin_lo": bin_lo, "bin_hi": bin_hi, "prompt": f"prompt {item_id}",
            "messages": json.dumps([{"role": "user", "content": f"prompt {item_id}"}]),
            "steps": json.dumps(steps or []), "solver": "chain" if steps else "generate",
            "gold": gold, "answer_type": answer_type, "generator": f"{suite}.{task}", "generator_version": "1",
            "seed": seed, "params": json.dumps(params or {}), "n_chars": 40, "n_words": 8, "n_tokens": n_tokens,
            "n_symbols": 4, "symbol_density": symbol_density, "n_numbers": n_numbers, "n_operators": 1,
            "n_points": 0, "created_at": self.tick(),
        })
        return item_id

    def answered(self, item_id: str, model: str, text: str | None, *, sample_idx: int = 0, run_id: str = RUN,
                 step: str = "main", step_index: int = 0, content: str | None = None,
                 status: str = "ok", trial_id: str | None = None) -> tuple[str, str, str]:
        """A request and its response (``status`` ok, or error without text); returns
        (trial_id, request_id, response_id)."""
        trial_id = trial_id or content_hash([item_id, model, sample_idx], length=0)
        request_id = content_hash([trial_id, step], length=0)
        response_id = content_hash([request_id, "response"], length=0)
        self.rows["requests"].append({
            "run_id": run_id, "request_id": request_id, "trial_id": trial_id, "item_id": item_id, "model": model,
            "step": step, "step_index": step_index, "provider": "fake", "route_model": "fake/model", "api_base": "",
            "sampling": "{}", "sample_idx": sample_idx,
            "messages": json.dumps([{"role": "user", "content": content or f"prompt {item_id}"}]),
            "created_at": self.tick(),
        })
        self.rows["responses"].append({
            "response_id": response_id, "request_id": request_id, "run_id": run_id, "model": model,
            "status": status, "text": text if status == "ok" else None,
            "error": None if status == "ok" else "timeout", "attempts": 1, "latency_s": 0.01,
            "prompt_tokens": 5, "completion_tokens": 3, "created_at": self.tick(),
        })
        return trial_id, request_id, response_id

    def parse(self, response_id: str, request_id: str, value: str | None, answer_type: str = "integer") -> None:
        """A parse row: ok with ``value``, or unparsable when ``value`` is None."""
        self.rows["parses"].append({
            "response_id": response_id, "request_id": request_id, "answer_type": answer_type,
            "parser_version": f"{answer_type}/1", "status": "ok" if value is not None else "unparsable",
            "value": value, "extracted": value, "created_at": self.tick(),
        })

    def score(self, trial_id: str, item_id: str, model: str, status: str, predicted: str | None = None, *,
              sample_idx: int = 0, run_id: str = RUN, answer_type: str = "integer",
              lenient: bool | None = None, scorer_version: str | None = None) -> None:
        """A score row for a trial."""
        self.rows["scores"].append({
            "trial_id": trial_id, "run_id": run_id, "item_id": item_id, "model": model, "sample_idx": sample_idx,
            "scorer_version": scorer_version or f"score/1+{answer_type}/1", "status": status,
            "correct": {"correct": True, "wrong": False}.get(status), "lenient_correct": lenient,
            "predicted": predicted if status in ("correct", "wrong") else None,
            "response_ids": "[]", "created_at": self.tick(),
        })

    def trial(self, item_id: str, model: str, status: str, predicted: str | None = None, *,
              sample_idx: int = 0, run_id: str = RUN, answer_type: str = "integer",
              lenient: bool | None = None) -> str:
        """One complete scored trial: request, response (error when status is error), parse, score."""
        response_status = "error" if status == "error" else "ok"
        trial_id, request_id, response_id = self.answered(
            item_id, model, f"Answer: {predicted}", sample_idx=sample_idx, run_id=run_id, status=response_status)
        if response_status == "ok":
            self.parse(response_id, request_id, predicted if status != "unparsable" else None, answer_type)
        self.score(trial_id, item_id, model, status, predicted, sample_idx=sample_idx, run_id=run_id,
                   answer_type=answer_type, lenient=lenient)
        return trial_id

    def flush(self) -> "LakeBuilder":
        """Write every accumulated row (one file per table) and start afresh."""
        for table, rows in self.rows.items():
            write_rows(self.lake, table, rows)
        self.rows = defaultdict(list)
        return self

    def query(self, sql: str, params: list | None = None) -> list[dict[str, Any]]:
        """Run SQL over the lake's views."""
        con = self.lake.connect()
        try:
            return query(con, sql, params)
        finally:
            con.close()


def status_of(correct: bool) -> str:
    """``correct`` or ``wrong``."""
    return "correct" if correct else "wrong"


def spooled_ok(lake: Lake) -> Counter:
    """Per model, the ok answers in ``lake``'s spool (tasks.models.spool) that its tables lack."""
    rows = {r["response_id"]: r for path in spool_dir(lake).glob("*.jsonl")
            for r in map(json.loads, [line for line in path.read_text().splitlines() if line.endswith("}")])
            if r["status"] == "ok"}  # (a line cut by the kill: never a whole answer)
    stored = {r["response_id"] for r in lake.read("SELECT response_id FROM responses")}
    return Counter(r["model"] for rid, r in rows.items() if rid not in stored)
