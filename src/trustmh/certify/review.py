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

A conversation sub-task (`Subtask.judged_unit`) is reviewed as whole conversations by two assigned raters,
with a third on disagreement (`adjudicate_review`): `certify.review_conversation` holds what differs.
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
from trustmh.certify.review_conversation import (
    PAIR_SEATS,
    adjudication_page,
    assign_pairs,
    cannot_certify,
    disagreements,
    missing_pair_line,
    model_turns,
    pair_labels,
    scale_names,
    team,
    third_rater,
    transcript,
    turn_agreement,
)
from trustmh.certify.review_rounds import (
    FLAG_FACTOR,
    FLAGGED,
    SAMPLE_FILE,
    cumulative_inclusion,
    design_factor,
    earlier_rounds,
    gate_counts,
    mark_near_zero,
    rate_unit,
    sample_file,
    stratum_of,
    unit_metric,
    unit_scale,
    unit_subtask,
)
from trustmh.core import TrustmhError
from trustmh.data.files import FORMULA_STARTS
from trustmh.digest import files_sha256
from trustmh.json_clean import clean_json
from trustmh.judges.agreement import agreement_figures, consensus
from trustmh.judges.certificates import (
    CONVERSATION,
    REPLY,
    make_certificate,
    parse_thresholds,
    write_certificate,
)
from trustmh.judges.ensemble import MEMBERS_KEY
from trustmh.judges.evidence import ASSUMED_AGREEMENT, pair_record
from trustmh.judges.labels import read_review_labels, read_review_sample, review_key
from trustmh.judges.reference_quality import certify_reference
from trustmh.prompts import load_template
from trustmh.report import environment
from trustmh.results import load_items, load_results
from trustmh.run.rundir import locked
from trustmh.stats.ppi import clustered_corrected_mean, corrected_mean, inverse_probability_weights
from trustmh.stats.sequential import round_alpha
from trustmh.storage import write_text_atomic


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


def judged_items(run_dir: Path, subtasks: Sequence[str] | None = None,
                 rates: bool = False) -> tuple[dict[str, Any], list[dict]]:
    """(results.json, the run's judged records with their judge value), for judged sub-tasks with a
    per-item score; with `rates` (or a unit named in `subtasks`), also each counted rate's items with their
    per-item flag, under the rate's review unit (`review_rounds.rate_unit`)."""
    results = load_results(run_dir)
    records = load_items(run_dir) or []
    mode = str(results.get("mode"))
    chosen = []
    for sid, entry in (results.get("subtasks") or {}).items():
        cls = lookup(sid)
        if cls is None or not (entry.get("judge") or {}).get("fingerprint"):
            continue
        scorer, _ = cls.item_scorer(mode)
        units = [(sid, scorer)] if scorer is not None else []
        units += [(rate_unit(sid, m), fn) for m, fn in dict(getattr(cls, "rate_per_item", {}) or {}).items()
                  if rates or rate_unit(sid, m) in (subtasks or ())]
        for unit, fn in units:
            if subtasks and unit not in subtasks and not (rates and sid in subtasks):
                continue
            chosen.append((unit, cls, fn))
    if subtasks:
        unknown = set(subtasks) - {sid for sid, _, _ in chosen}
        if unknown:
            raise TrustmhError(f"{run_dir}: no judged per-item scores for {', '.join(sorted(unknown))}")
    out = []
    for sid, _cls, scorer in chosen:
        for rec in records:
            if rec.get("subtask") != unit_subtask(sid):
                continue
            value = scorer(rec, results)
            if value is None or not math.isfinite(value):
                continue
            conversation = getattr(_cls, "judged_unit", REPLY) == CONVERSATION
            out.append({"subtask": sid, "item_id": str(rec["item_id"]), "epoch": int(rec.get("epoch") or 1),
                        "judge_value": float(value), "disagree": not conversation and (
                            _members_disagree(rec.get("score") or {}) or _rule_disagrees(rec.get("score") or {})),
                        # a conversation's stratum: the set's stimulus it plays (the record's cluster)
                        "stimulus": str(rec.get("cluster") or rec["item_id"]) if conversation else None,
                        "record": rec})
    if not out:
        raise TrustmhError(f"{run_dir}: no judged item with a per-item score to review")
    return results, out


