#!/bin/sh
# The Prefect server and its UI, offline: http://$HOST:$PORT (default 127.0.0.1:4200).
# Its database lives in $PREFECT_HOME (default ~/.prefect). HOST=0.0.0.0 serves other machines:
# the open-source server has no authentication, so only on a network you trust.
set -eu
cd "$(dirname "$0")/.."
# tasks.environment applies the offline defaults (no analytics) and starts the server.
exec "${VENV:-.venv}/bin/python" -m tasks.environment "${VENV:-.venv}/bin/prefect" server start --host "${HOST:-127.0.0.1}" --port "${PORT:-4200}"
