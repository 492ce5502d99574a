"""Parsers (§3.3) and the workbook reader on synthetic fixtures (tests/fixtures/align/make_fixtures.py)."""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from fixture_paths import FIXTURES as SUPPORT_FIXTURES
from trustmh.pillars.mentalbench.align_data import SOURCES, load_mentalalign, read_workbook
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES, ST, STEPS, robust_parse, strict_parse

FIXTURES = SUPPORT_FIXTURES / "align"


def _builder():
    spec = importlib.util.spec_from_file_location("align_make_fixtures", FIXTURES / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    mod = _builder()
    root = tmp_path_factory.mktemp("mentalalign_small")
    mod.build(root)
    return root, mod


GOOD = {"Guidance": 3, "Informativeness": 4, "Relevance": 5, "Safety": 5, "Empathy": 4, "Helpfulness": 4,
        "Understanding": 2, "Overall": 4, "Explanation": "Fine."}
GOOD_VALUES = [3.0, 4.0, 5.0, 5.0, 4.0, 4.0, 2.0]


def test_strict_bare_and_fenced():
    text = json.dumps(GOOD)
    assert strict_parse(text) == GOOD_VALUES
    assert strict_parse("```json\n" + text + "\n```") == GOOD_VALUES
    # A fence without the json tag is not stripped by the authors' rule.
    assert all(math.isnan(v) for v in strict_parse("```\n" + text + "\n```"))


@pytest.mark.parametrize("cell", [None, float("nan"), "", "   ", "I think it is fine.\n" + json.dumps(GOOD),
                                  json.dumps(GOOD)[:-10], json.dumps(GOOD).replace('"', "\u201c", 1)])
def test_strict_loses_whole_cell(cell):
    assert all(math.isnan(v) for v in strict_parse(cell))


def test_strict_keeps_out_of_scale_and_nulls():
    obj = dict(GOOD, Guidance=0, Safety=6, Empathy=None, Helpfulness="")
    out = strict_parse(json.dumps(obj))
    assert out[0] == 0.0
    assert out[3] == 6.0
    assert math.isnan(out[4])
    assert math.isnan(out[5])


def test_robust_steps_and_statuses():
    text = json.dumps(GOOD, indent=2)
    bare = robust_parse(text)
    assert STEPS[bare.step] == "json"
    assert set(bare.status) == {ST["ok"]}
    assert list(bare.value) == GOOD_VALUES
    fenced = robust_parse("Sure.\n```json\n" + text + "\n```\nDone.")
    assert STEPS[fenced.step] == "json"
    assert set(fenced.status) == {ST["ok"]}
    prose = robust_parse("Here is my view: " + text + " Thanks.")
    assert STEPS[prose.step] == "span"
    assert set(prose.status) == {ST["recovered"]}
    curly = robust_parse(text.replace('"Guidance"', "\u201cGuidance\u201d"))
    assert STEPS[curly.step] == "quotes"
    assert list(curly.value) == GOOD_VALUES
    truncated = robust_parse(text[: text.index('"Overall"')])
    assert STEPS[truncated.step] == "regex"
    assert list(truncated.value) == GOOD_VALUES
    assert set(truncated.status) == {ST["recovered"]}
    cut_early = robust_parse(text[: text.index('"Empathy"')])
    assert [STATUSES_NAME(s) for s in cut_early.status[4:]] == ["unparseable"] * 3
    empty = robust_parse("")
    assert set(empty.status) == {ST["no_output"]}
    think = robust_parse("<think>draft {\"Guidance\": 1}</think>" + text)
    assert list(think.value) == GOOD_VALUES


def STATUSES_NAME(code: int) -> str:  # noqa: N802 - tiny helper
    from trustmh.pillars.mentalbench.ratings import STATUSES

    return STATUSES[code]


def test_robust_quote_in_explanation_uses_regex():
    broken = json.dumps(GOOD)[:-2] + ' with "quotes" inside."}'
    broken = broken.replace('"Explanation": "Fine.', '"Explanation": "Fine')
    rc = robust_parse(broken)
    assert list(rc.value) == GOOD_VALUES
    assert all(math.isnan(v) for v in strict_parse(broken))


@pytest.mark.parametrize("value,status", [(3, "ok"), (3.0, "ok"), ("4", "recovered"), (0, "out_of_range"),
                                          (6, "out_of_range"), (4.5, "out_of_range"), (None, "missing_key"),
                                          ("Excellent", "non_numeric"), (True, "non_numeric")])
def test_robust_value_statuses(value, status):
    rc = robust_parse(json.dumps(dict(GOOD, Guidance=value)))
    assert STATUSES_NAME(rc.status[0]) == status
    if status == "out_of_range":
        assert rc.value[0] == float(value)  # raw value kept


def test_fixture_workbooks(fx):
    root, mod = fx
    hs = read_workbook(root / "Human_Judge" / "Human_judge.xlsx", "human")
    assert hs.conv_ids == list(range(1, mod.N_CONV + 1))
    data = load_mentalalign(root)
    assert list(data.judges) == ["claude", "gpt-4o"]
    h = data.human
    s = {name: i for i, name in enumerate(SOURCES)}
    a = {name: i for i, name in enumerate(ATTRIBUTES)}
    # leading-space headers were stripped, so every source was read
    assert np.isfinite(h.strict[:, s["claude"], :]).sum() == mod.N_CONV * 7 - 1
    assert h.status[2, s["claude"], a["Understanding"]] == ST["missing_key"]  # null (ConvID 3)
    assert (h.raw[3, s["qwen_2"]] == 0).all()
    assert (h.status[3, s["qwen_2"]] == ST["out_of_range"]).all()
    assert h.strict[3, s["qwen_2"], 0] == 0.0  # faithful keeps zeros as numbers
    assert h.status[5, s["gpt4o"], a["Helpfulness"]] == ST["out_of_range"]
    assert h.raw[5, s["gpt4o"], 5] == 6
    assert h.empty[6, s["qwen_3"]]
    assert (h.status[6, s["qwen_3"]] == ST["no_output"]).all()
    c = data.judges["claude"]
    # prose-first, truncated, curly-quoted and empty fail the strict rule; only the empty cell is unscored
    assert c.strict_failures().sum() == 4
    assert c.unscored().sum() == 1
    assert c.empty[4, s["original"]]
    assert data.judges["gpt-4o"].strict_failures().sum() == 0
    raw, norm = data.context_mismatch()
    assert raw.sum() == 2
    assert norm.sum() == 1
    assert data.items[int(np.flatnonzero(norm)[0])] == "5"
