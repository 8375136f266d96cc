"""litellm, imported offline: the only module that imports it (every other one imports it from here).

litellm downloads its price map while it is being imported unless ``LITELLM_LOCAL_MODEL_COST_MAP``
(or ``LITELLM_OFFLINE_MODE``) is set. Entry points set them with
:func:`tasks.environment.apply_defaults`, but a module imported first from elsewhere (a notebook,
``python -c``, a test) would import litellm online. The import below runs under
:func:`tasks.environment.offline`: the variables hold for the import only, values already set
win, and the environment is as before afterwards (importing changes nothing). litellm's global
settings that every call relies on are set here too, once.

Importing litellm takes seconds, so the modules that use it import this one inside the functions
that need it (routes, batch jobs, the embedded provider, the error mapping of the direct path): a
sweep answered from the ledger never does, nor one whose models the direct path serves once their
route, parameters and price are kept (:mod:`tasks.models.litellm_facts`) and none of whose calls fails.
"""

from __future__ import annotations

from tasks.environment import offline

with offline():
    import litellm
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse
    from litellm.utils import custom_llm_setup

litellm.suppress_debug_info = True
litellm.drop_params = True
litellm.telemetry = False

__all__ = ["CustomLLM", "ModelResponse", "custom_llm_setup", "litellm"]
