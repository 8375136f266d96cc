"""``make deploy``: the work pool, the shared rate limits and the deployments of ``deploy/prefect.yaml``.

Run against a Prefect server (``PREFECT_API_URL``), any number of times: each step creates what
is missing and updates what exists.

    python -m flows.deploy --config invarbench.toml

1. the process work pool ``invarbench``;
2. for each configured hosted model, its global concurrency limits (:mod:`tasks.models.limits`);
3. ``prefect deploy --all --prefect-file deploy/prefect.yaml``, with the configuration file and
   the schedule's timezone (``[prefect] timezone``) passed to the file's ``{{ $VAR }}`` templates.

Exit codes: 0 done; 1 the server did not answer; 2 bad configuration or no server configured;
otherwise ``prefect deploy``'s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.exceptions import ObjectNotFound
from prefect.workers.process import ProcessWorker

from tasks.config import Config, load_config
from tasks.environment import apply_defaults
from tasks.errors import ConfigError
from tasks.models.limits import LimitSpec, ensure_limits, limit_specs, shares_limits

REPO = Path(__file__).resolve().parent.parent
PREFECT_FILE = REPO / "deploy" / "prefect.yaml"
WORK_POOL = "invarbench"


def shared_limit_specs(cfg: Config) -> list[LimitSpec]:
    """The limits of every configured model that draws on shared limits (hosted, not opted out)."""
    return [spec for name, model in sorted(cfg.all_models().items()) if shares_limits(model)
            for spec in limit_specs(name, model)]


def ensure_work_pool(name: str = WORK_POOL) -> bool:
    """Create the process work pool ``name`` unless it exists; True when it was created."""
    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(name)
            return False
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(
                name=name, type="process", base_job_template=ProcessWorker.get_default_base_job_template()))
            return True


def portable_path(path: Path) -> str:
    """``path`` relative to the repository when inside it (workers on other machines resolve it
    against their own checkout), else absolute."""
    resolved = path.resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(resolved)


def deploy_all(config_path: str, timezone: str) -> int:
    """Register every deployment of ``deploy/prefect.yaml``; returns ``prefect deploy``'s exit code."""
    env = {**os.environ, "INVARBENCH_CONFIG": config_path, "INVARBENCH_TIMEZONE": timezone}
    # prefect deploy would bake this machine's checkout into the pull step; left unset, the
    # template stays and each worker fills in its own checkout at run time.
    env.pop("INVARBENCH_HOME", None)
    command = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--all", "--prefect-file", str(PREFECT_FILE)]
    return subprocess.run(command, cwd=REPO, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    """Set up the pool, the limits and the deployments; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m flows.deploy", description=__doc__.splitlines()[0])
    parser.add_argument("--config", "-c", type=Path, default=Path("invarbench.toml"),
                        help="configuration file the nightly sweep runs (default: invarbench.toml)")
    args = parser.parse_args(argv)
    apply_defaults()  # prefect deploy runs as a child and inherits them
    if not os.environ.get("PREFECT_API_URL"):
        print("error: PREFECT_API_URL is not set; start a server (make server) and export "
              "PREFECT_API_URL=http://127.0.0.1:4200/api", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    specs = shared_limit_specs(cfg)
    try:
        created = ensure_work_pool()
        ensure_limits(specs)
    except httpx.HTTPError as exc:
        print(f"error: the Prefect server at {os.environ['PREFECT_API_URL']} did not answer: {exc}", file=sys.stderr)
        return 1
    print(f"work pool {WORK_POOL}: {'created' if created else 'exists'}")
    for spec in specs:
        kind = f"rate limit, {spec.slot_decay_per_second:g} slots/s" if spec.is_rate else "concurrency limit"
        print(f"limit {spec.name} = {spec.limit} ({kind})")
    return deploy_all(portable_path(args.config), cfg.prefect.timezone)


if __name__ == "__main__":
    sys.exit(main())
