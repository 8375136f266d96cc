"""The HTML report drawn from the warehouse's marts (it writes nothing to the lake)."""
