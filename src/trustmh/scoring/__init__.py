"""Parsing, rule scorers, judge helpers and metrics shared across sub-tasks (no Inspect imports)."""