def draw_sample(items: Sequence[Mapping[str, Any]], n: int, seed: int | Sequence[int],
                oversample: bool) -> list[dict[str, Any]]:
    """Stratified sample: strata sub-task × judge value (× disagreement with `oversample`), allocation in
    proportion to stratum size × (2 for disagreements when oversampling), largest remainders, at most the
    stratum; π = allocated / size per stratum. A conversation sub-task's strata are its stimuli instead, its
    share spread evenly over them (no stimulus over-represented); a near-zero unit's (`mark_near_zero`) are
    the judge's flag, the flagged items' weight × FLAG_FACTOR (`design_factor`)."""
    if n < 1:
        raise TrustmhError("--n must be at least 1")
    strata: dict[tuple, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        strata[stratum_of(it, oversample)].append(i)
    keys = sorted(strata, key=lambda k: (k[0], k[1], k[2]))
    size = {k: len(strata[k]) for k in keys}
    per_subtask = defaultdict(list)
    for k in keys:
        per_subtask[k[0]].append(k)
    flagged = {k: FLAGGED in items[strata[k][0]] for k in keys}
    weight = {k: (sum(size[x] for x in per_subtask[k[0]]) / len(per_subtask[k[0]]) if isinstance(k[1], str)
                  else size[k] * design_factor(k, flagged[k])) for k in keys}
    total = sum(weight.values())
    n = min(n, len(items))
    raw = {k: n * weight[k] / total for k in keys}
    alloc = {k: min(size[k], int(math.floor(raw[k]))) for k in keys}
    # the strata that take a remainder's extra item, among equal remainders (a conversation sub-task's stimuli
    # all have the same), are chosen at random: in key order the first stimuli were always taken and the rest
    # never, so the sample was not random (its own stream: the draws within strata are unchanged)
    shuffled = [keys[int(i)] for i in np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
                .permutation(len(keys))]
    for k in sorted(shuffled, key=lambda k: raw[k] - math.floor(raw[k]), reverse=True):
        if sum(alloc.values()) >= n:
            break
        if alloc[k] < size[k]:
            alloc[k] += 1
    while sum(alloc.values()) < n:  # capped strata left room: fill the least served of the others
        k = min((k for k in shuffled if alloc[k] < size[k]), key=lambda k: alloc[k] / weight[k])
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
                           "inclusion_probability": alloc[k] / size[k],
                           **({"stimulus": it["stimulus"]} if it.get("stimulus") is not None else {})})
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


def _conversation_scale(cls: Any, values: Sequence[float]) -> list[float]:
    """A conversation's label scale: the whole steps of the sub-task's per-conversation range (a judged mean
    over turns is fractional; a rater labels the conversation on the judge's own marks)."""
    lo, hi = getattr(cls, "primary_scale", (0.0, 1.0))
    if float(lo).is_integer() and float(hi).is_integer() and 0 < hi - lo <= 10:
        return [float(x) for x in range(int(lo), int(hi) + 1)]
    return _scale(values)


