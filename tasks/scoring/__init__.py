"""Parsing responses into answers and scoring them against golds, over a selection of stored trials."""
