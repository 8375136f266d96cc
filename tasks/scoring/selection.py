"""Which stored trials a stage works on: by run, model, suite, item or date.

The parse and score stages (and re-scoring) take a :class:`Selection` rather than rows, so the
same code serves a sweep's chunk (run and items) and a re-score of any slice of the warehouse.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Selection:
    """A filter over ``run_requests`` (alias ``rr``) joined with ``items`` (alias ``i``)."""

    run_ids: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    item_ids: tuple[str, ...] = field(default=(), repr=False)
    since: dt.date | None = None

    def where(self, requests_only: bool = False) -> tuple[str, list[Any]]:
        """A SQL predicate and its parameters (TRUE when nothing is selected). ``requests_only``:
        its clauses on ``run_requests`` alone (not the suite, an ``items`` column), which pick the
        requests, and so the items, to read before ``items`` is joined."""
        clauses, params = [], []
        for column, values in (("rr.run_id", self.run_ids), ("rr.model", self.models),
                               ("i.suite", () if requests_only else self.suites), ("rr.item_id", self.item_ids)):
            if values:
                clauses.append(f"{column} IN (SELECT unnest(?::VARCHAR[]))")
                params.append(list(values))
        if self.since:
            clauses.append("rr.created_at >= ?")
            params.append(dt.datetime.combine(self.since, dt.time(), tzinfo=dt.timezone.utc))
        return (" AND ".join(clauses) or "TRUE"), params