def export_review(run_dir: Path, *, n: int | None, seed: int, subtasks: Sequence[str] | None = None,
                  oversample: bool = False, out: Path | None = None, raters: int = 2,
                  for_gate: str | Path | None = None, round_: int = 1,
                  agreement: float = ASSUMED_AGREEMENT) -> Path:
    """Draw a review sample and write its page. `n` items in all, or with `for_gate` the labels each judged
    sub-task needs for that policy's checks (`gate_counts`); `round_` K > 1 draws the next labels from the
    items earlier rounds did not take (seeded by (seed, K)): within a stratum the rounds together are one
    simple random sample, so every item's inclusion probability becomes the stratum's share taken so far."""
    if out is not None and not out.parent.is_dir():  # refused before anything is written, never created
        raise TrustmhError(f"--out {out}: the folder {out.parent} does not exist; create it, or choose a page "
                           "in a folder that exists")
    if n is None and for_gate is None:
        raise TrustmhError("review export: give --n N (items to sample) or --for-gate POLICY")
    results, items = judged_items(run_dir, subtasks, rates=for_gate is not None)
    near_zero = mark_near_zero(items) if for_gate is not None else {}  # rare harms: the rare verdict drawn more
    earlier, earlier_team = earlier_rounds(run_dir, round_)
    taken = {s["key"] for s in earlier}
    pool = [it for it in items if review_key(it["subtask"], it["item_id"], it["epoch"]) not in taken]
    if not pool:
        raise TrustmhError(f"--round {round_}: every judged item of {run_dir} is labelled already")
    draw_seed: int | list[int] = seed if round_ == 1 else [seed, round_]
    if for_gate is not None:
        needed = gate_counts(items, for_gate, agreement=agreement)
        sample = [s for sid in sorted(needed) if (part := [it for it in pool if it["subtask"] == sid])
                  for s in draw_sample(part, needed[sid], draw_seed, oversample)]
        sample = [sample[int(i)] for i in np.random.default_rng(draw_seed).permutation(len(sample))]
    else:
        sample = draw_sample(pool, int(n or 0), draw_seed, oversample)
    for s in sample:
        s["round"] = round_
    cumulative_inclusion([*earlier, *sample], items, oversample)
    by_key = {review_key(it["subtask"], it["item_id"], it["epoch"]): it for it in items}
    sids = {it["subtask"] for it in items}
    conversational = {sid for sid in sids if getattr(lookup(unit_subtask(sid)), "judged_unit", REPLY) == CONVERSATION}
    scales = {sid: ([0.0, 1.0] if unit_metric(sid) else  # a counted rate's flag: counted or not
                    _conversation_scale(lookup(sid), [it["judge_value"] for it in items if it["subtask"] == sid])
                    if sid in conversational else _scale([it["judge_value"] for it in items if it["subtask"] == sid]))
              for sid in sids}
    counts = {sid: sum(1 for it in items if it["subtask"] == sid) for sid in scales}
    # a conversation review: two raters of the team on each conversation (docs/judges.md#conversation-review)
    team_names = (earlier_team or team(raters)) if conversational else []
    conversations = [s for s in sample if s["subtask"] in conversational]
    for s, pair in zip(conversations, assign_pairs(len(conversations), team_names), strict=True):
        s["raters"] = pair
        s["model_turns"] = model_turns(by_key[s["key"]]["record"])
    page_items, rubrics = [], {}
    for s in sample:
        page, rubric = _page_item(s, by_key[s["key"]]["record"], scales[s["subtask"]], s.get("raters"))
        page_items.append(page)
        if rubric:
            rubrics[s["subtask"]] = rubric
    review_dir = run_dir / "review"
    review_dir.mkdir(parents=True, exist_ok=True)
    design = ("stratified by sub-task x judge value" + (" x ensemble disagreement (x2)" if oversample else "")
              + ", proportional allocation")
    if conversational:
        design += ("; conversation sub-tasks: stratified by stimulus, the sub-task's share spread evenly over its "
                   "stimuli, two raters per conversation")
    if near_zero:
        design += (f"; near-zero units ({', '.join(sorted(near_zero))}): stratified by the judge's verdict, the rare "
                   f"verdict's items drawn at {FLAG_FACTOR:g}x the others' rate, weighted 1/pi in the estimate")
    if round_ > 1:
        design += f"; round {round_}: drawn from the items rounds 1 to {round_ - 1} did not take"
    everything = [*earlier, *sample]
    manifest = {"format": 1, "run_dir": str(run_dir), "seed": seed, "n": len(everything), "oversample": oversample,
                "population": counts, "scales": scales, "items": everything, "design": design, "rounds": round_,
                **({"for_gate": str(for_gate)} if for_gate is not None else {}),
                **({"near_zero": {"units": near_zero, "factor": FLAG_FACTOR}} if near_zero else {}),
                **({"raters": team_names} if conversational else {})}
    write_text_atomic(review_dir / SAMPLE_FILE, json.dumps(clean_json(manifest), indent=2) + "\n")
    target = out or review_dir / "review.html"
    write_text_atomic(target, review_page(sample, page_items, rubrics, team_names))
    return target


