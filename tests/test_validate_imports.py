"""Great Expectations' import without the modules validation does not use (tasks.items.validate):
scipy.stats and altair are imported at their first use, and then are the modules themselves."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO, process_env

# In a process of its own: this one may have imported scipy.stats already.
CHECK = r"""
import sys, threading
from tasks.items import validate
from tasks.items.validate import ValidationFailed, validate_items

validate.prepare()
assert "great_expectations" in sys.modules
assert [type(sys.modules[m]).__name__ for m in ("scipy.stats", "altair")] == ["_Deferred", "_Deferred"]
row = {"item_id": "a", "gold": "1", "prompt": "p", "family_id": "f", "key_entities": 5, "bin_lo": 5,
       "bin_hi": 30, "answer_type": "integer", "suite": "s", "task": "t"}
assert validate_items([row, {**row, "item_id": "b", "family_id": "g", "prompt": "q"}]) == 2
try:
    validate_items([row, {**row, "gold": ""}])
except ValidationFailed as exc:  # the same item twice, an empty gold: both found
    assert "expect_column_values_to_be_unique" in str(exc) and "value_lengths_to_be_between" in str(exc), exc
else:
    raise AssertionError("not rejected")
assert [type(sys.modules[m]).__name__ for m in ("scipy.stats", "altair")] == ["_Deferred", "_Deferred"]

# first used from several threads at once: imported once, the module's own objects everywhere
from great_expectations.expectations.core import expect_column_kl_divergence_to_be_less_than as kl
got = []
def use():
    from scipy.stats import norm
    got.append(norm)
threads = [threading.Thread(target=use) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
import scipy.stats
assert type(sys.modules["scipy.stats"]).__name__ == "module"
assert all(n is scipy.stats.norm for n in got) and len(got) == 4
assert kl.stats.entropy is scipy.stats.entropy and kl.stats.entropy([0.5, 0.5], [0.5, 0.5]) == 0
import altair
assert kl.alt.Chart is altair.Chart
import scipy.stats._distn_infrastructure  # a submodule, through the module's own __path__
print("ok")
"""


def test_validation_defers_scipy_stats_and_altair_and_they_import_at_first_use():
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO, env=process_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
