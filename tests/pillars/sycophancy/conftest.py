"""Fixtures shared by the sycophancy pillar's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def elephant(data_dir: Path) -> Path:
    """The ELEPHANT samples in the shared data folder."""
    return data_dir / "external" / "ELEPHANT"