def _page_item(s: Mapping[str, Any], rec: Mapping[str, Any], scale: Sequence[float],
               raters: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(one item of the labelling page, its sub-task's rubric): a reply with its prompt, or a whole
    conversation (every turn numbered) shown to the raters it is assigned to."""
    cls = lookup(unit_subtask(s["subtask"]))
    rubric = {} if cls is None else {"title": cls.title, "description": cls.description,
                                     "templates": [load_template(t) for t in cls.judge_templates]}
    metric = unit_metric(s["subtask"])
    if rubric and metric:  # a counted rate's item: the rater answers that rate's question, 1 = counted
        label = dict(cls.metric_labels).get(metric, metric.replace("_", " "))  # type: ignore[union-attr]
        rubric.update(title=f"{cls.title}: {label}",  # type: ignore[union-attr]
                      description=f"Label 1 if this conversation counts in the {label}, else 0.")
    page = {"key": s["key"], "subtask": s["subtask"], "item_id": s["item_id"], "epoch": s["epoch"], "scale": scale}
    if "model_turns" in s:
        page.update(turns=transcript(rec), model_turns=s["model_turns"], raters=list(raters or ()),
                    scale_names=scale_names(scale, cls().direction("default") if cls and not metric else "lower"))
    else:
        meta = rec.get("metadata") or {}
        page.update(prompt=str(meta.get("prompt") or ""), response=str(rec.get("response") or meta.get("answer") or ""))
    return page, rubric


def review_page(sample: Sequence[Mapping[str, Any]], page_items: Sequence[Mapping[str, Any]],
                rubrics: Mapping[str, Any], raters: Sequence[str]) -> str:
    """The offline labelling page (every text escaped by the template's autoescape)."""
    sample_id = hashlib.sha256(json.dumps([s["key"] for s in sample]).encode()).hexdigest()[:12]
    return environment().get_template("review.html.j2").render(
        items=page_items, rubrics=rubrics, sample_id=sample_id, n=len(page_items), raters=list(raters),
        conversations=any("turns" in it for it in page_items),
        formula_starts=list(FORMULA_STARTS),  # the page's CSV export guards cells as `data.files.safe_cell` does
    )


def adjudicate_review(run_dir: Path, label_paths: Sequence[Path], *, out: Path | None = None) -> tuple[Path, int]:
    """The third-rater step of a conversation review: the conversations whose two assigned raters gave
    different labels get a third rater in `sample.json` (a team member not yet on them, else one more slot)
    and a page of those conversations only; returns (the page, how many)."""
    sample_path = sample_file(run_dir)
    with locked(run_dir, named="run directory"):  # `review adjudicate` takes it as an argument, not --out
        manifest = read_review_sample(sample_path)
        if not manifest.get("raters"):
            raise TrustmhError(f"{sample_path}: not a conversation review (no raters assigned): nothing to adjudicate")
        sample = {s["key"]: s for s in manifest["items"]}
        labels = read_review_labels(label_paths, sample, manifest["scales"])
        disputed = [k for k in disagreements(sample, labels) if len(sample[k]["raters"]) == 2]
        for k in disputed:
            sample[k]["raters"].append(third_rater(sample[k], manifest["raters"]))
        _, items = judged_items(run_dir, sorted({sample[k]["subtask"] for k in disputed}) or None)
        by_key = {review_key(it["subtask"], it["item_id"], it["epoch"]): it for it in items}
        page_items, rubrics = [], {}
        for k in disputed:
            page, rubric = _page_item(sample[k], by_key[k]["record"], manifest["scales"][sample[k]["subtask"]],
                                      sample[k]["raters"][2:])
            page_items.append(page)
            rubrics[sample[k]["subtask"]] = rubric
        manifest["adjudication"] = {"items": disputed, "labels_sha256": files_sha256(label_paths),
                                    "rule": "the two assigned raters' labels differ: a third rater labels it"}
        write_text_atomic(sample_path, json.dumps(clean_json(manifest), indent=2) + "\n")
        target = out or adjudication_page(run_dir)
        third = sorted({sample[k]["raters"][2] for k in disputed})
        write_text_atomic(target, review_page([sample[k] for k in disputed], page_items, rubrics, third))
        return target, len(disputed)


def import_review(run_dir: Path, label_paths: Sequence[Path], *, seed: int, n_boot: int, certs_dir: Path,
                  thresholds: list[str] | None = None) -> dict[str, Any]:
    """Read the labels, measure the judge, write the certificates, results.json's `judge_corrected` and
    `review/review.json`. The run directory's lock is held throughout (a run continued at the same time would
    rewrite results.json under it), and every input is checked before anything is written."""
    with locked(run_dir, named="run directory"):  # `review import` takes it as an argument, not --out
        manifest = read_review_sample(sample_file(run_dir))
        sample = {s["key"]: s for s in manifest["items"]}
        turns: dict[str, dict[str, Any]] = {}
        labels = read_review_labels(label_paths, sample, manifest["scales"], turns)
        if not labels:
            raise TrustmhError("no label in " + ", ".join(str(p) for p in label_paths))
        for label_type in ("binary", "ordinal"):  # a misspelt --threshold is refused before anything is written
            parse_thresholds(thresholds, label_type)
        return _import_labels(run_dir, label_paths, manifest, sample, labels, turns, seed=seed, n_boot=n_boot,
                              certs_dir=certs_dir, thresholds=thresholds)


def _import_labels(run_dir: Path, label_paths: Sequence[Path], manifest: Mapping[str, Any],
                   sample: Mapping[str, Any], labels: Mapping[str, Mapping[str, float]],
                   turns: Mapping[str, Mapping[str, Any]], *, seed: int, n_boot: int,
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
        # the bootstrap on the items' own clusters (a conversation's stimulus)
        clusters = {k: str(sample[k].get("stimulus") or (by_key.get(k) or {}).get("record", {}).get("cluster")
                           or k) for k in keys}
        conversation = "raters" in sample[keys[0]]
        figures, extra = agreement_figures(label_type, humans, judged, seed=seed, n_boot=n_boot,
                                           scale=(min(scale), max(scale)), clusters=clusters if conversation else None)
        # the reference-quality rule (docs/references.md#the-rule): two raters per item at least; a
        # conversation review reads each conversation's assigned pair (a third rater settles the consensus only)
        rated, missing = pair_labels(keys, sample, labels) if conversation else (humans, [])
        quality = certify_reference(rated, judged, label_type=label_type, seed=seed, n_boot=n_boot,
                                    clusters=clusters, scale=(min(scale), max(scale)))
        if missing:
            quality = cannot_certify(quality, missing_pair_line(sid, missing, len(keys), sample, labels))
        elif max((len(h) for h in humans.values()), default=0) < 2:
            quality["reason"] = ("one rater per item: the humans' agreement cannot be measured, so this review "
                                 "cannot certify the judge (label each item by two raters: trustmh review export)")
        if conversation:
            extra["first_response_turn"] = turn_agreement(keys, sample, turns,
                                                          {k: (by_key.get(k) or {}).get("record") or {} for k in keys})
            extra["pairs"] = {"seats": list(PAIR_SEATS), "third_rater": "enters the consensus, not the rule"}
        base, metric = unit_subtask(sid), unit_metric(sid)
        judge = results["subtasks"][base]["judge"]
        corrected = _corrected(sid, keys, humans, sample, items, label_type, int(manifest.get("rounds", 1)))
        if corrected["status"] == "ok":  # the people behind it, held to the rule by the gate (judges.evidence)
            corrected["pair"] = pair_record(quality, rated, humans, len(missing))
            corrected["rounds"] = int(manifest.get("rounds", 1))
        if metric:  # a counted rate's labels correct that rate; the judge's certificate is its primary's
            results["subtasks"][base].setdefault("judge_corrected_rates", {})[metric] = corrected
            summary["subtasks"][sid] = {"certificate": None, "reference_quality": {
                "status": quality["status"], "reason": quality.get("reason")}, "judge_corrected": corrected}
            continue
        cert = make_certificate(settings=judge["fingerprint_settings"],
                                reference={"name": f"review:{run_dir}", "sha256": digest, "source": "run",
                                           "n_items": len(keys),
                                           "unit": CONVERSATION if conversation else REPLY},
                                label_type=label_type, figures=figures,
                                thresholds=parse_thresholds(thresholds, label_type), seed=seed, extra=extra,
                                reference_quality=quality)
        path = write_certificate(certs_dir, cert)
        results["subtasks"][sid]["judge_corrected"] = corrected
        summary["subtasks"][sid] = {"certificate": str(path), "verdict": cert["verdict"], "n": cert["n"],
                                    "reference_quality": {"status": quality["status"],
                                                          "reason": quality.get("reason")},
                                    "agreement": cert["agreement"], "judge_corrected": corrected,
                                    **({"first_response_turn": extra["first_response_turn"]} if conversation
                                       else {}),
                                    **({"human_vs_human": extra["human_vs_human"]} if "human_vs_human" in extra
                                       else {})}
    write_text_atomic(run_dir / "results.json", json.dumps(clean_json(results), indent=2) + "\n")
    write_text_atomic(run_dir / "review" / "review.json", json.dumps(clean_json(summary), indent=2) + "\n")
    return summary


def _corrected(sid: str, keys: Sequence[str], humans: Mapping[str, Mapping[str, Any]],
               sample: Mapping[str, Any], items: Sequence[Mapping[str, Any]], label_type: str,
               rounds: int) -> dict[str, Any]:
    """The judge-corrected mean of the per-item score (PPI, 1/π weights) beside the judge-only mean, its
    interval at the level round `rounds` is read at (`stats.sequential.round_alpha`: valid however many
    labelling rounds the gate reads)."""
    use = [k for k in keys if consensus(list(humans[k].values()), label_type) is not None]
    all_values = [it["judge_value"] for it in items if it["subtask"] == sid]
    if len(use) < 2:
        return {"status": "not_computed", "reason": f"{len(use)} human-labelled item(s): at least 2 needed"}
    Y = np.array([float(consensus(list(humans[k].values()), label_type)) for k in use])
    Yhat = np.array([float(sample[k]["judge_value"]) for k in use])
    weights = inverse_probability_weights([sample[k]["inclusion_probability"] for k in use])
    alpha = round_alpha(rounds)
    judged = [it for it in items if it["subtask"] == sid]
    if all(it.get("stimulus") for it in judged):  # conversations: clustered on their unit, as the gate's figures
        res = clustered_corrected_mean(Y, Yhat, np.array(all_values), [sample[k]["stimulus"] for k in use],
                                       [it["stimulus"] for it in judged], weights=weights, alpha=alpha,
                                       scale=unit_scale(sid))
    else:
        res = corrected_mean(Y, Yhat, np.array(all_values), weights=weights, alpha=alpha)
    unit = {} if res.clusters is None else {"clusters": res.clusters, "effective_n": res.effective_n}
    return {"status": "ok", "value": res.estimate, "ci": None if res.ci is None else list(res.ci),
            "reason": res.reason, "lambda": res.lam, "lambda_tuned": res.lam_tuned, "n_labelled": res.n,
            "N_judged": res.N, "weighted": True, **unit,
            "judge_only": {"value": res.judge_only.estimate,
                           "ci": None if res.judge_only.ci is None else list(res.judge_only.ci)},
            "human_only": {"value": res.human_only.estimate,
                           "ci": None if res.human_only.ci is None else list(res.human_only.ci)},
            "alpha": alpha, "method": "PPI (lambda = 1) below 200 labels, PPI++ from 200; 1/pi weights; "
                                      + ("clustered on the conversations' unit (docs/statistics.md#clustered-ppi); "
                                         if unit else "CLT ")
                                      + f"interval at {1 - alpha:.2%}, round {rounds}'s share of 95% spent over the "
                                      "labelling rounds (docs/statistics.md#labelling-rounds)"}
