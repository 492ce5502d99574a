"""`trustmh rescore --format crisis-original`: the crisis study's published answers, judge evaluations and
human ratings ("Between Help and Harm", LLMs-Mental-Health-Crisis), read from a local copy (the data has no
licence: it is only ever read from a path you supply) and summarised with trustmh's statistics.

Layout under `--from DIR` (the study's repository):

* `data/llm_evaluator/{evaluator}/n_200/merged/{evaluator}-evaluation_{model}-answers-{dataset}-{ts}_merged.json`:
  a list of `{inputs, label, dataset_id, answer, refusal, evaluation, explanation, evals, evaluation_std}`;
* `data/human_label/H1_scores_n206_s42.json`, `H2_…`: `{inputs, answer, label, evaluation}` (bare `NaN` for
  unrated rows, in `label` and `evaluation` alike).

Per evaluator and model: mean appropriateness with a seeded 95% bootstrap interval (items resampled), the mean
within-item standard deviation of the evaluator's three scores, the share of evaluations equal to 1 and in
[0, 2.3], (2.3, 3.6], (3.6, 5], and the mean per label. On the answers both humans rated: each evaluator's
and the jury's (the evaluators' mean) MAE, RMSE and within-1 agreement with each human and between the
humans (scores rounded half up and clipped to 1–5). With `--judge`, trustmh's own crisis-escalation judge
re-judges every published answer: it gets the same per-model figures and the same agreement figures (it is
reported beside the study's judges, never inside their jury).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trustmh.core import JudgeRequest, TrustmhError, clean_json
from trustmh.pillars.crisis.data import canonical_label, load_rater_pair
from trustmh.pillars.crisis.escalation import human_triple_requests
from trustmh.pillars.crisis.parse import parse_escalation_judge
from trustmh.stats.agreement import rating_agreement
from trustmh.stats.bootstrap import bootstrap_mean
from trustmh.storage import write_text_atomic

MERGED = re.compile(r"^(?P<evaluator>.+?)-evaluation_(?P<model>.+?)-answers-(?P<dataset>.+)_merged\.json$")
BINS = (("share_0_2.3", 0.0, 2.3, True), ("share_2.3_3.6", 2.3, 3.6, False), ("share_3.6_5", 3.6, 5.0, False))
HUMANS = ("H1", "H2")


def _log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(float(v)):
        return None
    return float(v)


def _read_list(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))  # Python's json reads the bare NaN of these files
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrustmhError(f"{path}: cannot read as JSON ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise TrustmhError(f"{path}: expected a JSON list of objects")
    return data


def load_evaluations(root: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(evaluator, model) → rows of every merged evaluation file (the three runs pooled)."""
    base = root / "data" / "llm_evaluator"
    if not base.is_dir():
        raise TrustmhError(f"--from {root}: no data/llm_evaluator folder (expected the crisis study's layout)")
    out: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(base.glob("*/n_200/merged/*_merged.json")):
        m = MERGED.match(path.name)
        if m is None:
            raise TrustmhError(f"{path}: file name not of the form "
                               "{evaluator}-evaluation_{model}-answers-{dataset}-{ts}_merged.json")
        for i, row in enumerate(_read_list(path)):
            for key in ("inputs", "answer", "evaluation"):
                if key not in row:
                    raise TrustmhError(f"{path} item {i}: missing field {key!r}")
            out[(m["evaluator"], m["model"])].append({**row, "_file": path.name})
    if not out:
        raise TrustmhError(f"{base}: no */n_200/merged/*_merged.json evaluation files")
    return dict(out)


def summarise(rows: Sequence[dict[str, Any]], *, seed: int, n_boot: int) -> dict[str, Any]:
    """The per-(evaluator, model) figures (see the module docstring)."""
    scores = [_number(r.get("evaluation")) for r in rows]
    valid = [(r, s) for r, s in zip(rows, scores, strict=True) if s is not None]
    out: dict[str, Any] = {"n": len(rows), "n_invalid": len(rows) - len(valid)}
    if not valid:
        return out | {"mean": None, "ci": None}
    values = [s for _, s in valid]
    mean, ci = bootstrap_mean(values, [str(r.get("inputs")) for r, _ in valid], seed=seed, n_boot=n_boot)
    sds = [sd for r, _ in valid if (sd := _number(r.get("evaluation_std"))) is not None]
    out.update(mean=mean, ci=list(ci) if ci else None, mean_within_item_sd=sum(sds) / len(sds) if sds else None,
               share_eq_1=sum(v == 1 for v in values) / len(values))
    for name, lo, hi, closed in BINS:
        out[name] = sum((lo <= v if closed else lo < v) and v <= hi for v in values) / len(values)
    by_label: dict[str, list[float]] = defaultdict(list)
    for r, s in valid:
        by_label[str(r.get("label"))].append(s)
    out["per_label"] = {lab: sum(v) / len(v) for lab, v in sorted(by_label.items())}
    return out


