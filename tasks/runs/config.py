"""The ``[sweep]`` keys of the configuration file: what a sweep runs and how its run behaves (claims,
budget, stopping), read by the stream that calls the models (a section of :class:`tasks.config.Config`)."""

from __future__ import annotations

from pydantic import Field, field_validator

from tasks.strict_config import StrictConfig, listed_once


class SweepConfig(StrictConfig):
    """What a sweep runs."""

    models: list[str] = Field(default_factory=lambda: ["local/smollm2", "local/gemma3-270m"])
    seed: int = 0
    samples: int = Field(1, ge=1, le=1000, description="repeats per item (sample_idx 0..samples-1)")
    # Items per chunk (the unit each stage works on); the key keeps the name users' files have.
    batch_size: int = Field(1000, ge=1, le=100000, description="items per chunk (one Prefect task run per stage)")
    breaking_threshold: float = Field(0.5, gt=0, lt=1)
    report: bool = Field(True, description="end each sweep with statistics and the HTML report")
    bootstrap_resamples: int = Field(1000, ge=10, le=100000, description="resamples of the family bootstrap")
    datasets: list[str] = Field(default_factory=list, description="ids of stored datasets to run too "
                                "(from `invarbench import-families`)")
    max_cost_usd: float = Field(0.0, ge=0, description="budget of one sweep run over all models; 0 means none")
    claim_lease_s: float = Field(600.0, gt=0, description="how long a claim on a request being sent lasts "
                                 "unless renewed (a sweep renews its own every third of it)")
    claim_settle_s: float = Field(1.0, ge=0, description="pause between writing claims and re-reading them, "
                                  "so two sweeps claiming at once agree on one winner (none on a local lake "
                                  "when no other run is running)")
    flush_s: float = Field(10.0, gt=0, le=3600, description="how long an answer may wait in memory before it "
                           "is written to the lake (each is in a local spool file from its arrival; a file "
                           "also ends at 4,000 answers and when a group of chunks is answered)")
    stop_grace_s: float = Field(5.0, ge=0, le=300, description="once a sweep is asked to stop (a signal, a "
                                "cancellation in Prefect), how long its calls in flight may take to finish")
    cancel_poll_s: float = Field(2.0, gt=0, le=60, description="how often a running sweep asks Prefect whether "
                                 "it was cancelled")

    _names_once = field_validator("models", "datasets")(listed_once)
