"""A model's price per token: from its configuration, else litellm's bundled table (kept per litellm
version, :mod:`tasks.models.litellm_facts`: asking it again imports no litellm).

Apart from :mod:`tasks.models.cost` (what responses cost, budgets), so that the configuration can check
a budget's prices when it loads without importing the modules that import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tasks.models import litellm_facts


class PricedModel(Protocol):
    """What :func:`price` reads of a model's configuration (:class:`tasks.models.config.ModelConfig`)."""

    model: str
    input_cost_per_mtok: float | None
    output_cost_per_mtok: float | None

    @property
    def provider(self) -> str:
        """The litellm provider prefix of ``model``."""


@dataclass(frozen=True)
class Price:
    """USD per prompt token and per completion token, and where the figures come from."""

    input_per_token: float
    output_per_token: float
    source: str  # "config" | "litellm" | "embedded"


def price(cfg: PricedModel, batch: bool = False) -> Price | None:
    """The model's price (configured first, then litellm's table); None when unknown."""
    if cfg.input_cost_per_mtok is not None and cfg.output_cost_per_mtok is not None:
        return Price(cfg.input_cost_per_mtok / 1e6, cfg.output_cost_per_mtok / 1e6, "config")
    if cfg.provider == "local":
        return Price(0.0, 0.0, "embedded")
    table = litellm_facts.known("price", [cfg.model, batch], lambda: table_price(cfg.model, batch))
    return Price(table[0], table[1], "litellm") if table is not None else None


def table_price(model: str, batch: bool) -> tuple[float, float] | None:
    """USD per prompt and completion token in litellm's bundled table (its batch prices when
    ``batch`` and it has them); None when the table does not know the model. Imports litellm:
    :func:`price` keeps the answer per litellm version (:mod:`tasks.models.litellm_facts`)."""
    from tasks.models.llm import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises several types for "not in the table"
        return None
    suffix = "_batches" if batch else ""
    p_in = info.get(f"input_cost_per_token{suffix}") or info.get("input_cost_per_token")
    p_out = info.get(f"output_cost_per_token{suffix}") or info.get("output_cost_per_token")
    if p_in is None or p_out is None:
        return None
    return float(p_in), float(p_out)
