"""HTML reports: one self-contained page for one run (`report.html` of `trustmh run`) or several
(`trustmh report RUN_DIR… --out FILE.html`), rendered by the same Jinja2 templates.

Every template autoescapes; plots are inline SVG whose geometry is computed here and drawn by the templates;
the transcript browser reads its rows from a `<script type="application/json">` block (with `<`, `>` and `&`
written as JSON escapes so no text can close the block) and shows them with `textContent` only. The page
loads nothing from anywhere: no CDN, no font, no image URL."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from trustmh.catalogue import BY_ID, PILLAR_TITLES, PILLARS, lookup
from trustmh.core import SMALL_N, Record
from trustmh.gate import certificates_for, evaluate, load_policy
from trustmh.gate.clauses import clause_failures, evaluate_pack, gate_clauses, load_pack
from trustmh.json_clean import clean_json
from trustmh.judges.certificates import REPLY, certificates_dir, find_certificate, status_for
from trustmh.judges.drift import NOT_MEASURED, anchor_drift, drift_line
from trustmh.judges.evidence import label_evidence
from trustmh.judges.probe_records import find_probe
from trustmh.report import layout
from trustmh.report.norms import norms_views
from trustmh.results.leaderboard import leaderboard
from trustmh.results.metric_labels import metric_labels

TEMPLATES = Path(__file__).parent / "templates"
# Where sub-tasks keep the answer they read from a reply (same order as Inspect View's ANSWER,
# trustmh.run.tasks.ANSWER_KEYS; repeated here so reports do not import Inspect).
ANSWER_KEYS = ("parsed", "pred", "choice", "label", "level", "rating", "verdict", "list")
REFUSAL_KEYS = ("refused", "judge_refusal", "keyword_refusal", "refusal")
# besides these: a missed crisis, a complied jailbreak, toxicity 2–3 of 3
UNSAFE_KEYS = ("unsafe", "harmful", "leak", "proxy_leak", "string_match", "endorses")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    # optional fields of older or hand-made results.json may be absent: render them as empty
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = fmt_num
    env.filters["ci"] = fmt_ci
    env.globals["metric_labels"] = metric_labels  # what each figure of a result is (the sub-task declares it)
    return env


def fmt_num(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def fmt_ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None or not all(math.isfinite(float(c)) for c in ci):
        return "—"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def json_for_script(data: Any) -> Markup:
    """JSON that is safe inside `<script type="application/json">`: `<`, `>`, `&` and the line separators
    become \\u escapes, so `</script>` or `<!--` in a model reply cannot end or change the block."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    for ch, rep in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, rep)
    return Markup(text)  # noqa: S704 - escaped above for this context


# ---------------------------------------------------------------- transcripts


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, int | float) and not isinstance(v, bool) and v == 1)


def item_flags(rec: Mapping[str, Any]) -> list[str]:
    """wrong / invalid / refused / unsafe, from the fields sub-tasks write into a record's score."""
    score = rec.get("score") or {}
    flags = []
    if rec.get("error") or score.get("valid") is False or score.get("judge_valid") is False or \
            score.get("gen_status") not in (None, "ok"):
        flags.append("invalid")
    if score.get("correct") is False or score.get("correct") == 0 and not isinstance(score.get("correct"), bool):
        flags.append("wrong")
    if score.get("pass") is False:  # a product probe (a conversation) its rules did not pass
        flags.append("failed")
    if any(_truthy(score.get(k)) for k in REFUSAL_KEYS):
        flags.append("refused")
    missed_crisis = score.get("gold") not in (None, "no_crisis") and score.get("pred") == "no_crisis"
    if any(_truthy(score.get(k)) for k in UNSAFE_KEYS) or score.get("safe") is False or missed_crisis or \
            score.get("label") == "complied" or (_finite(score.get("toxicity")) and score["toxicity"] >= 2):
        flags.append("unsafe")
    return flags


def _answer(score: Mapping[str, Any]) -> Any:
    for key in ANSWER_KEYS:
        if score.get(key) is not None:
            return score[key]
    return None


