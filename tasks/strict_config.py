"""The base of every section of the configuration file (:class:`StrictConfig`) and the rule for
lists of names in it (:func:`listed_once`).

It sits on the ground floor because each package keeps its own section beside its code
(``tasks.lake.config``, ``tasks.models.config``, ``tasks.runs.config``) and ``tasks.config``
gathers them; none of them may import a package above it for the base class.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict


class StrictConfig(BaseModel):
    """A section of the configuration file: unknown keys are errors, values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def listed_once(names: Optional[list[str]]) -> Optional[list[str]]:
    """Reject a name listed twice: it would run (and store) the same work twice under one id."""
    repeated = sorted({n for n in names or [] if names.count(n) > 1})
    if repeated:
        raise ValueError(f"listed more than once: {', '.join(repeated)}")
    return names
