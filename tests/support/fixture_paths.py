"""Where the tests' files are, for any test folder: `from fixture_paths import FIXTURES, REPO`."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
