"""`trustmh gate RUN_DIR [--policy FILE|NAME]`: a release decision from a run's results, a pre-stated policy
and the judge certificates on record (docs/gate.md).

* `policy`: load and validate a policy (TOML; the shipped ones are in `policies/`).
* `evaluate`: `evaluate(results, policy, certificates) -> gate dict`, plain Python with a verdict and a reason
  per check; a judge-based check counts only with a certificate matching the run's judge fingerprint.
* `summary`: the model-card section (`summary.md`).
* `run_gate`: read a run directory and the certificates, write `gate.json` (strict JSON) and `summary.md`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.gate.evaluate import VERDICT_EXIT, VOUCHED, decide, evaluate, evaluate_check
from trustmh.gate.policy import Check, Policy, load_policy, parse_policy, shipped_policies
from trustmh.gate.summary import summary_markdown
from trustmh.json_clean import clean_json
from trustmh.judges.certificates import certificates_dir, load_certificates
from trustmh.judges.probe_records import find_probe
from trustmh.results import load_results
from trustmh.storage import Url, run_path, write_text_atomic, write_texts_together

__all__ = ["VERDICT_EXIT", "VOUCHED", "Check", "Policy", "certificates_for", "decide", "evaluate", "evaluate_check", "gate_json",
           "load_policy", "parse_policy", "refuse_shard", "run_gate", "shipped_policies", "summary_markdown",
           "write_gate"]


def gate_json(gate: dict[str, Any]) -> str:
    """gate.json's text: strict JSON (a non-finite number is null, never NaN)."""
    return json.dumps(clean_json(gate), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def certificates_for(results: dict[str, Any], certs_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """The judge certificates in `certs_dir` (default: $TRUSTMH_CERTIFICATES_DIR, else
    ./trustmh-certificates) whose fingerprint is one the run's judged sub-tasks recorded."""
    wanted = {((sub or {}).get("judge") or {}).get("fingerprint") for sub in (results.get("subtasks") or {}).values()
              if isinstance(sub, dict)} - {None}
    if not wanted:
        return []
    where = certificates_dir(certs_dir)
    # each with the bias battery of its judge beside it, if any (`require_probe`, docs/judge-probes.md)
    return [{**c, "probe": find_probe(where, c.get("fingerprint"))} for c in load_certificates(where)
            if c.get("fingerprint") in wanted]


def output_names(policy_path: str | Path | None) -> tuple[str, str]:
    """The gate's two files for a policy: `gate.json` and `summary.md` for the shipped default, else
    `gate-<name>.json` and `summary-<name>.md` (a shipped policy's name, or a policy file's stem), so that gating one
    run under several policies keeps every verdict."""
    name = "default" if policy_path is None else Path(str(policy_path)).name.removesuffix(".toml")
    if name == "default":
        return "gate.json", "summary.md"
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "policy"
    return f"gate-{safe}.json", f"summary-{safe}.md"


def write_gate(run_dir: Path | Url, gate: dict[str, Any], summary: str, policy_path: str | Path | None = None
               ) -> tuple[str, str]:
    """Write the gate's JSON and summary beside the results (names: `output_names`): together or not at all
    on a local disk, each atomically at a URL. Returns the two names."""
    out = run_dir if run_dir.is_dir() else run_dir.parent
    gate_name, summary_name = output_names(policy_path)
    texts = {out / gate_name: gate_json(gate), out / summary_name: summary}
    if isinstance(out, Url):
        for target, text in texts.items():
            write_text_atomic(target, text)
    else:
        write_texts_together(texts)  # type: ignore[arg-type]
    return gate_name, summary_name


def refuse_shard(results: dict[str, Any], run_dir: Path | Url | str) -> None:
    """A shard's results are a slice of every sub-task's items, not a result: gating one would pass or fail a
    release on a fraction of the evidence, so it is refused (gate the merged run)."""
    shard = results.get("shard")
    if shard is not None:
        where = "/".join(str(x) for x in shard) if isinstance(shard, list) else str(shard)
        raise TrustmhError(f"{run_dir}: the results of shard {where}, a slice of the items, not a whole run; "
                           "combine every shard with `trustmh merge` and gate the merged directory")


def run_gate(run_dir: Path | str, policy_path: Path | str | None = None,
             certs_dir: Path | str | None = None) -> dict[str, Any]:
    """Evaluate, write `gate.json` and `summary.md` into the run directory (a path or a URL), return the gate."""
    policy = load_policy(policy_path)
    run_dir = run_path(run_dir)  # type: ignore[assignment]
    results = load_results(run_dir)
    refuse_shard(results, run_dir)
    gate = evaluate(results, policy, certificates_for(results, certs_dir))
    gate["outputs"] = list(write_gate(run_dir, gate, summary_markdown(gate), policy_path))  # type: ignore[arg-type]
    return gate
