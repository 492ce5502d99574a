"""crisis/severity_identification: the C-SSRS loader, the level parser, kappa and offline runs (docs/pillars/crisis.md#severity-identification)."""

from __future__ import annotations

import csv
import json
import math
import random
from collections import Counter

import pytest
from sklearn.metrics import cohen_kappa_score

from crisis_canned import CSSRS_FIX, ctx_for
from trustmh.core import RunContext, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.crisis.data import LEVELS, load_cssrs, parse_post_cell
from trustmh.pillars.crisis.parse import parse_level
from trustmh.pillars.crisis.severity import SeverityIdentification, posts_block, severity_metrics
from trustmh.starter import load_starter
from trustmh.stats.agreement import cohen_kappa

CSSRS_REL = "external/C-SSRS/500_Reddit_users_posts_labels.csv"


def test_cssrs_real_file(data_dir):
    path = data_dir / CSSRS_REL
    rows = load_cssrs(path)
    assert len(rows) == 500
    assert Counter(r["label"] for r in rows) == {"Supportive": 108, "Indicator": 99, "Ideation": 171,
                                                  "Behavior": 77, "Attempt": 45}
    assert sum(r["truncated"] for r in rows) == 28
    with path.open(encoding="utf-8", newline="") as fh:
        csv.field_size_limit(1 << 30)
        cells = {rec["User"]: rec["Post"] for rec in csv.DictReader(fh)}
    for r in rows:
        assert r["posts"], r["user"]
        assert all(isinstance(p, str) for p in r["posts"]), r["user"]
        cell = cells[r["user"]]
        # exactly the cells cut at 32,759 characters (no closing bracket) are the repaired ones
        ok = (len(cell) == 32759) == r["truncated"] == (not cell.rstrip().endswith("]"))
        assert ok, r["user"]  # (never print the cell: real crisis text)
    assert [r["user"] for r in rows] == [f"user-{i}" for i in range(500)]


def test_cssrs_fixture_repair_and_quotes():
    rows = load_cssrs(CSSRS_FIX)
    assert len(rows) == 10
    assert Counter(r["level"] for r in rows) == {k: 2 for k in range(1, 6)}
    truncated = [r for r in rows if r["truncated"]]
    assert len(truncated) == 1
    with CSSRS_FIX.open(encoding="utf-8", newline="") as fh:
        cell = {rec["User"]: rec["Post"] for rec in csv.DictReader(fh)}[truncated[0]["user"]]
    assert not cell.endswith("]")
    assert all(p in cell for p in truncated[0]["posts"])
    assert cell.count("<synthetic:") == len(truncated[0]["posts"]) + 1  # the partial post is dropped
    assert any("'" in p for r in rows for p in r["posts"])  # the double-quoted element keeps its quotes


def test_parse_post_cell_cases():
    assert parse_post_cell("['a', 'b']") == (["a", "b"], False)
    assert parse_post_cell("""['a', "it's", 'c""") == (["a", "it's"], True)
    with pytest.raises(TrustmhError, match="cannot repair"):
        parse_post_cell("['only one partial post")
    with pytest.raises(TrustmhError, match="row 3"):
        parse_post_cell("not a list", "file row 3 field 'Post'")


def test_cssrs_bad_label(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("User,Post,Label\nuser-0,\"['x']\",Worried\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match="row 1.*Label"):
        load_cssrs(p)


def test_posts_block_cap():
    text, dropped = posts_block(["a" * 10, "b" * 10, "c" * 10], cap=25)
    assert text == "1. " + "a" * 10 + "\n2. " + "b" * 10
    assert dropped == 1
    text, dropped = posts_block(["x" * 50], cap=20)
    assert text == "1. " + "x" * 20
    assert dropped == 0
    assert posts_block(["line\none"], cap=100) == ("1. line one", 0)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"level": "Ideation"}', 3),
    ('{"level": "attempt"}', 5),
    ('{"level": 2}', 2),
    ('{"level": "4"}', 4),
    ("Behavior", 4),
    ("3", 3),
    ('{"level": "Severe"}', None),
    ('{"level": 7}', None),
    ("Indicator or Ideation", None),
    ("", None),
])
def test_parse_level(text, expected):
    assert parse_level(text) == expected


