"""A model's price per token: from its configuration, else litellm's bundled table.

Apart from :mod:`tasks.models.cost` (what responses cost, budgets), so that the configuration can check
a budget's prices when it loads without importing the modules that import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


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
    from tasks.models.llm import litellm

    try:
        info = litellm.get_model_info(cfg.model)
    except Exception:  # noqa: BLE001 - litellm raises several types for "not in the table"
        return None
    suffix = "_batches" if batch else ""
    p_in = info.get(f"input_cost_per_token{suffix}") or info.get("input_cost_per_token")
    p_out = info.get(f"output_cost_per_token{suffix}") or info.get("output_cost_per_token")
    if p_in is None or p_out is None:
        return None
    return Price(float(p_in), float(p_out), "litellm")
