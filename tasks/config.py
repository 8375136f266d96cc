"""The one configuration file (``invarbench.toml``): models, suites, warehouse, sweep settings.

Every key has a documented default, so an empty file is a valid configuration. Unknown keys,
unknown models, unknown suites/tasks/parameters and bad values raise :class:`ConfigError` with a
message naming the key; the CLI turns that into exit code 2 before anything is written.
A model's keys are :class:`tasks.models.config.ModelConfig`'s, the warehouse's
:class:`tasks.lake.config.WarehouseConfig`'s, the sweep's :class:`tasks.runs.config.SweepConfig`'s.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any, Collection, Literal, Optional, Sequence

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from tasks.errors import ConfigError
from tasks.environment import thread_count
from tasks.lake.config import DUCKDB_THREADS_ENV, WarehouseConfig
from tasks.models.config import BUILTIN_MODELS, ModelConfig, threads
from tasks.runs.config import SweepConfig
from tasks.strict_config import StrictConfig, listed_once
from tasks.suites import get_task, suite_tasks
from tasks.suites.base import GeneratorError

DEFAULT_CONFIG_FILE = "invarbench.toml"


class SuiteConfig(StrictConfig):
    """Which tasks of a suite to run, from which preset, with parameter overrides per task."""

    preset: Literal["smoke", "full"] = "full"
    tasks: Optional[list[str]] = Field(None, description="the tasks to run; omitted means every task of the "
                                       "suite, an empty list none")
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)

    _tasks_once = field_validator("tasks")(listed_once)


class PrefectConfig(StrictConfig):
    """Deployment settings (``make deploy``): the nightly schedule's timezone."""

    timezone: str = Field("UTC", description="IANA timezone of the nightly-sweep cron schedule")

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown timezone {value!r}; use an IANA name such as UTC or Europe/Berlin") from None
        return value