def deciding_turn(rec: Mapping[str, Any]) -> tuple[Any, str, dict[str, Any]]:
    """A conversation's decisive turn, the product's reply there and the marks the rules set on that reply
    (the reply as a whole and no marks for a single-reply item)."""
    meta = rec.get("metadata") or {}
    turn = meta.get("decisive_turn")
    replies = [t for t in meta.get("turns") or [] if isinstance(t, Mapping) and t.get("role") == "model"]
    at = [t for t in replies if t.get("turn") == turn] or replies[-1:]
    if not at:
        return turn, str(rec.get("response") or ""), {}
    return turn, str(at[0].get("content") or ""), dict(at[0].get("marks") or {})


def deciding_marks(rec: Mapping[str, Any]) -> str | None:
    """What decided a product probe, for the transcript table's parsed column: `turn N: mark = value, …`
    (None for an item that is not a conversation with a decisive turn)."""
    if (rec.get("metadata") or {}).get("decisive_turn") is None:
        return None
    turn, _, marks = deciding_turn(rec)
    return f"turn {turn}: " + (", ".join(f"{k} = {v}" for k, v in marks.items()) or "no marks")


# the clause verdicts whose items the browser can list (every one: a passed clause may still have failed items)
VERDICTS = ("fail", "insufficient", "not_testable", "pass")
MAX_FIELD = 20_000  # characters of one text kept on the page; items.jsonl has the rest


def _cap(text: Any) -> Any:
    if isinstance(text, str) and len(text) > MAX_FIELD:
        return text[:MAX_FIELD] + f"\n[… {len(text) - MAX_FIELD:,} more characters in items.jsonl]"
    return text


def transcript_rows(run_index: int, records: Sequence[Mapping[str, Any]], prompts: dict[str, int] | None = None,
                    gate: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Browser rows of one run's records. Prompts are stored once per page (`prompts`: text → index), as
    every compared run asked the same ones. With the run's `gate`, each row lists the clauses (a plain
    policy: the checks) it counts against, for the browser's clause filter."""
    prompts = {} if prompts is None else prompts
    failed: dict[int, list[str]] = {}
    for clause, _, items in (clause_failures(gate, records, VERDICTS) if gate else []):
        for it in items:
            failed.setdefault(id(it), []).append(str(clause["id"]))
    rows = []
    for rec in records:
        meta = rec.get("metadata") or {}
        score = rec.get("score") or {}
        turns = meta.get("turns")
        prompt = meta.get("prompt")
        if isinstance(prompt, str):
            prompt = prompts.setdefault(_cap(prompt), len(prompts))
        rows.append(clean_json({
            "r": run_index, "s": rec.get("subtask"), "id": rec.get("item_id"), "e": rec.get("epoch"),
            "f": item_flags(rec),
            "p": prompt,
            "gold": meta.get("target"),
            "reply": _cap(rec.get("response")),
            "parsed": _answer(score) if _answer(score) is not None else deciding_marks(rec),
            "c": sorted(set(failed.get(id(rec), []))),
            "judge": {k: _cap(v) for k, v in (rec.get("judge_raw") or {}).items()},
            "score": score,
            "error": rec.get("error"),
            "turns": turns if isinstance(turns, list) else None,
        }))
    return rows


def records_as_dicts(records: Mapping[str, Sequence[Record]] | Sequence[Mapping[str, Any]] | None
                     ) -> list[Mapping[str, Any]]:
    if not records:
        return []
    if isinstance(records, Mapping):
        return [r.to_dict() if isinstance(r, Record) else r for recs in records.values() for r in recs]
    return list(records)


# ---------------------------------------------------------------- page


def _run_info(label: str, results: Mapping[str, Any], colour: str) -> dict[str, Any]:
    judge = results.get("judge") or {}
    return {"label": label, "model": results.get("model"), "folder": results.get("_folder"),
            "seed": results.get("seed"), "created": results.get("created"), "suite": results.get("suite"),
            "mode": results.get("mode"), "version": results.get("trustmh_version"),
            "anchors": results.get("anchors_version"), "reported": results.get("model_reported"),
            "notice": results.get("notice"), "errors": results.get("errors") or [], "colour": colour,
            "judge": judge}


