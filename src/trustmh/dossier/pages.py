"""The dossier's pages (docs/dossier.md#pages): the one-page summary (Markdown and printable HTML) with every
policy's verdict per clause side by side, and the failing conversations of every failing or insufficient
clause. Written from the gate dicts the gate's own evaluation returned and the dossier's items; every text
from a model, a product or a policy file is escaped (`safe_text`, then HTML or a Markdown cell). Plain Python.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.gate.clauses import clause_failures, gate_clauses
from trustmh.gate.evaluate import NOT_TESTABLE, certify_hint
from trustmh.report import deciding_turn
from trustmh.results.reported import format_counts
from trustmh.safe_text import safe_text

VERDICT_WORDS = {"insufficient": "insufficient evidence", NOT_TESTABLE: "not testable"}
# conversations shown in full per check; the ids of the rest are listed
SHOWN_PER_CHECK = 200


def verdict_words(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)


def cell(text: Any) -> str:
    """Markdown table cell text: one line, no pipe or angle bracket that could break the table or open a tag."""
    return " ".join(safe_text(str(text)).split()).replace("|", "/").replace("<", "&lt;").replace(">", "&gt;")


def esc(text: Any) -> str:
    return html.escape(safe_text(str(text)), quote=True)


def _num(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _interval(row: Mapping[str, Any]) -> str:
    ci = row.get("ci")
    return "—" if not ci else f"[{_num(ci[0])}, {_num(ci[1])}]"


def evidence(row: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> str:
    """What a check's figure rests on: a judge's certificate, an uncertified judge, or the run's own rule labels;
    for a judged one, the names the judge's provider answered with on that sub-task (provenance.json)."""
    if not row.get("judged"):
        return "the run's own labels (rules, no judge)"
    judge = row.get("judge") or {}
    cert = judge.get("certificate")
    by_subtask = ((provenance or {}).get("run") or {}).get("judges_answered_by_subtask") or {}
    answered = by_subtask.get(str(row.get("subtask")))
    names = f"; answered as {format_counts(answered)} (calls)" if answered else ""
    if cert:
        return (f"judge certificate {str(cert.get('fingerprint'))[:12]} ({cert.get('label_type')}, n = "
                f"{cert.get('n')}, reference {cert.get('reference')}){names}")
    return f"judge {judge.get('model')}, no certificate{names}"


def to_decide(row: Mapping[str, Any]) -> str:
    """What would change an insufficient check into a verdict (empty for a decided one)."""
    if row.get("verdict") != "insufficient":
        return ""
    reason = str(row.get("reason") or "")
    if "certificate" in reason or "judge-based" in reason:
        return certify_hint(str(row.get("subtask")))
    if "not in this run" in reason or "not computed" in reason:
        return f"run {row.get('subtask')} with the product"
    n, min_n = row.get("n"), row.get("min_n")
    if isinstance(n, int) and isinstance(min_n, int) and n < min_n:
        return f"at least {min_n} items (this run has {n}): run without --limit or with a larger one"
    return "more items, to narrow the interval away from the limit"


