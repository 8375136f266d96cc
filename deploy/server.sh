#!/bin/sh
# The Prefect server and its UI, offline: http://$HOST:$PORT (default 127.0.0.1:4200).
# Its database lives in $PREFECT_HOME (default ~/.prefect). HOST=0.0.0.0 serves other machines:
# the open-source server has no authentication, so only on a network you trust.
set -eu
cd "$(dirname "$0")/.."
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false
exec "${VENV:-.venv}/bin/prefect" server start --host "${HOST:-127.0.0.1}" --port "${PORT:-4200}"
