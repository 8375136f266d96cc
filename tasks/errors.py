"""The errors every floor raises and the commands catch: a bad configuration and an unusable lake.

They live on the ground floor so that the lake, which raises them, need not import the
configuration file's module, which stands above it.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem; the message names the key and what is wrong with it."""


class LakeError(ConfigError):
    """The lake cannot be used: an unreachable endpoint, a missing bucket, wrong credentials."""
