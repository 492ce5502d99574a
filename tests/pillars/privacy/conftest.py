"""Fixtures shared by the privacy pillar's tests: where the original's privacy files are."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustmh.pillars.privacy.rescore import PRIVACY_DIR


@pytest.fixture(scope="module")
def root(data_dir: Path) -> Path:
    """The original study's folder in the shared data."""
    return data_dir / "trustmh"


@pytest.fixture(scope="module")
def pdir(root: Path) -> Path:
    """Its privacy folder (task1-3 benchmarks and released results)."""
    return root / PRIVACY_DIR
