"""Multi-turn conversations (issue 13): plain-Python scoring, no Inspect imports."""
