"""Statistics: seeded bootstrap intervals and agreement measures. numpy-vectorised; no Inspect imports."""
