"""`trustmh align` command line: outputs, determinism, tidy input, bad input (synthetic data only)."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from fixture_paths import FIXTURES as SUPPORT_FIXTURES
from trustmh.align import load_tidy
from trustmh.align.tables import ALL_COLUMNS, CELL_COLUMNS
from trustmh.cli.align import main
from trustmh.core import TrustmhError
from trustmh.pillars.mentalbench.align_data import SOURCES
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES

FIXTURES = SUPPORT_FIXTURES / "align"


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("align_make_fixtures", FIXTURES / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    root = tmp_path_factory.mktemp("mentalalign_small")
    mod.build(root)
    return root


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _no_nan(text: str) -> None:
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_cli_writes_outputs_deterministically(fx, tmp_path, mode):
    outs = []
    for k in range(2):
        out = tmp_path / f"run{k}" / "align.json"
        # The page is rendered once (matplotlib is the slow part); JSON and CSV are compared.
        rc = main(["--mentalalign", str(fx), "--mode", mode, "--out", str(out), "--stability-seeds", "4",
                   "--sensitivity"] + (["--no-html"] if k else []))
        assert rc == 0
        outs.append(out)
    for ext in (".json", ".csv"):
        a, b = (o.with_suffix(ext) for o in outs)
        assert a.exists()
        assert _sha(a) == _sha(b)
    text = outs[0].read_text()
    _no_nan(text)
    res = json.loads(text)
    assert res["mode"] == mode
    assert res["seed"] == 42
    md = res["metadata"]
    for key in ("mode", "config_hash", "inputs", "library_versions", "seeds", "thresholds_version"):
        assert key in md
    assert set(md["inputs"]) == {"Human_judge.xlsx", "claude_llm_judge.xlsx", "gpt-4o_llm_judge.xlsx"}
    n_levels = 1 if mode == "faithful" else 2
    assert len(res["cells"]) == 2 * 7 * n_levels
    assert {c["judge"] for c in res["cells"]} == {"claude", "gpt-4o"}
    assert [c["attribute"] for c in res["cells"][:: n_levels]][:7] == list(ATTRIBUTES)
    assert all(list(c)[: len(CELL_COLUMNS)] == list(CELL_COLUMNS) for c in res["cells"])
    with open(outs[0].with_suffix(".csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(ALL_COLUMNS)
    assert len(rows) == len(res["cells"])
    html = outs[0].with_suffix(".html").read_text()
    assert html.count("<svg") >= 3  # forest + Bland–Altman panels
    assert "data:image" not in html  # inline SVG
    assert len(res["data_quality"]) == 2 * len(SOURCES)
    assert res["sensitivity"]
    assert {r["variant"] for r in res["sensitivity"]} >= {"no_original", "pair_on_context"}
    if mode == "default":
        assert res["n_excluded_misaligned_rows"] == 1
        resp = [c for c in res["cells"] if c["level"] == "response"]
        # self-exclusion by family in default mode: gpt-4o leaves out both OpenAI sources, claude its own
        expected = {"claude": (9, "claude"), "gpt-4o": (8, "gpt4o+gpt4omini")}
        assert all((c["n_sources"], c["excluded_source"]) == expected[c["judge"]] for c in resp)
        assert all(c["self_preference"] is not None and c["trust_label"] is not None for c in resp)


def test_faithful_seed_changes_intervals_not_points(fx, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["--mentalalign", str(fx), "--out", str(a), "--stability-seeds", "0", "--no-html"]) == 0
    assert main(["--mentalalign", str(fx), "--out", str(b), "--stability-seeds", "0", "--seed", "7",
                 "--no-html"]) == 0
    assert not a.with_suffix(".html").exists()
    ra, rb = json.loads(a.read_text())["cells"], json.loads(b.read_text())["cells"]
    assert [c["icc_c1"] for c in ra] == [c["icc_c1"] for c in rb]
    assert [c["c1_lo"] for c in ra] != [c["c1_lo"] for c in rb]


# ------------------------------------------------------------------------------------------- tidy input

def _read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _tidy(tmp_path: Path, n_items: int = 8) -> tuple[Path, Path]:
    hrows, jrows = [], []
    for i in range(1, n_items + 1):
        for s, src in enumerate(SOURCES):
            for a, attr in enumerate(ATTRIBUTES):
                h = 1 + (i * 3 + s * 2 + a) % 5
                j = max(1, min(5, h + (i + a) % 3 - 1))
                hrows.append([i, src, "expert_a", attr, h])
                jrows.append([i, src, "judge_x", attr, j])
    return (_write_csv(tmp_path / "human.csv", ["conv_id", "source", "rater", "attribute", "score"], hrows),
            _write_csv(tmp_path / "judge.csv", ["item", "source", "rater", "attribute", "score"], jrows))


def test_tidy_path(tmp_path):
    h, j = _tidy(tmp_path)
    data = load_tidy(h, [j])
    assert list(data.judges) == ["judge_x"]
    assert data.items[:3] == ["1", "2", "3"]
    out = tmp_path / "t.json"
    assert main(["--human", str(h), "--judge", str(j), "--out", str(out), "--stability-seeds", "3"]) == 0
    res = json.loads(out.read_text())
    assert len(res["cells"]) == 7
    # an unknown judge name has no self-exclusion: all 10 sources
    assert all(c["n_sources"] == 10 and c["n_pairs"] == 80 for c in res["cells"])
    assert main(["--human", str(h), "--judge", str(j), "--mode", "default", "--out", str(tmp_path / "d.json"),
                 "--stability-seeds", "2", "--no-html"]) == 0


def test_tidy_judge_named_by_stem_when_no_rater(tmp_path):
    h, j = _tidy(tmp_path, 4)
    rows = _read_rows(j)
    j2 = _write_csv(tmp_path / "gpt-4o.csv", ["item", "source", "attribute", "score"],
                    [[r[0], r[1], r[3], r[4]] for r in rows[1:]])
    data = load_tidy(h, [j2])
    assert list(data.judges) == ["gpt-4o"]
    assert data.excluded("gpt-4o") == "gpt4o"


# ------------------------------------------------------------------------------------------- bad input

def _bad_tidy(tmp_path: Path, column: str, value: object, row: int = 5) -> tuple[Path, Path]:
    h, j = _tidy(tmp_path, 3)
    rows = _read_rows(j)
    col = rows[0].index(column)
    rows[row][col] = value
    _write_csv(j, rows[0], rows[1:])
    return h, j


@pytest.mark.parametrize("column,value,needle", [
    ("score", "four", "row 6, column score"),
    ("attribute", "Wisdom", "unknown attribute 'Wisdom'"),
    ("source", "mystery_model", "unknown source 'mystery_model'"),
])
def test_bad_tidy_input(tmp_path, capsys, column, value, needle):
    h, j = _bad_tidy(tmp_path, column, value)
    with pytest.raises(TrustmhError, match="judge.csv") as e:
        load_tidy(h, [j])
    assert needle in str(e.value)
    out = tmp_path / "x.json"
    assert main(["--human", str(h), "--judge", str(j), "--out", str(out)]) != 0
    assert needle in capsys.readouterr().err
    assert not list(tmp_path.glob("x.*"))
    assert not list(tmp_path.glob(".x.*"))


def test_missing_tidy_column(tmp_path):
    h, j = _tidy(tmp_path, 2)
    rows = _read_rows(h)
    _write_csv(h, rows[0][:-1], [r[:-1] for r in rows[1:]])
    with pytest.raises(TrustmhError, match=r"human.csv: missing column\(s\) \['score'\]"):
        load_tidy(h, [j])
    assert main(["--human", str(h), "--judge", str(j), "--out", str(tmp_path / "y.json")]) == 2
    assert not (tmp_path / "y.json").exists()


def test_bad_workbooks(fx, tmp_path):
    import shutil

    import openpyxl

    root = tmp_path / "bad"
    shutil.copytree(fx, root)
    hp = root / "Human_Judge" / "Human_judge.xlsx"
    wb = openpyxl.load_workbook(hp)
    ws = wb.worksheets[0]
    ws.cell(row=1, column=12).value = "human_response_qwen_4"  # unknown column
    wb.save(hp)
    with pytest.raises(TrustmhError, match=r"Human_judge.xlsx: header row: missing column\(s\) \['human_response_qwen_3'\]"):
        main_or_raise(root)
    assert main(["--mentalalign", str(root), "--out", str(tmp_path / "z.json")]) == 2
    assert not (tmp_path / "z.json").exists()
    ws.cell(row=1, column=12).value = "human_response_qwen_3"
    ws.cell(row=4, column=1).value = "three"  # non-numeric ConvID
    wb.save(hp)
    with pytest.raises(TrustmhError, match=r"Human_judge.xlsx: cell A4 \(ConvID\)"):
        main_or_raise(root)


def main_or_raise(root: Path) -> None:
    from trustmh.align import load_mentalalign

    load_mentalalign(root)


def test_self_exclusion_by_family_for_provider_prefixed_judges() -> None:
    from trustmh.pillars.mentalbench.align_data import SOURCES, excluded_source, family_sources

    assert family_sources("openai/gpt-4o-2024-08-06") == ["gpt4o", "gpt4omini"]
    assert family_sources("anthropic/claude-3-7-sonnet") == ["claude"]
    assert family_sources("ensemble[openai/gpt-4o+google/gemini-2.0-flash]") == ["gemini", "gpt4o", "gpt4omini"]
    assert family_sources("my-local-judge") == []
    # faithful mode keeps the published, exact-name exclusion
    assert excluded_source("gpt-4o") == "gpt4o"
    assert excluded_source("openai/gpt-4o") is None
    assert set(family_sources("gpt-4o")) <= set(SOURCES)


def test_tidy_status_column_is_read_and_all_failures_refused(tmp_path, capsys):
    head = "item,source,rater,attribute,score,status\n"
    human = tmp_path / "h.csv"
    human.write_text(head + "".join(f"c{i},gpt4o,h,Empathy,{1 + i % 5},ok\n" for i in range(6)), encoding="utf-8")
    judge = tmp_path / "j.csv"
    judge.write_text(head + "".join(f"c{i},gpt4o,j,Empathy,,no_response\n" for i in range(6)), encoding="utf-8")
    from trustmh.core import TrustmhError
    from trustmh.pillars.mentalbench.align_data import load_tidy

    with pytest.raises(TrustmhError, match=r"judge 'j': no valid score to analyse \(statuses found: no_response 6\)"):
        load_tidy(human, [judge])
    assert main(["--human", str(human), "--judge", str(judge), "--mode", "default"]) == 2
    assert "no_response 6" in capsys.readouterr().err
    mixed = tmp_path / "m.csv"
    mixed.write_text(head + "c0,gpt4o,j,Empathy,,no_response\n" + "".join(
        f"c{i},gpt4o,j,Empathy,{i % 5 + 1},ok\n" for i in range(1, 6)), encoding="utf-8")
    data = load_tidy(human, [mixed])
    from trustmh.pillars.mentalbench.ratings import ST

    assert int((data.judges["j"].status == ST["no_response"]).sum()) == 1  # not misread as missing_key


def test_svg_plots_escape_labels() -> None:
    from trustmh.report import svg

    page = svg.forest([("<script>alert(1)</script>", [(0.5, 0.2, 0.8, svg.BLUE, "ICC(C,1)")])])
    page += svg.scatter([(3.0, 1.0, 4)], title="<img onerror=x>")
    assert "<script>" not in page
    assert "<img" not in page
    assert "&lt;script&gt;" in page
    assert "&lt;img onerror=x&gt;" in page


def test_self_preference_by_family(tmp_path):
    """A judge from the OpenAI family that rates both OpenAI sources one point high and every other source
    exactly: its self-preference is +1 (the family's mean bias minus the others'), and both sources are
    excluded from its agreement figures."""
    import random

    from trustmh.pillars.mentalbench.align_data import SOURCES

    rng = random.Random(0)
    rows_h, rows_j = [], []
    for i in range(40):
        for src in SOURCES:
            h = rng.randint(1, 4)
            rows_h.append(f"c{i},{src},h,Empathy,{h}\n")
            rows_j.append(f"c{i},{src},openai/gpt-x,Empathy,{h + 1 if src in ('gpt4o', 'gpt4omini') else h}\n")
    head = "item,source,rater,attribute,score\n"
    (tmp_path / "h.csv").write_text(head + "".join(rows_h), encoding="utf-8")
    (tmp_path / "j.csv").write_text(head + "".join(rows_j), encoding="utf-8")
    out = tmp_path / "a.json"
    assert main(["--human", str(tmp_path / "h.csv"), "--judge", str(tmp_path / "j.csv"), "--mode", "default",
                 "--out", str(out), "--no-html", "--n-boot", "200"]) == 0
    cell = next(c for c in json.loads(out.read_text())["cells"]
                if c["level"] == "response" and c["attribute"] == "Empathy")
    assert cell["excluded_source"] == "gpt4o+gpt4omini"
    assert cell["self_preference"] == pytest.approx(1.0)
    assert cell["bias"] == pytest.approx(0.0)  # the inflated family is left out of the agreement figures
