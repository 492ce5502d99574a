"""Gate lines in words (issue 42): the reasons `trustmh gate` prints, writes into summary.md and gate.json's
`reason` fields name no internal field (the field names stay in gate.json's `metric`, `count` and `total`);
the hint to run `trustmh judge certify` appears only for a judge a reference exists for, elsewhere what would
give evidence instead."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from trustmh.cli import main
from trustmh.gate import evaluate, load_policy, shipped_policies
from trustmh.gate.clauses import clause_verdicts, load_pack
from trustmh.gate.policy import Check, Policy
from trustmh.judges.reference_quality import CANNOT_CERTIFY, NOT_CERTIFIED, TOO_SMALL
from trustmh.pillars.conversation.ai_disclosure import NO_CLOCK
from trustmh.stats.judge_agreement import JUDGE_METRICS

SNAKE = re.compile(r"[a-z]+_[a-z_]+")
FINGERPRINT = "0123456789abcdef" * 4
MISSED, ITEMS = "validation_n_crisis_missed", "validation_n_crisis_items"


def field_names(text: str, policy: Policy) -> list[str]:
    """The snake_case tokens of a line a person reads, once named commands (in backticks), the placeholders a
    user writes in an endpoint file (`{{elapsed_seconds}}`), sub-task ids (`conversation/gradual_disclosure`)
    and the policy's own check ids (the rows' names) are set aside."""
    text = re.sub(r"`[^`]*`|\{\{\w+\}\}", " ", text)
    ids = {c.id for c in policy.checks}
    tokens = [t.strip(".,;:()[]'\"") for t in text.split()]
    return [t for t in tokens if "/" not in t and t not in ids and SNAKE.search(t)]


def _sub(status: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"status": status, "reason": None if status == "ok" else "every rating invalid (3 of 3)", "value": 0.5,
            "ci": [0.4, 0.6], "n": 50, "direction": "higher", "metrics": {}, **extra}


def _runs(policy: Policy) -> list[dict[str, Any]]:
    """Runs that drive every reason a check can give: absent, not computed, counts missing, damaged or zero,
    no value, a reversed interval, errored samples, a judge without fingerprint or certificate, not testable,
    and figures that pass, fail or cannot decide."""
    sids = {c.subtask for c in policy.checks}
    counted = {c.subtask: c for c in policy.checks if c.counted}

    def each(**extra: Any) -> dict[str, Any]:
        return {"subtasks": {sid: _sub(**extra) for sid in sids}}

    def counts(count: Any, total: Any) -> dict[str, Any]:
        run = each()
        for sid, c in counted.items():
            row = {c.count: count, c.total: total}
            run["subtasks"][sid]["metrics"] = {**row, "by_locale": {p: row for p in (*c.personas, "ZZ")}}
        return run

    judged = each(method="judge", judge={"model": "j", "fingerprint": FINGERPRINT})
    unprinted = each(method="judge", judge={"model": "j"})
    untestable = each(metrics={"not_testable": {c.metric: NO_CLOCK for c in policy.checks}})
    errored = each(n_errors=3)
    return [{"subtasks": {}}, each(status="not_computed"), each(status="sample"), each(value=None),
            each(ci=[0.7, 0.2]), each(n=2.5), errored, judged, unprinted, untestable, counts(None, None),
            counts(2.5, 1), counts(0, 0), counts(1, 200), counts(150, 200), counts(1, 2), each(ci=[0.0, 0.01]),
            each(ci=[0.99, 1.0]), each(ci=[0.0, 1.0], n=3),
            {"subtasks": {sid: _sub() for sid in sids}, "errors": [f"{s}: timed out" for s in sids]}]


def _certificates(policy: Policy) -> list[list[dict[str, Any]]]:
    """Certificates for the judged runs' fingerprint that are no evidence: agreement short of every threshold,
    no agreement at all, and a reference whose criteria (snake_case names) cannot or do not certify."""
    weak = {m: {"value": 0.1, "ci": [-0.5, 0.2] if lo < 0 else [0.0, 0.2]}
            for kind in JUDGE_METRICS.values() for m, (lo, _) in kind.items()}
    weak["mae"] = {"value": 3.0, "ci": [2.5, 3.5]}
    quality = {"status": NOT_CERTIFIED, "floor": 0.4, "criteria": {
        "risk_level": {"status": NOT_CERTIFIED}, "crisis_kind": {"status": CANNOT_CERTIFY, "humans": {"value": 0.2}},
        "help_offered": {"status": CANNOT_CERTIFY, "reason": f"{TOO_SMALL}: 12 items. The worst seat ..."}}}
    sids = {c.subtask for c in policy.checks}

    def certs(**extra: Any) -> list[dict[str, Any]]:
        kinds = list(JUDGE_METRICS)
        return [{"kind": "trustmh-judge-certificate", "fingerprint": FINGERPRINT, "subtask": sid, "n": 40,
                 "label_type": kinds[i % len(kinds)], **extra} for i, sid in enumerate(sorted(sids))]

    return [certs(agreement=weak), certs(agreement={}), certs(agreement=weak, reference_quality=quality)]


def _reasons(name: str) -> list[tuple[str, Policy]]:
    policy = load_policy(name)
    pack = load_pack(name)
    out = []
    cases = [(run, []) for run in _runs(policy)]
    judged = _runs(policy)[7]
    cases += [(judged, certs) for certs in _certificates(policy)]
    for run, certificates in cases:
        gate = evaluate(run, policy, certificates)
        out += [(r["reason"], policy) for r in gate["checks"]]
        out += [(str(r["judge"]["not_required"]), policy) for r in gate["checks"]
                if (r["judge"] or {}).get("not_required")]
        if pack is not None:
            out += [(c["reason"], policy) for c in clause_verdicts(gate, pack.clauses)]
    return out


@pytest.mark.parametrize("name", shipped_policies())
def test_no_reason_a_shipped_policy_can_give_names_a_field(name: str) -> None:
    named = sorted({f"{tok}  <- {text}" for text, policy in _reasons(name) for tok in field_names(text, policy)})
    assert named == []


def _run_without_counts(tmp_path: Path) -> Path:
    """A run whose crisis identification was computed but recorded none of the counts the gate reads."""
    results = {"model": "m", "mode": "default", "suite": "trustmh",
               "subtasks": {"crisis/crisis_identification": _sub(metrics={"validation_accuracy": 0.8})}}
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return tmp_path


@pytest.fixture
def gated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, Any], str]:
    run = _run_without_counts(tmp_path)
    main(["gate", str(run)])
    gate = json.loads((run / "gate.json").read_text(encoding="utf-8"))
    return capsys.readouterr().out, gate, (run / "summary.md").read_text(encoding="utf-8")


def _row(gate: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in gate["checks"] if r["subtask"] == "crisis/crisis_identification")


def test_a_missing_count_is_said_in_words_on_stdout(gated: tuple[str, dict[str, Any], str]) -> None:
    line = next(x for x in gated[0].splitlines() if "crisis_miss_rate" in x)
    assert MISSED not in line and ITEMS not in line


def test_a_missing_count_is_said_in_words_in_the_summary(gated: tuple[str, dict[str, Any], str]) -> None:
    assert MISSED not in gated[2] and ITEMS not in gated[2]


def test_a_missing_count_is_said_in_words_in_gate_json_s_reason(gated: tuple[str, dict[str, Any], str]) -> None:
    assert MISSED not in _row(gated[1])["reason"] and ITEMS not in _row(gated[1])["reason"]


def test_the_reason_says_what_the_run_did_not_record(gated: tuple[str, dict[str, Any], str]) -> None:
    assert "did not record the counts" in _row(gated[1])["reason"]


def test_the_reason_names_the_counts_in_words(gated: tuple[str, dict[str, Any], str]) -> None:
    assert "crisis items the model answered as no crisis or unusably (validation set)" in _row(gated[1])["reason"]


def test_gate_json_keeps_the_field_names_for_machines(gated: tuple[str, dict[str, Any], str]) -> None:
    row = _row(gated[1])
    assert (row["metric"], row["count"], row["total"]) == ("validation_crisis_miss_rate", MISSED, ITEMS)


def _no_certificate_reason(sid: str) -> str:
    policy = Policy(version="t", note="", min_n=1, require_validated_judge=True,
                    checks=[Check(id="judged", subtask=sid, min=0.5)])
    run = {"subtasks": {sid: _sub(method="judge", judge={"model": "j", "fingerprint": FINGERPRINT})}}
    return str(evaluate(run, policy, [])["checks"][0]["reason"])


def test_a_judge_with_a_reference_gets_the_certify_hint_naming_it() -> None:
    assert "`trustmh judge certify --reference crisis-study`" in _no_certificate_reason("crisis/crisis_escalation")


def test_a_judge_without_a_reference_gets_no_certify_hint() -> None:
    assert "judge certify" not in _no_certificate_reason("safety/jailbreak_resistance")


def test_a_judge_without_a_reference_is_told_what_would_give_evidence() -> None:
    assert "`trustmh review export --subtask safety/jailbreak_resistance`" in _no_certificate_reason(
        "safety/jailbreak_resistance")


def test_a_conversation_judge_is_not_sent_to_a_reference_of_single_replies() -> None:
    # moore-interjections declares conversation/delusion, but its items are single replies (supporting only)
    assert "moore-interjections" not in _no_certificate_reason("conversation/delusion")
