#!/bin/sh
# A process worker on the `invarbench` pool: runs nightly sweeps, their units and rescores in
# subprocesses of this checkout. Start one per machine (or several); they share the work.
#   PREFECT_API_URL  the server (default http://127.0.0.1:4200/api; `make worker SERVER=…` sets it)
#   AWS_*            credentials of an s3:// lake, passed on to every flow run
#   WORKER_LIMIT     flow runs at once on this worker (default 4; at least 2, since a dispatched
#                    sweep waits for its units while holding one)
set -eu
cd "$(dirname "$0")/.."
export PREFECT_API_URL="${PREFECT_API_URL:-http://127.0.0.1:4200/api}"
# The deployments' pull step starts every flow run here (deploy/prefect.yaml): no code is fetched.
export INVARBENCH_HOME="$(pwd)"
# tasks.environment applies the offline defaults (no analytics, no price-map download) and
# starts the worker; its flow runs inherit them.
exec "${VENV:-.venv}/bin/python" -m tasks.environment "${VENV:-.venv}/bin/prefect" worker start --pool invarbench --type process --limit "${WORKER_LIMIT:-4}"
