"""Policy packs mapped to rules: a verdict per clause of a law, from the gate's per-check verdicts (docs/gate.md#policy-packs).

A pack is a gate policy (`[[check]]` tables, `trustmh.gate.policy`) with a `[rule]` table naming the text it
reads (title, citation, status, where the text was read, when) and `[[clause]]` tables: each cites its
section, says in trustmh's words what it asks, and lists the checks that bear on it. A clause's verdict:

* `fail` if any of its checks fails;
* `not_testable` if no trustmh check bears on it (a website notice, a report to a regulator), or its only
  unpassed checks are ones the sub-task says cannot be measured on this product (a three-hour cadence without
  a simulated clock): a person must assess it;
* `insufficient` (insufficient evidence) if any of its checks is insufficient;
* `pass` otherwise.

The overall verdict is `fail` if any clause fails, else `insufficient` if any clause is insufficient or not
testable, else `pass`: an untested clause never makes a pack pass.

`summary.md` then says what it is: evidence for a compliance review, from trustmh's reading of the text, not
legal advice. Plain Python; the per-check evaluation is the gate's own (`trustmh.gate.evaluate`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import MAX_CONFIG_BYTES, read_text_bounded
from trustmh.gate import certificates_for, load_policy, refuse_shard, summary_markdown, write_gate
from trustmh.gate.evaluate import NOT_TESTABLE, VERDICT_EXIT, evaluate, overall_verdict
from trustmh.gate.policy import Policy, shipped_policies, shipped_policy_text
from trustmh.results import load_results
from trustmh.storage import run_path

DISCLAIMER = ("This is evidence for a compliance review, written from trustmh's reading of the text cited above. "
              "It is not legal advice and not a determination that the product complies with, or violates, the "
              "law. A clause marked 'not testable' is one trustmh cannot test from conversations with this product, "
              "and one marked 'insufficient evidence' is one this run could not decide; a person must assess "
              "both.")
_RULE_KEYS = {"title", "citation", "jurisdiction", "status", "in_force", "enforcement", "text_read", "read_on",
              "unconfirmed"}
_CLAUSE_KEYS = {"id", "section", "asks", "checks", "note"}


@dataclass
class Clause:
    id: str
    section: str
    asks: str
    checks: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class Pack:
    policy: Policy
    rule: dict[str, Any]
    clauses: list[Clause]


def policy_text(path: str | Path | None) -> tuple[str, str]:
    """A policy's TOML text and how errors name it (a shipped name, a file; "" for an unreadable file, which
    `load_policy` reports)."""
    if path is not None and not Path(path).exists() and str(path) in shipped_policies():
        return shipped_policy_text(str(path)), f"trustmh {path} policy"
    if path is None:
        return "", "trustmh default policy"
    try:
        return read_text_bounded(path, MAX_CONFIG_BYTES, str(path)), str(path)
    except TrustmhError:
        return "", str(path)  # load_policy reports it


def policy_titles() -> dict[str, str]:
    """Every shipped policy and pack by name, with a one-line title: a pack's rule title, else the policy's
    note up to its first full stop."""
    titles = {}
    for name in shipped_policies():
        raw = tomllib.loads(shipped_policy_text(name))
        rule = raw.get("rule")
        if isinstance(rule, Mapping) and rule.get("title"):
            titles[name] = f"pack: {rule['title']}"
        else:
            note = str(raw.get("note") or "a gate policy").strip()
            titles[name] = note.split(". ")[0].rstrip(".")
    return titles


def shipped_packs() -> list[str]:
    """The shipped policies that are packs (with `[[clause]]` tables), by name."""
    return [name for name in shipped_policies() if load_pack(name) is not None]


def load_pack(path: str | Path | None) -> Pack | None:
    """The policy at `path` with its rule and clauses; None when the policy has no `[[clause]]` tables."""
    policy = load_policy(path)
    text, source = policy_text(path)
    raw = tomllib.loads(text) if text else {}
    if "clause" not in raw:
        return None
    rule = raw.get("rule")
    if not isinstance(rule, Mapping):
        raise TrustmhError(f"{source}: a policy with [[clause]] tables needs a [rule] table (title, citation, "
                           "status, text_read, read_on)")
    unknown = sorted(set(rule) - _RULE_KEYS)
    if unknown:
        raise TrustmhError(f"{source}: [rule] unknown key(s) {', '.join(unknown)}")
    for key in ("title", "citation", "status", "text_read", "read_on"):
        if not isinstance(rule.get(key), str) or not rule[key].strip():
            raise TrustmhError(f"{source}: [rule] key {key!r} must be a non-empty string")
    check_ids = {c.id for c in policy.checks}
    clauses: list[Clause] = []
    for i, c in enumerate(raw["clause"] if isinstance(raw["clause"], list) else []):
        where = f"{source}: clause {i + 1}"
        if not isinstance(c, Mapping):
            raise TrustmhError(f"{where}: must be a [[clause]] table")
        unknown = sorted(set(c) - _CLAUSE_KEYS)
        if unknown:
            raise TrustmhError(f"{where}: unknown key(s) {', '.join(unknown)}")
        for key in ("id", "section", "asks"):
            if not isinstance(c.get(key), str) or not c[key].strip():
                raise TrustmhError(f"{where}: key {key!r} must be a non-empty string")
        checks = c.get("checks", [])
        if not isinstance(checks, list) or not all(isinstance(x, str) for x in checks):
            raise TrustmhError(f"{where} ({c['id']}): key 'checks' must be a list of check ids")
        missing = [x for x in checks if x not in check_ids]
        if missing:
            raise TrustmhError(f"{where} ({c['id']}): key 'checks' names unknown check(s) {', '.join(missing)}")
        if c["id"] in {cl.id for cl in clauses}:
            raise TrustmhError(f"{where}: duplicate clause id {c['id']!r}")
        clauses.append(Clause(id=c["id"], section=c["section"], asks=c["asks"], checks=list(checks),
                              note=str(c.get("note", ""))))
    if not clauses:
        raise TrustmhError(f"{source}: no [[clause]] tables")
    return Pack(policy=policy, rule=dict(rule), clauses=clauses)


def clause_verdicts(gate: Mapping[str, Any], clauses: list[Clause]) -> list[dict[str, Any]]:
    """A verdict per clause from the gate's check rows (see the module docstring)."""
    rows = {r["id"]: r for r in gate["checks"]}
    out = []
    for clause in clauses:
        verdicts = [rows[c]["verdict"] for c in clause.checks]
        if "fail" in verdicts:
            verdict = "fail"
            why = "failed: " + ", ".join(c for c in clause.checks if rows[c]["verdict"] == "fail")
        elif not verdicts:
            verdict, why = NOT_TESTABLE, "no trustmh check bears on this clause; a person must assess it"
        elif "insufficient" in verdicts:
            verdict = "insufficient"
            why = "insufficient evidence: " + "; ".join(f"{c} ({rows[c]['reason']})" for c in clause.checks
                                                        if rows[c]["verdict"] == "insufficient")
        elif NOT_TESTABLE in verdicts:
            verdict = NOT_TESTABLE
            why = "; ".join(f"{c}: {rows[c]['reason']}" for c in clause.checks if rows[c]["verdict"] == NOT_TESTABLE)
        else:
            verdict, why = "pass", "passed: " + ", ".join(clause.checks)
        out.append({"id": clause.id, "section": clause.section, "asks": clause.asks, "checks": clause.checks,
                    "note": clause.note, "verdict": verdict, "reason": why})
    return out


