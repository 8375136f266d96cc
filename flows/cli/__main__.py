"""``python -m flows.cli``: the ``invarbench`` command."""

from __future__ import annotations

import sys

from flows.cli import main

# Imported rather than run (the import tests import every module), it does nothing.
if __name__ == "__main__":
    sys.exit(main())
