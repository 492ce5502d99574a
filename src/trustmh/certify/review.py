"""`trustmh review export|import`: a team's own human labels for a run's judged items (docs/judges.md#review).

Export draws a seeded, stratified random sample of a run's judged items — strata are sub-task × the judge's
per-item score (the sub-task's `per_item` scorer, i.e. the judged value whose mean is published), allocated
in proportion to the strata's sizes (every item of a sub-task then has the same inclusion probability), or,
with `--oversample-disagreements`, at twice the rate for items whose ensemble members disagreed or where a
rule-based verdict (the keyword refusal detector) and the judge's differ — and writes
`review/sample.json` (item keys, judge values, inclusion probabilities) and a self-contained offline HTML
labelling page, blind to the judge's verdict and the model's name.

Import reads the page's CSV exports (columns rater, subtask, item_id, epoch, label), measures the judge
against the humans' consensus per sub-task (and the first two raters against each other), writes a
certificate per sub-task for the run's judge fingerprint (reference `review:<run dir>`, source "run"), and
records judge-corrected figures (PPI with 1/π weights, `stats.ppi.corrected_mean`) beside the judge-only
ones in results.json (`subtasks.<id>.judge_corrected`) and `review/review.json`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.catalogue import lookup
from trustmh.core import TrustmhError
from trustmh.data.files import FORMULA_STARTS
from trustmh.digest import files_sha256
from trustmh.json_clean import clean_json
from trustmh.judges.agreement import agreement_figures, consensus
from trustmh.judges.certificates import make_certificate, parse_thresholds, write_certificate
from trustmh.judges.ensemble import MEMBERS_KEY
from trustmh.judges.labels import read_review_labels, read_review_sample, review_key
from trustmh.judges.reference_quality import certify_reference
from trustmh.prompts import load_template
from trustmh.report import environment
from trustmh.results import load_items, load_results
from trustmh.run.rundir import locked
from trustmh.stats.ppi import corrected_mean, inverse_probability_weights
from trustmh.storage import write_text_atomic

SAMPLE_FILE = "sample.json"


def _members_disagree(score: Mapping[str, Any]) -> bool:
    members = score.get(MEMBERS_KEY)
    if not isinstance(members, dict) or len(members) < 2:
        return False
    scores = list(members.values())
    keys = [k for k in scores[0] if k not in ("valid", "judge_valid", "rationale", "explanation")]
    return any(len({json.dumps(m.get(k), sort_keys=True) for m in scores}) > 1 for k in keys)


# A rule-based verdict beside the judge's on the same item: (rule key, judge keys). The keyword refusal
# detector runs on every safety reply; where it and the judge's refusal call differ, the item is a
# disagreement that `--oversample-disagreements` draws at twice the rate.
RULE_VS_JUDGE = (("keyword_refusal", ("refused", "judge_refusal")),)


def _rule_disagrees(score: Mapping[str, Any]) -> bool:
    for rule_key, judge_keys in RULE_VS_JUDGE:
        rule = score.get(rule_key)
        judged = next((score[k] for k in judge_keys if isinstance(score.get(k), bool)), None)
        if isinstance(rule, bool) and judged is not None and rule != judged:
            return True
    return False


def judged_items(run_dir: Path, subtasks: Sequence[str] | None = None) -> tuple[dict[str, Any], list[dict]]:
    """(results.json, the run's judged records with their judge value), for judged sub-tasks with a
    per-item score."""
    results = load_results(run_dir)
    records = load_items(run_dir) or []
    mode = str(results.get("mode"))
    chosen = []
    for sid, entry in (results.get("subtasks") or {}).items():
        if subtasks and sid not in subtasks:
            continue
        cls = lookup(sid)
        if cls is None or not (entry.get("judge") or {}).get("fingerprint"):
            continue
        scorer, _ = cls.item_scorer(mode)
        if scorer is None:
            continue
        chosen.append((sid, cls, scorer))
    if subtasks:
        unknown = set(subtasks) - {sid for sid, _, _ in chosen}
        if unknown:
            raise TrustmhError(f"{run_dir}: no judged per-item scores for {', '.join(sorted(unknown))}")
    out = []
    for sid, _cls, scorer in chosen:
        for rec in records:
            if rec.get("subtask") != sid:
                continue
            value = scorer(rec, results)
            if value is None or not math.isfinite(value):
                continue
            out.append({"subtask": sid, "item_id": str(rec["item_id"]), "epoch": int(rec.get("epoch") or 1),
                        "judge_value": float(value), "disagree": _members_disagree(rec.get("score") or {})
                        or _rule_disagrees(rec.get("score") or {}),
                        "record": rec})
    if not out:
        raise TrustmhError(f"{run_dir}: no judged item with a per-item score to review")
    return results, out


def draw_sample(items: Sequence[Mapping[str, Any]], n: int, seed: int, oversample: bool) -> list[dict[str, Any]]:
    """Stratified sample: strata sub-task × judge value (× disagreement with `oversample`), allocation in
    proportion to stratum size × (2 for disagreements when oversampling), largest remainders, at most the
    stratum; π = allocated / size per stratum."""
    if n < 1:
        raise TrustmhError("--n must be at least 1")
    strata: dict[tuple, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        strata[(it["subtask"], it["judge_value"], bool(it["disagree"]) if oversample else False)].append(i)
    keys = sorted(strata, key=lambda k: (k[0], k[1], k[2]))
    size = {k: len(strata[k]) for k in keys}
    weight = {k: size[k] * (2.0 if k[2] else 1.0) for k in keys}
    total = sum(weight.values())
    n = min(n, len(items))
    raw = {k: n * weight[k] / total for k in keys}
    alloc = {k: min(size[k], int(math.floor(raw[k]))) for k in keys}
    for k in sorted(keys, key=lambda k: raw[k] - math.floor(raw[k]), reverse=True):
        if sum(alloc.values()) >= n:
            break
        if alloc[k] < size[k]:
            alloc[k] += 1
    while sum(alloc.values()) < n:  # capped strata left room: fill the others in order
        k = next(k for k in keys if alloc[k] < size[k])
        alloc[k] += 1
    rng = np.random.default_rng(seed)
    chosen = []
    for k in keys:
        if alloc[k] == 0:
            continue
        picks = rng.choice(strata[k], size=alloc[k], replace=False)
        for i in sorted(int(p) for p in picks):
            it = items[i]
            chosen.append({"key": review_key(it["subtask"], it["item_id"], it["epoch"]), "subtask": it["subtask"],
                           "item_id": it["item_id"], "epoch": it["epoch"], "judge_value": it["judge_value"],
                           "disagree": it["disagree"], "stratum": [k[0], k[1], k[2]],
                           "inclusion_probability": alloc[k] / size[k]})
    order = rng.permutation(len(chosen))  # the page shows items in a random order, not stratum by stratum
    return [chosen[int(i)] for i in order]


def _scale(values: Sequence[float]) -> list[float]:
    vals = sorted(set(values))
    if set(vals) <= {0.0, 1.0}:
        return [0.0, 1.0]
    lo, hi = math.floor(min(vals)), math.ceil(max(vals))
    if hi - lo <= 10 and all(float(v).is_integer() for v in vals):
        return [float(x) for x in range(int(lo), int(hi) + 1)]
    return vals


def export_review(run_dir: Path, *, n: int, seed: int, subtasks: Sequence[str] | None = None,
                  oversample: bool = False, out: Path | None = None) -> Path:
    if out is not None and not out.parent.is_dir():  # refused before anything is written, never created
        raise TrustmhError(f"--out {out}: the folder {out.parent} does not exist; create it, or choose a page "
                           "in a folder that exists")
    results, items = judged_items(run_dir, subtasks)
    sample = draw_sample(items, n, seed, oversample)
    by_key = {review_key(it["subtask"], it["item_id"], it["epoch"]): it for it in items}
    scales = {sid: _scale([it["judge_value"] for it in items if it["subtask"] == sid])
              for sid in {it["subtask"] for it in items}}
    counts = {sid: sum(1 for it in items if it["subtask"] == sid) for sid in scales}
    page_items, rubrics = [], {}
    for s in sample:
        rec = by_key[s["key"]]["record"]
        meta = rec.get("metadata") or {}
        cls = lookup(s["subtask"])
        if s["subtask"] not in rubrics and cls is not None:
            rubrics[s["subtask"]] = {"title": cls.title, "description": cls.description,
                                     "templates": [load_template(t) for t in cls.judge_templates]}
        page_items.append({"key": s["key"], "subtask": s["subtask"], "item_id": s["item_id"],
                           "epoch": s["epoch"], "prompt": str(meta.get("prompt") or ""),
                           "response": str(rec.get("response") or meta.get("answer") or ""),
                           "scale": scales[s["subtask"]]})
    review_dir = run_dir / "review"
    review_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"format": 1, "run_dir": str(run_dir), "seed": seed, "n": len(sample), "oversample": oversample,
                "population": counts, "scales": scales, "items": sample,
                "design": "stratified by sub-task x judge value" + (" x ensemble disagreement (x2)" if oversample
                                                                    else "") + ", proportional allocation"}
    write_text_atomic(review_dir / SAMPLE_FILE, json.dumps(clean_json(manifest), indent=2) + "\n")
    sample_id = hashlib.sha256(json.dumps([s["key"] for s in sample]).encode()).hexdigest()[:12]
    html = environment().get_template("review.html.j2").render(
        items=page_items, rubrics=rubrics, sample_id=sample_id, n=len(page_items),
        formula_starts=list(FORMULA_STARTS),  # the page's CSV export guards cells as `data.files.safe_cell` does
    )
    target = out or review_dir / "review.html"
    write_text_atomic(target, html)
    return target


def import_review(run_dir: Path, label_paths: Sequence[Path], *, seed: int, n_boot: int, certs_dir: Path,
                  thresholds: list[str] | None = None) -> dict[str, Any]:
    """Read the labels, measure the judge, write the certificates, results.json's `judge_corrected` and
    `review/review.json`. The run directory's lock is held throughout (a run continued at the same time would
    rewrite results.json under it), and every input is checked before anything is written."""
    sample_path = run_dir / "review" / SAMPLE_FILE
    if not sample_path.is_file():
        raise TrustmhError(f"{sample_path} not found: run `trustmh review export {run_dir}` first")
    with locked(run_dir, named="run directory"):  # `review import` takes it as an argument, not --out
        manifest = read_review_sample(sample_path)
        sample = {s["key"]: s for s in manifest["items"]}
        labels = read_review_labels(label_paths, sample, manifest["scales"])
        if not labels:
            raise TrustmhError("no label in " + ", ".join(str(p) for p in label_paths))
        for label_type in ("binary", "ordinal"):  # a misspelt --threshold is refused before anything is written
            parse_thresholds(thresholds, label_type)
        return _import_labels(run_dir, label_paths, manifest, sample, labels, seed=seed, n_boot=n_boot,
                              certs_dir=certs_dir, thresholds=thresholds)


def _import_labels(run_dir: Path, label_paths: Sequence[Path], manifest: Mapping[str, Any],
                   sample: Mapping[str, Any], labels: Mapping[str, Mapping[str, float]], *, seed: int, n_boot: int,
                   certs_dir: Path, thresholds: list[str] | None) -> dict[str, Any]:
    results, items = judged_items(run_dir, sorted({s["subtask"] for s in sample.values()}))
    by_key = {review_key(it["subtask"], it["item_id"], it["epoch"]): it for it in items}
    digest = files_sha256(label_paths)
    summary: dict[str, Any] = {"run_dir": str(run_dir), "subtasks": {}}
    for sid in sorted({s["subtask"] for s in sample.values()}):
        keys = [k for k, s in sample.items() if s["subtask"] == sid and k in labels]
        if not keys:
            continue
        scale = manifest["scales"][sid]
        label_type = "binary" if scale == [0.0, 1.0] else "ordinal"
        humans = {k: {r: (int(v) if label_type == "binary" else v) for r, v in labels[k].items()} for k in keys}
        judged = {k: (int(sample[k]["judge_value"]) if label_type == "binary" else sample[k]["judge_value"])
                  for k in keys}
        figures, extra = agreement_figures(label_type, humans, judged, seed=seed, n_boot=n_boot,
                                           scale=(min(scale), max(scale)))
        # the reference-quality rule (docs/references.md#the-rule): two raters per item at least, the
        # bootstrap on the items' own clusters (a conversation's stimulus)
        clusters = {k: str((by_key.get(k) or {}).get("record", {}).get("cluster") or k) for k in keys}
        quality = certify_reference(humans, judged, label_type=label_type, seed=seed, n_boot=n_boot,
                                    clusters=clusters, scale=(min(scale), max(scale)))
        if max((len(h) for h in humans.values()), default=0) < 2:
            quality["reason"] = ("one rater per item: the humans' agreement cannot be measured, so this review "
                                 "cannot certify the judge (label each item by two raters: trustmh review export)")
        judge = results["subtasks"][sid]["judge"]
        cert = make_certificate(settings=judge["fingerprint_settings"],
                                reference={"name": f"review:{run_dir}", "sha256": digest, "source": "run",
                                           "n_items": len(keys)},
                                label_type=label_type, figures=figures,
                                thresholds=parse_thresholds(thresholds, label_type), seed=seed, extra=extra,
                                reference_quality=quality)
        path = write_certificate(certs_dir, cert)
        corrected = _corrected(sid, keys, humans, sample, items, label_type)
        results["subtasks"][sid]["judge_corrected"] = corrected
        summary["subtasks"][sid] = {"certificate": str(path), "verdict": cert["verdict"], "n": cert["n"],
                                    "reference_quality": {"status": quality["status"],
                                                          "reason": quality.get("reason")},
                                    "agreement": cert["agreement"], "judge_corrected": corrected,
                                    **({"human_vs_human": extra["human_vs_human"]} if "human_vs_human" in extra
                                       else {})}
    write_text_atomic(run_dir / "results.json", json.dumps(clean_json(results), indent=2) + "\n")
    write_text_atomic(run_dir / "review" / "review.json", json.dumps(clean_json(summary), indent=2) + "\n")
    return summary


def _corrected(sid: str, keys: Sequence[str], humans: Mapping[str, Mapping[str, Any]],
               sample: Mapping[str, Any], items: Sequence[Mapping[str, Any]], label_type: str) -> dict[str, Any]:
    """The judge-corrected mean of the per-item score (PPI, 1/π weights) beside the judge-only mean."""
    use = [k for k in keys if consensus(list(humans[k].values()), label_type) is not None]
    all_values = [it["judge_value"] for it in items if it["subtask"] == sid]
    if len(use) < 2:
        return {"status": "not_computed", "reason": f"{len(use)} human-labelled item(s): at least 2 needed"}
    Y = np.array([float(consensus(list(humans[k].values()), label_type)) for k in use])
    Yhat = np.array([float(sample[k]["judge_value"]) for k in use])
    weights = inverse_probability_weights([sample[k]["inclusion_probability"] for k in use])
    res = corrected_mean(Y, Yhat, np.array(all_values), weights=weights)
    return {"status": "ok", "value": res.estimate, "ci": None if res.ci is None else list(res.ci),
            "reason": res.reason, "lambda": res.lam, "lambda_tuned": res.lam_tuned, "n_labelled": res.n,
            "N_judged": res.N, "weighted": True,
            "judge_only": {"value": res.judge_only.estimate,
                           "ci": None if res.judge_only.ci is None else list(res.judge_only.ci)},
            "human_only": {"value": res.human_only.estimate,
                           "ci": None if res.human_only.ci is None else list(res.human_only.ci)},
            "method": "PPI (lambda = 1) below 200 labels, PPI++ from 200; 1/pi weights; 95% CLT interval "
                      "(docs/statistics.md#judge-corrected-figures)"}