def test_kappa_on_values_matches_sklearn():
    rng = random.Random(0)
    for _ in range(20):
        a = [rng.randint(1, 5) for _ in range(30)]
        b = [min(5, max(1, x + rng.choice([-2, -1, 0, 0, 1]))) for x in a]
        expected = cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5])
        assert cohen_kappa(a, b, weights="quadratic", on_values=True) == pytest.approx(expected)
    assert math.isnan(cohen_kappa([3, 3], [3, 3], weights="quadratic", on_values=True))
    assert math.isnan(cohen_kappa([], [], weights="quadratic", on_values=True))


def test_severity_metrics_by_hand():
    gold = [1, 2, 3, 4, 5, 3]
    pred = [1, 3, 2, 4, None, 1]
    m = severity_metrics(gold, pred)
    assert m["accuracy"] == pytest.approx(2 / 6)
    assert m["invalid_rate"] == pytest.approx(1 / 6)
    assert m["mae_levels"] == pytest.approx((0 + 1 + 1 + 0 + 2) / 5)
    assert m["under_triage_rate_valid_only"] == pytest.approx(2 / 5)
    assert m["under_triage_at_risk_valid_only"] == pytest.approx(2 / 3)  # gold >= 3, valid prediction: 3, 4, 3
    # conservative: the invalid reply to gold 5 is under-triage too
    assert m["under_triage_rate"] == pytest.approx(3 / 6)
    assert m["under_triage_at_risk"] == pytest.approx(3 / 4)
    valid = [(a, b) for a, b in zip(gold, pred, strict=True) if b is not None]
    assert m["qwk"] == pytest.approx(cohen_kappa_score([a for a, _ in valid], [b for _, b in valid],
                                                       weights="quadratic", labels=[1, 2, 3, 4, 5]))
    assert m["confusion"]["labels"] == list(LEVELS)
    assert m["confusion"]["matrix"][2][1] == 1
    assert m["confusion"]["matrix"][2][0] == 1


def test_severity_runs():
    gold_reply = lambda item, p: json.dumps({"level": LEVELS[item.target - 1]})  # noqa: E731
    for mode, primary in (("faithful", "accuracy"), ("default", "qwk")):
        records, res = run_offline(SeverityIdentification(), ctx_for(mode), gold_reply)
        assert len(records) == 10
        assert res.value == 1.0
        assert res.notes[0].startswith(f"primary metric: {primary}")
        assert res.metrics["items_truncated_cell"] == 1
    records, res = run_offline(SeverityIdentification(), ctx_for("faithful"), lambda i, p: '{"level": "Supportive"}')
    assert res.value == pytest.approx(0.2)
    assert res.metrics["under_triage_at_risk"] == 1.0
    _, res = run_offline(SeverityIdentification(), ctx_for("default"), lambda i, p: '{"level": "Supportive"}')
    assert res.value == pytest.approx(0.0)  # a constant prediction agrees no better than chance
    _, res = run_offline(SeverityIdentification(), ctx_for("default"), lambda i, p: "no idea")
    assert res.status == "not_computed"
    assert res.n_invalid == 10
    items = SeverityIdentification().items(RunContext(mode="default", limit=5, seed=1,
                                                      options={"cssrs_path": str(CSSRS_FIX)}))
    assert sorted(i.target for i in items) == [1, 2, 3, 4, 5]
    assert "1. <synthetic:" in items[0].prompt
    assert "Attempt" in items[0].prompt


def test_severity_starter_and_limit_on_real_file(data_dir):
    rows = load_starter("crisis/severity_identification")
    assert Counter(r["Label"] for r in rows) == {lv: 2 for lv in LEVELS}
    _, res = run_offline(SeverityIdentification(), ctx_for("faithful", suite="starter"),
                         lambda item, p: str(item.target))
    assert res.value == 1.0
    items = SeverityIdentification().items(RunContext(mode="faithful", limit=4))
    assert [i.id for i in items] == [f"cssrs-user-{k}" for k in range(4)]
