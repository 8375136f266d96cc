"""invarbench's work: suites (generators), validation, model calls, parsing, scoring, storage, statistics.

Importing this package sets the environment defaults that keep every run offline: litellm's
price map from the installed package instead of a download, and no analytics from Prefect.
Values already in the environment win.
"""

import os

for _key, _value in {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}.items():
    os.environ.setdefault(_key, _value)
