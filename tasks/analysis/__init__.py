"""Statistics SQL cannot compute (bootstrap intervals, regressions), stored beside the marts."""