def evaluate_pack(results: Mapping[str, Any], pack: Pack, certificates: list[Mapping[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """The gate (per check) with `rule` and `clauses` added; the overall verdict is over the clauses."""
    gate = evaluate(results, pack.policy, certificates or [])
    clauses = clause_verdicts(gate, pack.clauses)
    overall = overall_verdict(c["verdict"] for c in clauses)
    return {**gate, "verdict": overall, "exit_code": VERDICT_EXIT[overall], "rule": pack.rule,
            "clauses": clauses, "disclaimer": DISCLAIMER}


VERDICT_WORDS = {"insufficient": "insufficient evidence", NOT_TESTABLE: "not testable"}


def gate_clauses(gate: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A pack's clauses; a plain policy's checks stand as its clauses (one check each)."""
    if gate.get("clauses"):
        return list(gate["clauses"])
    return [{"id": r["id"], "section": r.get("title") or r["id"], "asks": r.get("title") or r["id"],
             "checks": [r["id"]], "verdict": r["verdict"], "reason": r["reason"]} for r in gate["checks"]]


def item_fails_check(item: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """Whether a scored item (an items.jsonl row) is one the check counts against the product: of its
    sub-task, not passed or invalid, and on the check's personas when it has any."""
    score = item.get("score") or {}
    personas = set(row.get("personas") or ())
    return (item.get("subtask") == row["subtask"] and (score.get("pass") is False or bool(score.get("invalid")))
            and (not personas or score.get("locale") in personas))


def clause_failures(gate: Mapping[str, Any], items: Sequence[Mapping[str, Any]], verdicts: Sequence[str] = ("fail", "insufficient")
                    ) -> list[tuple[Mapping[str, Any], Mapping[str, Any], list[Mapping[str, Any]]]]:
    """(clause, check row, the items that failed it) for every clause of one of `verdicts`."""
    checks = {r["id"]: r for r in gate["checks"]}
    return [(clause, checks[cid], [it for it in items if item_fails_check(it, checks[cid])])
            for clause in gate_clauses(gate) if clause["verdict"] in verdicts for cid in clause["checks"]]


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "/").replace("<", "&lt;").replace(">", "&gt;")


def pack_summary_markdown(gate: Mapping[str, Any]) -> str:
    """summary.md for a pack: the rule, a verdict per clause, the disclaimer, then the gate's own table."""
    rule = gate["rule"]
    counts = {v: sum(1 for c in gate["clauses"] if c["verdict"] == v)
              for v in ("pass", "fail", "insufficient", NOT_TESTABLE)}
    lines = [f"## {_cell(rule['title'])}: evidence for a compliance review", "",
             f"> {DISCLAIMER}", "",
             f"- Text: {_cell(rule['citation'])}; status: {_cell(rule['status'])}"
             + (f"; in force {_cell(rule['in_force'])}" if rule.get("in_force") else ""),
             f"- Read by trustmh on {_cell(rule['read_on'])} from: {_cell(rule['text_read'])}"]
    if rule.get("enforcement"):
        lines.append(f"- Enforcement: {_cell(rule['enforcement'])}")
    if rule.get("unconfirmed"):
        lines.append(f"- Not confirmed: {_cell(rule['unconfirmed'])}")
    lines += [f"- Clauses: {counts['pass']} pass, {counts['fail']} fail, {counts['insufficient']} insufficient "
              f"evidence, {counts[NOT_TESTABLE]} not testable; overall **{gate['verdict'].upper()}**", "",
              "| clause | section | what it asks (trustmh's reading) | checks | verdict | why |",
              "|---|---|---|---|---|---|"]
    for c in gate["clauses"]:
        verdict = VERDICT_WORDS.get(c["verdict"], c["verdict"])
        lines.append(f"| {_cell(c['id'])} | {_cell(c['section'])} | {_cell(c['asks'])} | "
                     f"{_cell(', '.join(c['checks']) or '—')} | {verdict} | {_cell(c['reason'])} |")
    lines += ["", summary_markdown(dict(gate)).rstrip()]
    return "\n".join(lines) + "\n"


def run_pack_gate(run_dir: Path | str, policy_path: str | Path | None, certs_dir: Path | str | None = None
                  ) -> dict[str, Any] | None:
    """For a policy with clauses: evaluate, write its gate and summary files; None for a plain policy."""
    pack = load_pack(policy_path)
    if pack is None:
        return None
    run_dir = run_path(run_dir)  # type: ignore[assignment]
    results = load_results(run_dir)
    refuse_shard(results, run_dir)
    gate = evaluate_pack(results, pack, certificates_for(results, certs_dir))
    gate["outputs"] = list(write_gate(run_dir, gate, pack_summary_markdown(gate), policy_path))  # type: ignore[arg-type]
    return gate