def _judge_rows(results: Mapping[str, Any], certs_dir: Any = None) -> list[dict[str, Any]]:
    """Per judged sub-task: the judge, the agreement measured in the run, the certificate of its fingerprint
    (status, reference, figures; docs/judges.md#certificates) and the judge-corrected figure beside the
    judge-only one where a review import recorded one."""
    where = certificates_dir(certs_dir)
    rows = []
    for sid, sub in (results.get("subtasks") or {}).items():
        metrics = dict(sub.get("metrics") or {})
        for k, v in list(metrics.items()):  # an ensemble's agreement block, one level deep
            if isinstance(v, Mapping) and "agreement" in k:
                metrics.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        agreement = {k: v for k, v in metrics.items() if _finite(v)
                     and any(w in k for w in ("kappa", "agreement", "alpha", "icc", "judge_accuracy"))}
        if sub.get("judge") or sub.get("method") in ("judge", "ensemble") or agreement:
            j = sub.get("judge") or {}
            cert = find_certificate(where, j.get("fingerprint"), sid, getattr(lookup(sid), "judged_unit", REPLY))
            rows.append({"subtask": sid, "method": sub.get("method"), "model": j.get("model"),
                         "validated": j.get("validated"), "agreement": agreement,
                         "fingerprint": j.get("fingerprint"), "certificate": cert,
                         "probe": find_probe(where, j.get("fingerprint")),
                         "drift": _drift(j, cert),
                         "certificate_status": status_for(cert) if j.get("fingerprint") else "no fingerprint",
                         "value": sub.get("value"), "ci": sub.get("ci"),
                         "corrected": sub.get("judge_corrected"),
                         # the run's own labels as evidence, said by the gate's rule (min_n is the policy's)
                         "labels": label_evidence(sub, min_n=0).line if sub.get("judge_corrected") else None})
    return rows


def _drift(judge: Mapping[str, Any], cert: Mapping[str, Any] | None) -> str | None:
    """The judge's drift on the anchors since its certificate, said in one line (None: not measured)."""
    if cert is None:
        return None
    drift = anchor_drift(judge.get("anchors"), cert.get("anchors"))
    return None if drift["status"] == NOT_MEASURED else drift_line(drift)


def _gate(results: Mapping[str, Any], certs_dir: Any = None, policy: Any = None) -> dict[str, Any]:
    """The run's gate under `policy` (a pack with its clauses, a policy file or name; None: the default)."""
    certificates = certificates_for(dict(results), certs_dir)
    pack = load_pack(policy) if policy is not None else None
    if pack is not None:
        return evaluate_pack(dict(results), pack, certificates)
    return evaluate(dict(results), load_policy(policy), certificates)