def human_rated(root: Path) -> list[dict[str, Any]]:
    """The answers both humans scored: {inputs, answer, label, H1, H2}."""

    folder = root / "data" / "human_label"
    pair = load_rater_pair(folder / "H1_scores_n206_s42.json", folder / "H2_scores_n206_s42.json")
    return [{"inputs": p["inputs"], "answer": p["answer"], "label": p["label"], "H1": p["h1"], "H2": p["h2"]}
            for p in pair if p["h1"] is not None and p["h2"] is not None]


def human_agreement(rated: Sequence[dict[str, Any]], judges: dict[str, Sequence[float | None]],
                    ours: dict[str, Sequence[float | None]] | None = None) -> dict[str, Any]:
    """Each judge's and the jury's (the study's judges' mean) agreement with H1 and H2, and H1 with H2, on
    the same answers; `ours` (trustmh's judge) is reported beside them, never inside the jury."""
    out: dict[str, Any] = {"n_answers": len(rated),
                           "H1_vs_H2": rating_agreement([r["H1"] for r in rated], [r["H2"] for r in rated])}
    jury: list[float | None] = []
    for i in range(len(rated)):
        got = [s[i] for s in judges.values() if s[i] is not None]
        jury.append(sum(got) / len(got) if got else None)
    for name, scores in [*judges.items(), ("jury", jury), *(ours or {}).items()]:
        out[name] = {h: rating_agreement(scores, [r[h] for r in rated]) for h in HUMANS}
    return out


def evaluator_scores(rated: Sequence[dict[str, Any]], evaluations: dict[tuple[str, str], list[dict[str, Any]]]
                     ) -> dict[str, list[float | None]]:
    """Per evaluator, its mean evaluation of each human-rated answer (matched on conversation and answer)."""
    index: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for (evaluator, _), rows in evaluations.items():
        for row in rows:
            if (s := _number(row.get("evaluation"))) is not None:
                index[evaluator][(str(row["inputs"]), str(row["answer"]))].append(s)
    out: dict[str, list[float | None]] = {}
    for evaluator, by_key in sorted(index.items()):
        vals = [by_key.get((r["inputs"], r["answer"])) for r in rated]
        out[evaluator] = [sum(v) / len(v) if v else None for v in vals]
    return out


def our_judge_requests(rows: Sequence[dict[str, Any]]) -> list[JudgeRequest | None]:
    """trustmh's crisis-escalation judge (our rubric, default mode) on each answer ({inputs, answer, label});
    None where the label is missing or unknown (no rubric row to judge against)."""

    def label(value: Any) -> str | None:
        try:
            return canonical_label(value, "label")
        except TrustmhError:
            return None

    return human_triple_requests([{"index": i, "utterances": str(r["inputs"]).split(" | "),
                                   "answer": str(r["answer"]), "label": label(r.get("label"))}
                                  for i, r in enumerate(rows)])


def our_judge_scores(rows: Sequence[dict[str, Any]], judge: Callable[[JudgeRequest], str]) -> list[float | None]:

    return [None if req is None else parse_escalation_judge(judge(req))["appropriateness"]
            for req in our_judge_requests(rows)]


def published_answers(evaluations: dict[tuple[str, str], list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Per model, each distinct published answer once ({inputs, answer, label}), whichever evaluator saw it."""
    out: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    for (_, model), rows in sorted(evaluations.items()):
        for row in rows:
            out[model].setdefault((str(row["inputs"]), str(row["answer"])), row)
    return {model: list(by_key.values()) for model, by_key in out.items()}


def rescore_crisis(source: Path, out: Path, *, seed: int, n_boot: int = 2000,
                   judge: Callable[[JudgeRequest], str] | None = None, judge_label: str | None = None) -> int:
    """Write `out/crisis_rescore.json`; returns 0. `judge(request) -> text` is trustmh's judge, if any."""

    evaluations = load_evaluations(source)
    per = {f"{ev}|{model}": summarise(rows, seed=seed, n_boot=n_boot)
           for (ev, model), rows in sorted(evaluations.items())}
    rated = human_rated(source)
    judges = evaluator_scores(rated, evaluations)
    ours: dict[str, list[float | None]] = {}
    if judge is not None:
        name = f"trustmh:{judge_label or 'judge'}"
        ours[name] = our_judge_scores(rated, judge)
        # the same per-model figures as for the study's evaluators, from our judge on every answer
        for model, answers in sorted(published_answers(evaluations).items()):
            scores = our_judge_scores(answers, judge)
            per[f"{name}|{model}"] = summarise([{**a, "evaluation": sc, "evaluation_std": None}
                                                for a, sc in zip(answers, scores, strict=True)],
                                               seed=seed, n_boot=n_boot)
    result = {
        "source": str(source), "seed": seed, "n_boot": n_boot,
        "per_evaluator_model": per,
        "human_agreement": human_agreement(rated, judges, ours),
        "notes": ["mean: evaluator's appropriateness (1–5) over every answer of the model, the three runs "
                  "pooled; ci: seeded percentile bootstrap over conversations",
                  "agreement scores are rounded half up and clipped to 1–5; jury = mean of the evaluators"],
    }
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "crisis_rescore.json", json.dumps(clean_json(result), indent=2) + "\n")
    _log(f"wrote {out / 'crisis_rescore.json'} ({len(per)} evaluator × model cells, {len(rated)} answers "
         "rated by both humans)")
    return 0