class Config(StrictConfig):
    """The whole resolved configuration; stored with each run."""

    warehouse: WarehouseConfig = WarehouseConfig()
    sweep: SweepConfig = SweepConfig()
    prefect: PrefectConfig = PrefectConfig()
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    suites: dict[str, SuiteConfig] = Field(default_factory=lambda: {"symmetry": SuiteConfig(preset="smoke", tasks=["closure"])})

    @field_validator("suites")
    @classmethod
    def _known_suites(cls, suites: dict[str, SuiteConfig], info: ValidationInfo) -> dict[str, SuiteConfig]:
        only = info.context.get("suites") if info.context else None  # None: every suite
        for name, suite in suites.items():
            if only is not None and name not in only:
                continue  # load_config(suites=...): a command that generates none or only some
            try:
                known = suite_tasks(name)
            except GeneratorError as exc:
                raise ValueError(str(exc)) from None
            for task in list(suite.tasks or []) + list(suite.params):
                if task not in known:
                    raise ValueError(f"suites.{name}: unknown task {task!r}; known: {', '.join(sorted(known))}")
            for task, params in suite.params.items():
                try:
                    get_task(name, task).resolve(params)
                except GeneratorError as exc:
                    raise ValueError(f"suites.{name}.params.{task}: {exc}") from None
        return suites

    def all_models(self) -> dict[str, ModelConfig]:
        """Built-in models overlaid with the configured ones."""
        return {**BUILTIN_MODELS, **self.models}

    def model(self, name: str) -> ModelConfig:
        """One model's configuration; an unknown name is a ConfigError listing the known ones."""
        models = self.all_models()
        if name not in models:
            raise ConfigError(f"sweep.models: unknown model {name!r}; known: {', '.join(sorted(models))}")
        return models[name]

    def task_params(self, suite: str, task: str) -> dict[str, Any]:
        """The parameters a task runs with: its preset (smoke slice or defaults) plus overrides."""
        spec = get_task(suite, task)
        cfg = self.suites[suite]
        base = dict(spec.smoke) if cfg.preset == "smoke" else {}
        return spec.resolve({**base, **cfg.params.get(task, {})})

    def tasks_of(self, suite: str) -> list[str]:
        """The tasks of ``suite`` this configuration runs: the listed ones (``tasks = []``: none),
        every task of the suite when the list is omitted or the suite is not configured."""
        listed = self.suites[suite].tasks if suite in self.suites else None
        return list(listed) if listed is not None else list(suite_tasks(suite))

    def selected_tasks(self) -> list[tuple[str, str]]:
        """(suite, task) pairs the sweep generates, in a stable order."""
        return [(suite, task) for suite in self.suites for task in self.tasks_of(suite)]

    def select(self, suites: Sequence[str] = (), tasks: Sequence[str] = (), datasets: Sequence[str] = ()) -> "Config":
        """This configuration restricted to what the ``sweep`` filters name; no filter, unchanged.

        With any filter, only what is named runs: a ``--suite`` runs the tasks the configuration
        runs of it (:meth:`tasks_of`; a suite the configuration does not list runs every task, with
        the task defaults, and one whose list is empty is an error); a ``--task`` (``suite.task``, or a bare task name that one suite alone
        has) runs that task, and when it names a task of a ``--suite`` too, that suite runs only
        its named tasks; a ``--dataset`` runs that stored dataset. Configured suites and
        ``sweep.datasets`` that no filter names do not run. Raises ConfigError for an unknown or
        ambiguous name.
        """
        if not (suites or tasks or datasets):
            return self
        named: dict[str, list[str]] = {}
        for name in tasks:
            suite, task = _resolve_task(name)
            named.setdefault(suite, [])
            if task not in named[suite]:
                named[suite].append(task)
        chosen: dict[str, list[str] | None] = {}
        for suite in suites:
            try:
                suite_tasks(suite)
            except GeneratorError as exc:
                raise ConfigError(f"--suite: {exc}") from None
            if not self.tasks_of(suite) and suite not in named:
                raise ConfigError(f"--suite {suite}: the configuration runs none of its tasks (tasks = []); "
                                  f"name one with --task")
            chosen[suite] = self.tasks_of(suite)
        chosen.update(named)
        data = self.model_dump(mode="json")
        data["suites"] = {
            suite: {**(data["suites"].get(suite) or {"preset": "full"}), "tasks": task_list}
            for suite, task_list in chosen.items()
        }
        data["sweep"]["datasets"] = list(dict.fromkeys(datasets))
        return Config.model_validate(data)

    @property
    def warehouse_path(self) -> Path:
        return Path(self.warehouse.path).expanduser().resolve()

    @property
    def catalog_path(self) -> Path:
        """The catalog file (DuckDB views over the lake) in the warehouse folder."""
        return self.warehouse_path / "invarbench.duckdb"

    @property
    def lake_path(self) -> str:
        """The lake root: a local path, or an object-store URL.

        For an ``s3://`` lake, ``endpoint_url`` and ``region`` ride along as the URL's query
        options in pyarrow's own form (``?endpoint_override=…&region=…``), so the one string
        every stage receives configures the filesystem too. Credentials never do.
        """
        lake = self.warehouse.lake or str(self.warehouse_path / "lake")
        options = {"endpoint_override": self.warehouse.endpoint_url, "region": self.warehouse.region}
        options = {k: v for k, v in options.items() if v}
        if not (lake.startswith("s3://") and options):
            return lake
        from urllib.parse import urlencode

        return lake + ("&" if "?" in lake else "?") + urlencode(options)

    @property
    def lake_catalog(self) -> str | None:
        """The DuckLake catalog as :class:`tasks.lake.lake.Lake` takes it: ``sqlite:/abs/path``,
        ``postgres:<libpq connection string>``, or None for a local lake's own default (a SQLite
        file in the lake folder, see ``Lake.catalog``). An ``s3://`` lake's default is a SQLite
        file in the warehouse folder, since a SQLite file cannot live in a bucket.
        """
        kind, _, rest = self.warehouse.catalog.partition(":")
        if kind == "postgres":
            return self.warehouse.catalog
        if kind == "sqlite":
            return f"sqlite:{Path(rest).expanduser().resolve()}"
        if self.warehouse.lake.startswith("s3://"):
            return f"sqlite:{self.warehouse_path / 'lake-catalog.sqlite'}"
        return None

    def resolved(self) -> dict[str, Any]:
        """The configuration as stored with a run: plain data, secrets never included (keys are env var names)."""
        data = self.model_dump(mode="json")
        data["models"] = {name: m.model_dump(mode="json") for name, m in self.all_models().items() if name in self.sweep.models}
        return data


