"""What a response cost, and the budget that stops a sweep before it spends too much.

Prices (:mod:`tasks.models.pricing`) come from the model's configuration (``input_cost_per_mtok`` /
``output_cost_per_mtok``, USD per million tokens) when set, else from litellm's bundled price
table (read offline: the package's own copy, see :mod:`tasks.environment`). Embedded models cost 0: they run on this machine and
nobody is paid per token. A model neither configured nor in the table has no price, and its
responses' ``cost_usd`` is NULL, never 0, so a sum never passes an unknown cost off as free.

Batch responses are priced with the table's batch prices where it has them (providers charge
about half); configured prices apply to direct and batch calls alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from tasks.lake.lake import Lake
from tasks.models.pricing import Price


def response_cost(p: Price | None, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """USD of one response; None when the price or a token count is unknown."""
    if p is None or prompt_tokens is None or completion_tokens is None:
        return None
    return prompt_tokens * p.input_per_token + completion_tokens * p.output_per_token


def prompt_token_estimate(messages: Sequence[dict[str, str]]) -> int:
    """A rough prompt token count before sending: characters / 4."""
    return sum(len(m["content"]) for m in messages) // 4


def estimate_cost(p: Price | None, messages: Sequence[dict[str, str]], max_tokens: int) -> float:
    """The most a request is expected to cost: the estimated prompt plus ``max_tokens`` of answer."""
    if p is None:
        return 0.0
    return prompt_token_estimate(messages) * p.input_per_token + max_tokens * p.output_per_token


class BudgetExceeded(RuntimeError):
    """A sweep stopped sending because its budget would be passed; the message says which and how much."""


@dataclass
class _Cap:
    key: str  # the configuration key, for messages
    limit: float
    spent: float
    # Per cap, not per budget: a sweep's cap is one object shared by the budgets of all its models,
    # which are called at the same time (tasks.models.stream), so each sees the others' requests.
    in_flight: float = 0.0
    exhausted: str = ""  # why it refused a request: then every budget holding it sends nothing more


@dataclass
class Budget:
    """The caps of one model in one sweep run: the sweep's ``max_cost_usd`` and the model's own.

    ``spent`` starts from this run's stored responses (so a run's later chunks count its earlier
    ones) and grows with each answer; a request is sent only when spent + the estimates of the
    requests in flight + its own estimate stay within every cap. Once one is refused, nothing more
    is sent (:attr:`stopped`): the budget stops new requests, it does not pick cheaper ones.
    """

    caps: list[_Cap] = field(default_factory=list)
    stopped: str = ""
    refused: int = 0

    @classmethod
    def for_run(cls, lake: Lake, run_id: str, model: str, sweep_max: float, model_max: float) -> "Budget":
        """The caps that apply to ``model`` in ``run_id``, with what the run has spent so far."""
        if not sweep_max and not model_max:
            return cls()
        row = lake.read("""
            SELECT coalesce(sum(cost_usd), 0) AS run_spent,
                   coalesce(sum(cost_usd) FILTER (WHERE model = $2), 0) AS model_spent
            FROM cost_responses WHERE run_id = $1""", [run_id, model])[0]
        caps = []
        if sweep_max:
            caps.append(_Cap("sweep.max_cost_usd", sweep_max, float(row["run_spent"])))
        if model_max:
            caps.append(_Cap(f"models.{model}.max_cost_usd", model_max, float(row["model_spent"])))
        return cls(caps)

    @classmethod
    def for_models(cls, lake: Lake, run_id: str, sweep_max: float, model_max: dict[str, float]) -> dict[str, "Budget"]:
        """One budget per model of a run whose models are called at the same time: the sweep's cap
        is one object they all hold, so what any model spends or has in flight counts for all."""
        budgets = {m: cls.for_run(lake, run_id, m, sweep_max, cap) for m, cap in model_max.items()}
        shared = next((c for b in budgets.values() for c in b.caps if c.key == "sweep.max_cost_usd"), None)
        for b in budgets.values():
            b.caps = [shared if shared and c.key == shared.key else c for c in b.caps]
        return budgets

    def reserve(self, estimate: float) -> bool:
        """Whether a request estimated at ``estimate`` USD may be sent now; if so, it counts as in flight."""
        self.stopped = self.stopped or next((cap.exhausted for cap in self.caps if cap.exhausted), "")
        if self.stopped:
            self.refused += 1
            return False
        for cap in self.caps:
            if cap.spent + cap.in_flight + estimate > cap.limit:
                cap.exhausted = (f"the budget {cap.key} = {cap.limit:g} USD stopped the sweep: {cap.spent:.6f} USD "
                                 f"spent, the next request would pass it")
                self.stopped = cap.exhausted
                self.refused += 1
                return False
        for cap in self.caps:
            cap.in_flight += estimate
        return True

    def settle(self, estimate: float, cost: float | None) -> None:
        """A reserved request ended: its estimate leaves the in-flight sum, its cost (or estimate) is spent."""
        for cap in self.caps:
            cap.in_flight -= estimate
            cap.spent += estimate if cost is None else cost
