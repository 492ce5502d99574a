"""The gate's `require_probe` policy option (docs/judge-probes.md#the-gate): a judge's certificate counts only with
a passing bias battery of the same fingerprint beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_gate_evidence import all_certificates, good_run
from trustmh.gate import certificates_for, evaluate, load_policy
from trustmh.judges.certificates import write_certificate
from trustmh.judges.probe_records import FORMAT, KIND, write_probe_record


def requiring_probe() -> Any:
    policy = load_policy("default")
    policy.require_probe = True
    return policy


def with_probes(certs: list[dict[str, Any]], verdict: str) -> list[dict[str, Any]]:
    return [{**c, "probe": {"kind": KIND, "verdict": verdict, "reason": "as planted"}} for c in certs]


def test_a_certified_judge_without_a_probe_record_is_insufficient_when_the_policy_requires_one() -> None:
    run = good_run()
    assert evaluate(run, requiring_probe(), all_certificates(run))["verdict"] == "insufficient"


def test_the_gate_names_the_missing_probe() -> None:
    run = good_run()
    reasons = " ".join(c["reason"] for c in evaluate(run, requiring_probe(), all_certificates(run))["checks"])
    assert "no bias probe record" in reasons


def test_a_passing_probe_record_lets_the_certificate_count() -> None:
    run = good_run()
    assert evaluate(run, requiring_probe(), with_probes(all_certificates(run), "pass"))["verdict"] == "pass"


def test_a_failing_probe_record_keeps_the_check_insufficient() -> None:
    run = good_run()
    gate = evaluate(run, requiring_probe(), with_probes(all_certificates(run), "fail"))
    assert gate["verdict"] == "insufficient"


def test_the_default_policy_does_not_require_a_probe() -> None:
    run = good_run()
    assert evaluate(run, load_policy("default"), all_certificates(run))["verdict"] == "pass"


def test_the_probe_record_beside_the_certificate_is_read_with_it(tmp_path: Path) -> None:
    run = good_run()
    certs = all_certificates(run)
    for cert in certs:
        write_certificate(tmp_path, cert)
        write_probe_record(tmp_path, {"format": FORMAT, "kind": KIND, "fingerprint": cert["fingerprint"],
                                      "verdict": "pass", "reason": "r"})
    assert evaluate(run, requiring_probe(), certificates_for(run, tmp_path))["verdict"] == "pass"
