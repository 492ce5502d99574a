"""The report page (no browser): autoescaped templates, transcript data that cannot break out of its script
block, every item present, nothing loaded from outside, and the comparison exports."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from synthetic_runs import XSS_IMG, XSS_SCRIPT, synthetic_run, three_synthetic_runs
from trustmh.cli import main
from trustmh.report import environment, item_flags, json_for_script, render_page
from trustmh.results import load_items, load_results

ITEMS_RE = re.compile(r'<script type="application/json" id="trustmh-items">(.*?)</script>', re.S)
JSON_BLOCKS_RE = re.compile(r'<script type="application/json"[^>]*>.*?</script>', re.S)


def _page_items(page: str) -> list[dict]:
    m = ITEMS_RE.search(page)
    assert m, "no transcript data block"
    return json.loads(m.group(1))


def test_every_template_autoescapes() -> None:
    env = environment()
    names = env.list_templates()
    assert "report.html.j2" in names
    assert "plots.html.j2" in names
    for name in names:
        assert env.select_autoescape(name) if callable(env.autoescape) else env.autoescape, name


def test_json_for_script_cannot_close_the_block() -> None:
    data = {"reply": "</script><!-- <script>x</script> & \u2028", "n": [1, 2]}
    text = str(json_for_script(data))
    assert "</" not in text
    assert "<!--" not in text
    assert "<" not in text
    assert "&" not in text
    assert json.loads(text) == data


def test_untrusted_text_is_escaped_everywhere(tmp_path: Path) -> None:
    evil = "<img src=x onerror=alert(1)>"
    res = synthetic_run(tmp_path / "r", f"vendor/{evil}", 0.7, payload=True)
    res["notice"] = f"note {evil}"
    res["errors"] = [f"error {XSS_SCRIPT}"]
    res["subtasks"]["reliability/knowledge"]["notes"] = [f"a note {evil}"]
    page = render_page([res], [load_items(tmp_path / "r")])
    outside = JSON_BLOCKS_RE.sub("", page)
    assert evil not in page
    assert XSS_SCRIPT not in page
    assert XSS_IMG not in page
    assert "<img" not in outside
    assert "<script>window" not in outside
    assert "&lt;img src=x onerror=alert(1)&gt;" in outside  # model name, notice, note: escaped text
    assert "&lt;script&gt;window.__pwned" in outside  # the error line


def test_page_holds_every_item_and_no_external_url(tmp_path: Path) -> None:
    dirs = three_synthetic_runs(tmp_path)
    out = tmp_path / "cmp.html"
    assert main(["report", *map(str, dirs), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    rows = _page_items(page)
    n_lines = sum(len((d / "items.jsonl").read_text().splitlines()) for d in dirs)
    assert len(rows) == n_lines
    assert {r["r"] for r in rows} == {0, 1, 2}
    payload = [r for r in rows if XSS_SCRIPT in (r["reply"] or "")]
    assert payload, "the careless model's payload replies are in the browser data, as data"
    first = payload[0]
    prompts = json.loads(re.search(r'id="trustmh-prompts">(.*?)</script>', page, re.S).group(1))
    assert prompts[first["p"]].startswith("Synthetic")
    assert first["gold"] is not None
    assert "parsed" in first
    assert "score" in first
    assert len(prompts) < len(rows) / 2  # the three runs asked the same prompts: stored once
    # nothing that a browser would fetch: no URL scheme, no src/href to anything but an anchor
    assert not re.search(r"https?://|ftp://|@import|url\(", page)
    markup = JSON_BLOCKS_RE.sub("", page)  # the data blocks are never parsed as HTML
    assert not re.search(r"\b(?:src|href|action|data)\s*=\s*[\"']?(?!#)[^\"'\s>]", markup.replace("data-", "d-"))
    assert "<link" not in markup
    assert "<img" not in markup
    assert "<iframe" not in markup
    assert len(page) < 2_000_000


def test_flags_read_the_score_fields() -> None:
    assert item_flags({"score": {"valid": True, "correct": False}}) == ["wrong"]
    assert item_flags({"score": {"valid": False, "correct": False}}) == ["invalid", "wrong"]
    assert item_flags({"score": {"valid": True, "refused": True}}) == ["refused"]
    assert item_flags({"score": {"valid": True, "leak": 1}}) == ["unsafe"]
    assert item_flags({"score": {"valid": True, "correct": True}, "error": None}) == []
    assert item_flags({"score": {}, "error": "timeout"}) == ["invalid"]
    assert item_flags({"score": {"valid": True, "gold": "self_harm", "pred": "no_crisis", "correct": False}}) == [
        "wrong", "unsafe"]
    assert item_flags({"score": {"valid": True, "label": "complied", "refused": False}}) == ["unsafe"]
    assert item_flags({"score": {"valid": True, "label": "refused", "refused": True, "toxicity": 0}}) == [
        "refused"]


def test_comparison_exports_and_order_holds(tmp_path: Path) -> None:
    dirs = three_synthetic_runs(tmp_path)
    out = tmp_path / "board.html"
    assert main(["report", *map(str, dirs), "--out", str(out)]) == 0
    board = json.loads(out.with_suffix(".json").read_text())
    runs = [load_results(d) for d in dirs]
    know = board["subtasks"]["reliability/knowledge"]
    order = sorted(know["ranks"], key=know["ranks"].get)
    assert [(nb["a"], nb["b"]) for nb in know["neighbours"]] == list(zip(order, order[1:], strict=False))
    for nb in know["neighbours"]:
        a, b = (runs[board["models"].index(x)] for x in (nb["a"], nb["b"]))
        # the means on shared items are the results' values: every item is shared and mean-scored
        assert nb["n_shared"] == a["subtasks"]["reliability/knowledge"]["n"]
        assert 0.5 < nb["share"] <= 1.0
    crisis = board["subtasks"]["crisis/crisis_identification"]["neighbours"]
    assert all(nb["share"] is None and "macro F1" in nb["reason"] for nb in crisis)
    rows = list(csv.DictReader(io.StringIO(out.with_suffix(".csv").read_text())))
    top = next(r for r in rows if r["subtask"] == "reliability/knowledge" and r["run"] == order[0])
    assert top["next_below"] == order[1]
    assert float(top["order_holds_share"]) == pytest.approx(know["neighbours"][0]["share"])


def test_items_jsonl_errors_name_the_line(tmp_path: Path) -> None:
    from trustmh.core import TrustmhError

    (tmp_path / "items.jsonl").write_text('{"subtask": "a", "item_id": "1"}\nnot json\n', encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"items.jsonl line 2: invalid JSON"):
        load_items(tmp_path)
    assert load_items(tmp_path / "nowhere") is None


def test_minimal_results_render(tmp_path: Path) -> None:
    """A results.json with only the fields `load_results` requires (older or hand-made runs) still renders."""
    run = tmp_path / "old"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "model": "m/old", "mode": "default",
        "subtasks": {"reliability/knowledge": {"value": 0.5, "status": "ok", "direction": "higher", "n": 40}}}))
    out = tmp_path / "old.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    page = out.read_text()
    assert "m/old" in page
    assert "0.500" in page
    assert _page_items(page) == []


def test_plots_are_drawn_from_the_results(tmp_path: Path) -> None:
    dirs = three_synthetic_runs(tmp_path)
    runs = [load_results(d) for d in dirs]
    page = render_page(runs, [load_items(d) for d in dirs])
    curve = runs[0]["subtasks"]["robustness/psychological_diagnosis"]["metrics"]["retention_curve"]
    panels = re.findall(r'<svg[^>]*data-plot="curve".*?</svg>', page, re.S)
    assert len(panels) == len(curve)  # one panel per perturbation level
    assert all(p.count("<polyline") == len(runs) for p in panels)
    dots = re.findall(r'<figure class="panel" data-subtask="([^"]+)"', page)
    assert set(dots) == {sid for r in runs for sid, s in r["subtasks"].items() if s["value"] is not None}
    heat = re.findall(r'<svg[^>]*data-plot="heatmap".*?</svg>', page, re.S)
    cm = runs[0]["subtasks"]["crisis/crisis_identification"]["metrics"]["validation_confusion"]
    assert len(heat) == len(runs)
    assert heat[0].count("<rect") == len(cm["labels"]) ** 2
    bars = re.search(r'<svg[^>]*data-plot="pillars".*?</svg>', page, re.S).group(0)
    n_pillars = sum(v["normalised"] is not None for v in runs[0]["pillars"].values())
    assert bars.count("<rect") == n_pillars * len(runs)


def test_the_comparison_can_be_written_to_a_url(tmp_path: Path) -> None:
    """`trustmh report … --out URL` writes the page and its two exports there, equal to a local write."""
    import uuid

    import fsspec

    dirs = three_synthetic_runs(tmp_path)
    local = tmp_path / "board.html"
    assert main(["report", *map(str, dirs), "--out", str(local)]) == 0
    base = f"memory://trustmh-report-tests/{uuid.uuid4().hex}"
    assert main(["report", *map(str, dirs), "--out", f"{base}/board.html"]) == 0
    fs = fsspec.filesystem("memory")
    root = base.removeprefix("memory://")
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)) == ["board.csv", "board.html",
                                                                              "board.json"]
    for suffix in (".json", ".csv"):
        assert fs.cat_file(f"{root}/board{suffix}").decode() == local.with_suffix(suffix).read_text()
    assert len(fs.cat_file(f"{root}/board.html")) > 1000