def _check_rows(gate: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {r["id"]: r for r in gate["checks"]}


def _title(name: str, gate: Mapping[str, Any]) -> str:
    rule = gate.get("rule") or {}
    return str(rule.get("title") or f"policy {gate['policy'].get('version')}") + f" ({name})"


def side_by_side(gates: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): one row per sub-task and metric any policy checks, one column per policy with that
    check's verdict, figure and interval there."""
    keys: dict[tuple[str, str], None] = {}
    for gate in gates.values():
        for r in gate["checks"]:
            keys[(r["subtask"], r["metric"])] = None
    header = ["sub-task", "metric", *gates]
    rows = []
    for sid, metric in keys:
        row = [sid, metric]
        for gate in gates.values():
            found = [r for r in gate["checks"] if (r["subtask"], r["metric"]) == (sid, metric)]
            row.append("; ".join(f"{verdict_words(r['verdict'])} {_num(r['value'])} {_interval(r)} n = {_num(r['n'])}"
                                 for r in found) or "—")
        rows.append(row)
    return header, rows


def summary_markdown(gates: Mapping[str, Mapping[str, Any]], provenance: Mapping[str, Any]) -> str:
    run = provenance["run"]
    lines = ["# Release dossier", "",
             f"- Product asked: `{cell(run['model_asked'])}`; answered as: "
             f"{cell(', '.join(f'{m} ({n})' for m, n in run['models_answered'].items()) or 'not reported')}",
             f"- Judge asked → answered as (calls): {cell(format_counts(run.get('judges_answered')))}",
             f"- Run of {cell(run.get('created'))}, seed {cell(run.get('seed'))}, mode {cell(run.get('mode'))}; "
             f"trustmh {cell(provenance['trustmh']['version'])} (commit {cell(provenance['trustmh'].get('commit') or 'unknown')})",
             "- Verify: `trustmh verify DOSSIER` recomputes every figure and verdict below from items.jsonl and "
             "policies/, and checks every file's digest in manifest.json.", "",
             "## Verdicts", "", "| policy | verdict | clauses |", "|---|---|---|"]
    for name, gate in gates.items():
        counts = {}
        for c in gate_clauses(gate):
            counts[verdict_words(c["verdict"])] = counts.get(verdict_words(c["verdict"]), 0) + 1
        lines.append(f"| {cell(_title(name, gate))} | **{gate['verdict'].upper()}** | "
                     f"{cell(', '.join(f'{n} {v}' for v, n in counts.items()))} |")
    header, rows = side_by_side(gates)
    lines += ["", "## Side by side", "", "| " + " | ".join(cell(h) for h in header) + " |",
              "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    for name, gate in gates.items():
        checks = _check_rows(gate)
        rule = gate.get("rule") or {}
        lines += ["", f"## {cell(_title(name, gate))}: {gate['verdict'].upper()}", ""]
        if rule:
            lines += [f"Text: {cell(rule.get('citation'))}; status: {cell(rule.get('status'))}; read on "
                      f"{cell(rule.get('read_on'))}.", ""]
        lines += ["| clause | section | verdict | figure | 95% interval | n | evidence | to decide it | why |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for c in gate_clauses(gate):
            rows_ = [checks[k] for k in c["checks"]] or [{}]
            for r in rows_:
                lines.append(f"| {cell(c['id'])} | {cell(c['section'])} | {verdict_words(c['verdict'])} | "
                             f"{_num(r.get('value'))} | {_interval(r)} | {_num(r.get('n'))} | "
                             f"{cell(evidence(r, provenance) if r else '—')} | {cell(to_decide(r) if r else 'a person must assess it')} | "
                             f"{cell(c['reason'])} |")
        if gate.get("disclaimer"):
            lines += ["", f"> {cell(gate['disclaimer'])}"]
    lines += ["", "Failing conversations: failing.md / failing.html. Provenance: provenance.json. "
              "Every file and its digest: manifest.json.", "",
              "Generated by trustmh. Evidence for a decision, not a clinical certification and not legal advice."]
    return "\n".join(lines) + "\n"


def decided_by(item: Mapping[str, Any]) -> str:
    """The judge's reasoning, or the rule that decided."""
    raw = item.get("judge_raw") or {}
    if raw:
        return " / ".join(f"{k}: {v}" for k, v in raw.items())
    score = item.get("score") or {}
    if score.get("invalid"):
        return "invalid reply: " + str(item.get("error") or "no usable reply")
    return f"rule ({score.get('method') or 'rule'}): " + ", ".join(
        f"{k} = {v}" for k, v in score.items() if k not in ("method", "pass", "valid", "invalid"))


def failing_markdown(gates: Mapping[str, Mapping[str, Any]], items: Sequence[Mapping[str, Any]]) -> str:
    lines = ["# Failing conversations", "",
             "Every failing or insufficient clause's check, with the conversations that did not pass it: the "
             "decisive turn, the product's reply there, the marks on it and what decided."]
    for name, gate in gates.items():
        for clause, row, bad in clause_failures(gate, items):
            lines += ["", f"## {cell(name)}: {cell(clause['id'])} ({verdict_words(clause['verdict'])}), check "
                      f"{cell(row['id'])}: {len(bad)} conversation(s) not passed", ""]
            for it in bad[:SHOWN_PER_CHECK]:
                turn, reply, marks = deciding_turn(it)
                lines += [f"### {cell(it['item_id'])} (epoch {cell(it.get('epoch', 1))}), decisive turn {cell(turn)}",
                          "", f"- reply: {cell(reply)}",
                          f"- marks: {cell(', '.join(f'{k} = {v}' for k, v in marks.items()) or 'none')}",
                          f"- decided by: {cell(decided_by(it))}", ""]
            if len(bad) > SHOWN_PER_CHECK:
                lines.append("- not shown: " + cell(", ".join(str(it["item_id"]) for it in bad[SHOWN_PER_CHECK:])))
    return "\n".join(lines) + "\n"


_STYLE = ("body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
          "table{border-collapse:collapse;width:100%;margin:1em 0}td,th{border:1px solid #bbb;padding:3px 6px;"
          "vertical-align:top;text-align:left}.fail{background:#fdd}.pass{background:#dfd}"
          ".insufficient,.not_testable{background:#ffd}@media print{body{margin:0;max-width:none}}")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], classes: Sequence[str] | None = None) -> str:
    body = "".join(f"<tr class=\"{esc(classes[i]) if classes else ''}\">" + "".join(f"<td>{esc(c)}</td>" for c in row)
                   + "</tr>" for i, row in enumerate(rows))
    return "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>" + body + "</table>"


def summary_html(gates: Mapping[str, Mapping[str, Any]], provenance: Mapping[str, Any],
                 items: Sequence[Mapping[str, Any]]) -> str:
    """The printable one-page summary, then the failing conversations, one offline page."""
    run = provenance["run"]
    parts = ["<!doctype html><html><head><meta charset=\"utf-8\"><title>Release dossier</title>",
             f"<style>{_STYLE}</style></head><body><h1>Release dossier</h1>",
             f"<p>Product asked: <code>{esc(run['model_asked'])}</code>; answered as: "
             f"{esc(', '.join(f'{m} ({n})' for m, n in run['models_answered'].items()) or 'not reported')}; "
             f"judge asked → answered as (calls): {esc(format_counts(run.get('judges_answered')))}. "
             f"Run of {esc(run.get('created'))}, seed {esc(run.get('seed'))}; trustmh "
             f"{esc(provenance['trustmh']['version'])}. Check it with <code>trustmh verify DOSSIER</code>.</p>",
             "<h2>Verdicts</h2>",
             _table(["policy", "verdict"], [[_title(n, g), g["verdict"].upper()] for n, g in gates.items()],
                    [g["verdict"] for g in gates.values()])]
    header, rows = side_by_side(gates)
    parts += ["<h2>Side by side</h2>", _table(header, rows)]
    for name, gate in gates.items():
        checks = _check_rows(gate)
        parts.append(f"<h2>{esc(_title(name, gate))}: {esc(gate['verdict'].upper())}</h2>")
        rows_, classes = [], []
        for c in gate_clauses(gate):
            for r in [checks[k] for k in c["checks"]] or [{}]:
                rows_.append([c["id"], c["section"], verdict_words(c["verdict"]), _num(r.get("value")), _interval(r),
                              _num(r.get("n")), evidence(r, provenance) if r else "—",
                              to_decide(r) if r else "a person must assess it", c["reason"]])
                classes.append(c["verdict"])
        parts.append(_table(["clause", "section", "verdict", "figure", "95% interval", "n", "evidence",
                             "to decide it", "why"], rows_, classes))
        if gate.get("disclaimer"):
            parts.append(f"<p><em>{esc(gate['disclaimer'])}</em></p>")
    parts.append("<h2>Failing conversations</h2>")
    for name, gate in gates.items():
        for clause, row, bad in clause_failures(gate, items):
            parts.append(f"<h3>{esc(name)}: {esc(clause['id'])}, check {esc(row['id'])}: {len(bad)} not passed</h3>")
            shown = []
            for it in bad[:SHOWN_PER_CHECK]:
                turn, reply, marks = deciding_turn(it)
                shown.append([it["item_id"], turn, reply, ", ".join(f"{k} = {v}" for k, v in marks.items()),
                              decided_by(it)])
            parts.append(_table(["conversation", "decisive turn", "reply", "marks", "decided by"], shown))
    parts.append("<p>Generated by trustmh. Evidence for a decision, not a clinical certification and not legal "
                 "advice.</p></body></html>")
    return "\n".join(parts) + "\n"
