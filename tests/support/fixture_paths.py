"""Where the tests' files are, for any test folder: `from fixture_paths import FIXTURES, REPO`."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
FIXTURES = SUPPORT / "fixtures"
REPO = SUPPORT.parents[1]