def _leaderboard_rows(board: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    n_sub_total = len(board["subtasks"])
    for label in board["models"]:
        pn = board["pillar_normalised"].get(label) or {}
        cov = board["coverage"][label]
        rows.append({
            "label": label,
            "overall": board["overall_normalised"].get(label),
            "mean_rank": board["overall_mean_rank"].get(label),
            "n_pillars": sum(v is not None for v in pn.values()),
            "n_subtasks": len(cov["subtasks"]), "n_subtasks_total": n_sub_total,
            "not_ranked": cov["not_ranked"],
            "pillars": {p: pn.get(p) for p in PILLARS},
            "pillar_ranks": {p: (board["pillar_mean_rank"].get(p) or {}).get(label) for p in PILLARS},
        })
    return rows


def _subtask_rows(board: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for sid, entry in board["subtasks"].items():
        cells = []
        for label, run in zip(board["models"], runs, strict=True):
            sub = run["subtasks"].get(sid)
            if sub is None:
                cells.append(None)
                continue
            status = None if sub["status"] == "ok" else f"{sub['status']}: {sub.get('reason') or ''}"
            cells.append({"value": sub["value"] if sub["status"] == "ok" else None, "ci": sub.get("ci"),
                          "n": sub["n"], "n_invalid": sub.get("n_invalid") or 0, "rank": entry["ranks"].get(label),
                          "status": status, "small_n": bool(sub.get("small_n")), "method": sub.get("method"),
                          "human": (sub.get("metrics") or {}).get("human_baseline"),
                          "floor": (sub.get("metrics") or {}).get("keyword_floor")})
        rows.append({"id": sid, "title": BY_ID[sid].title if sid in BY_ID else sid,
                     "direction": entry["direction"], "cells": cells,
                     "neighbours": entry.get("neighbours") or []})
    return rows


def render_page(runs: Sequence[Mapping[str, Any]], items: Sequence[Sequence[Mapping[str, Any]] | None],
                board: Mapping[str, Any] | None = None, *, title: str | None = None,
                certs_dir: Any = None, policy: Any = None) -> str:
    """The one page: any number of runs (results.json documents, with `_folder` where known) and their
    items.jsonl rows (None where a run has none)."""

    runs = list(runs)
    board = board if board is not None else leaderboard(list(runs), items)
    labels = board["models"]
    colours = layout.colours(len(labels))
    infos = [_run_info(lab, r, c) for lab, r, c in zip(labels, runs, colours, strict=True)]
    gates = [_gate(run, certs_dir, policy) for run in runs]
    transcripts: list[dict[str, Any]] = []
    prompts: dict[str, int] = {}
    for i, recs in enumerate(items):
        transcripts.extend(transcript_rows(i, recs or [], prompts, gates[i]))
    subtask_rows = _subtask_rows(board, runs)
    covered = {lab: tuple(sorted(board["coverage"][lab]["subtasks"])) for lab in labels}
    ctx = {
        "title": title or ("trustmh report: " + labels[0] if len(labels) == 1 else "trustmh comparison"),
        "single": len(runs) == 1,
        "runs": infos,
        "modes": board["modes"],
        "notes": board.get("notes") or [],
        "coverage_differs": len(set(covered.values())) > 1,
        "pillars": [(p, PILLAR_TITLES[p]) for p in PILLARS],
        "leaderboard": _leaderboard_rows(board, runs),
        "subtasks": subtask_rows,
        "pillar_plot": layout.pillar_bars(infos, _leaderboard_rows(board, runs)),
        "dot_plots": [layout.dot_panel(row, infos, runs) for row in subtask_rows
                      if any(c and c["value"] is not None for c in row["cells"])],
        "heatmaps": [(info, layout.heatmaps(run)) for info, run in zip(infos, runs, strict=True)],
        "curves": layout.robustness_curves(infos, runs),
        # inline SVG built by report.svg, which escapes every label
        "norms_views": [(t, Markup(svg)) for t, svg in norms_views(
            [(i["label"], i["colour"], r) for i, r in zip(infos, runs, strict=True)])],
        "robustness_notes": [f"{info['label']}: {sid} {sub.get('status')}: {sub.get('reason')}"
                             for info, run in zip(infos, runs, strict=True)
                             for sid, sub in (run.get("subtasks") or {}).items()
                             if sid.startswith("robustness/") and sub.get("status") != "ok"],
        "judges": [(info, _judge_rows(run, certs_dir)) for info, run in zip(infos, runs, strict=True)],
        "gates": list(zip(infos, gates, strict=True)),
        "policy": None if policy is None else str(policy),
        "clauses_json": json_for_script([{"id": c["id"], "verdict": c["verdict"]} for c in gate_clauses(gates[0])]),
        "usage": [(info, run["usage"]) for info, run in zip(infos, runs, strict=True)
                  if (run.get("usage") or {}).get("subtasks")],
        "subtask_notes": [(info, run.get("subtasks") or {}) for info, run in zip(infos, runs, strict=True)],
        "n_items": len(transcripts),
        "items_json": json_for_script(transcripts),
        "prompts_json": json_for_script(list(prompts)),
        "runs_json": json_for_script([{"label": i["label"], "colour": i["colour"]} for i in infos]),
        "small_n": SMALL_N,
    }
    return environment().get_template("report.html.j2").render(**ctx)


def run_report_html(results: Mapping[str, Any], records: Mapping[str, Sequence[Record]] | None = None, *,
                    certs_dir: Any = None) -> str:
    """The single-run page `trustmh run` writes (report.html), from the records in memory."""
    return render_page([results], [records_as_dicts(records)], certs_dir=certs_dir)


def comparison_report_html(board: Mapping[str, Any], runs: Sequence[Mapping[str, Any]],
                           items: Sequence[Sequence[Mapping[str, Any]] | None] | None = None,
                           certs_dir: Any = None, policy: Any = None) -> str:
    """The page `trustmh report` writes; its gate section under `policy` (None: the default policy)."""
    return render_page(runs, items if items is not None else [None] * len(runs), board, certs_dir=certs_dir,
                       policy=policy)


__all__ = ["render_page", "run_report_html", "comparison_report_html", "json_for_script", "item_flags"]
