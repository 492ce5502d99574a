"""Privacy pillar loaders: the ConfAIde tier 1-2 files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.pillars.privacy.data import load_confaide_tier1, load_confaide_tier2


def test_confaide_loaders(pdir: Path) -> None:
    b1, b2 = pdir / "task1/benchmark", pdir / "task2/benchmark"
    t1 = load_confaide_tier1(b1 / "tier_1.txt", b1 / "tier_1_labels.txt")
    assert len(t1) == 10
    labels = [float(x) for x in (b1 / "tier_1_labels.txt").read_text().split()]
    assert [r["human"] for r in t1] == labels
    assert all("\\n" in r["text"] and "\n" not in r["text"] for r in t1)  # literal two characters kept
    t2 = load_confaide_tier2(b2 / "tier_2a.txt", b2 / "tier_2b.txt", b2 / "tier_2_labels.txt")
    assert Counter(r["tier"] for r in t2) == {"2a": 98, "2b": 98}
    labels2 = [float(x) for x in (b2 / "tier_2_labels.txt").read_text().split()]
    assert [r["human"] for r in t2 if r["tier"] == "2b"] == labels2


def test_confaide_loader_length_mismatch(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("a\nb\n")
    (tmp_path / "l.txt").write_text("1.0")
    with pytest.raises(TrustmhError, match="2 items"):
        load_confaide_tier1(tmp_path / "t.txt", tmp_path / "l.txt")
    (tmp_path / "l.txt").write_text("1.0\nx")
    with pytest.raises(TrustmhError, match="line 2"):
        load_confaide_tier1(tmp_path / "t.txt", tmp_path / "l.txt")