def _resolve_task(name: str) -> tuple[str, str]:
    """``suite.task``, or a bare task name that exactly one suite has, as (suite, task)."""
    from tasks.suites import SUITES

    if "." in name:
        suite, task = name.split(".", 1)
        try:
            get_task(suite, task)
        except GeneratorError as exc:
            raise ConfigError(f"--task {name}: {exc}") from None
        return suite, task
    owners = [suite for suite in SUITES if name in suite_tasks(suite)]
    if not owners:
        known = ", ".join(f"{s}.{t}" for s in SUITES for t in suite_tasks(s))
        raise ConfigError(f"--task {name}: no suite has this task; known: {known}")
    if len(owners) > 1:
        raise ConfigError(f"--task {name}: ambiguous, several suites have it; name one of "
                          f"{', '.join(f'{s}.{name}' for s in owners)}")
    return owners[0], name


def _format_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        lines.append(f"{key}: {msg}")
    return "; ".join(lines)


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None,
                suites: bool | Collection[str] = True) -> Config:
    """Read and validate a configuration.

    ``path`` None means ``./invarbench.toml`` when it exists, else the defaults. ``overrides``
    (from CLI flags) are merged over the file, key by key. Every model named in
    ``sweep.models`` must be known. ``suites=False`` leaves the suites' task names and
    parameters unchecked, for commands that only read the warehouse: checking them imports every
    configured suite's generators (sympy for geometry); a collection of suite names checks only
    those, for a command that generates only them.
    """
    data: dict[str, Any] = {}
    if path is None and Path(DEFAULT_CONFIG_FILE).exists():
        path = DEFAULT_CONFIG_FILE
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"configuration file {p} does not exist")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    data = _merge(data, overrides or {})
    try:
        only = None if suites is True else frozenset(suites or ())
        cfg = Config.model_validate(data, context={"suites": only})
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc)) from None
    for name in cfg.sweep.models:
        cfg.model(name)
    for name, model in cfg.models.items():
        if model.provider == "local" and model.model not in BUILTIN_MODELS:
            raise ConfigError(f"models.{name}.model: unknown embedded model {model.model!r}; known: {', '.join(BUILTIN_MODELS)}")
    if any(cfg.model(name).provider == "local" for name in cfg.sweep.models):
        threads()  # before any call: a bad value would otherwise be an error answer per request
    thread_count(DUCKDB_THREADS_ENV)  # before anything is read or written
    _check_budget_prices(cfg)
    return cfg


def _check_budget_prices(cfg: Config) -> None:
    """A budget needs a price for every model it covers; refuse the configuration otherwise."""
    budgeted = [n for n in cfg.sweep.models if cfg.sweep.max_cost_usd or cfg.model(n).max_cost_usd]
    if not budgeted:
        return
    from tasks.models.pricing import (
        price,  # may import litellm (a price no earlier process kept): only when a budget is configured
    )

    for name in budgeted:
        if price(cfg.model(name)) is None:
            raise ConfigError(f"models.{name}: a budget (max_cost_usd) is set but litellm's price table does not know "
                              f"{cfg.model(name).model!r}; set input_cost_per_mtok and output_cost_per_mtok")
