"""Sub-task implementations, one module per pillar (or family). Plain Python: no Inspect imports."""
