"""`trustmh verify DOSSIER`: check a release dossier with nothing but trustmh and the dossier (docs/dossier.md#verify).

1. **Digests**: every file manifest.json lists is there with its sha256, and no other file is (a missing,
   changed or added file is named); for items.jsonl, each changed, missing or added item is named.
2. **Figures**: every sub-task's value, interval and n in results.json are recomputed from the dossier's
   items with the sub-task's own aggregation (`trustmh.run.finalize.aggregate`, the one a run makes).
3. **Verdicts**: every policy in policies/ is evaluated again on the dossier's results with its certificates
   (`trustmh.dossier.build.gate_under`, the gate's own code), and each check's and clause's verdict and
   figures must equal gates/gate-NAME.json.
4. **Provenance**: the models that answered (the product's per item, each judge's per call) as provenance.json
   records them must be the ones items.jsonl counts.

Each problem is one line naming the file and the field; any problem fails the command (exit 1).
"""

from __future__ import annotations

import json
import math
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from trustmh.catalogue import lookup
from trustmh.core import Record, TrustmhError
from trustmh.digest import sha256_bytes, sha256_file
from trustmh.dossier.build import (
    MANIFEST,
    gate_under,
    item_key,
    judges_answered,
    judges_answered_by_subtask,
    models_answered,
)
from trustmh.results import load_results
from trustmh.run.direct import direct_spec
from trustmh.run.finalize import aggregate

TOLERANCE = 1e-9


def _read_json(path: Path, name: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrustmhError(f"{name}: missing from the dossier") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrustmhError(f"{name}: not valid JSON ({exc})") from None


def digest_problems(folder: Path, manifest: Mapping[str, Any]) -> list[str]:
    files = manifest.get("files")
    if not isinstance(files, dict):
        return [f"{MANIFEST}: field 'files' must be an object of file: sha256"]
    problems = []
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {MANIFEST}
    for name, sha in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"{name}: missing (listed in {MANIFEST})")
        elif sha256_file(path) != sha:
            problems.append(f"{name}: changed (its sha256 is not the one in {MANIFEST})")
            if name == "items.jsonl":
                problems += item_problems(path, manifest.get("items") or {})
    problems += [f"{name}: not in {MANIFEST} (added after the dossier was written)" for name in sorted(on_disk - set(files))]
    return problems


def item_problems(path: Path, recorded: Mapping[str, str]) -> list[str]:
    """Which items of items.jsonl differ from the ones the manifest recorded."""
    seen: dict[str, str] = {}
    problems = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            key = item_key(json.loads(line))
        except json.JSONDecodeError:
            problems.append(f"items.jsonl: record {n}: not valid JSON")
            continue
        seen[key] = sha256_bytes(line.encode("utf-8"))
    for key, sha in recorded.items():
        if key not in seen:
            problems.append(f"items.jsonl: item {key}: missing")
        elif seen[key] != sha:
            problems.append(f"items.jsonl: item {key}: changed")
    problems += [f"items.jsonl: item {key}: not in {MANIFEST}" for key in seen if key not in recorded]
    return problems


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return not (math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE) or (math.isnan(a) and math.isnan(b)))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) != len(b) or any(_differs(x, y) for x, y in zip(a, b, strict=True))
    return a != b


def recomputed_figures(results: Mapping[str, Any], items: list[dict[str, Any]]) -> Iterator[tuple[str, str, Any, Any]]:
    """(sub-task, field, recorded, recomputed) for every figure of results.json the items do not give again."""
    # the run's settings as results.json records them; no judge is called (the items hold its scores)
    ctx = direct_spec(mode=results["mode"], seed=int(results.get("seed") or 0), suite=results.get("suite") or "trustmh",
                      limit=results.get("limit"), n_boot=int(results.get("n_boot") or 2000), model=results.get("model"),
                      options=dict(results.get("options") or {})).context()
    for sid, sub in results["subtasks"].items():
        if sub.get("status") != "ok":
            continue
        cls = lookup(sid)
        if cls is None:
            yield sid, "(sub-task)", sid, "not a sub-task of this trustmh"
            continue
        recs = [Record(**{k: row[k] for k in Record.__dataclass_fields__ if k in row})
                for row in items if row.get("subtask") == sid]
        errors = int((sub.get("metrics") or {}).get("n_errors") or 0)
        again = aggregate(cls(), recs, ctx, errors)
        for field, mine in (("value", again.value), ("ci", list(again.ci) if again.ci else None), ("n", again.n),
                            ("n_invalid", again.n_invalid)):
            if _differs(sub.get(field), mine):
                yield sid, field, sub.get(field), mine


def _verdict_view(gate: Mapping[str, Any]) -> dict[str, Any]:
    """What a gate decided: the verdict, and each check's and clause's verdict and figures."""
    view: dict[str, Any] = {"verdict": gate.get("verdict")}
    for r in gate.get("checks") or []:
        for key in ("verdict", "value", "ci", "n", "limit", "min_n", "reason"):
            view[f"check {r.get('id')} {key}"] = r.get(key)
    for c in gate.get("clauses") or []:
        view[f"clause {c.get('id')} verdict"] = c.get("verdict")
    return view


def verdict_problems(folder: Path, results: Mapping[str, Any]) -> list[str]:
    certificates = _read_json(folder / "certificates.json", "certificates.json")
    problems = []
    policies = sorted((folder / "policies").glob("*.toml"))
    if not policies:
        return ["policies/: no policy in the dossier"]
    for path in policies:
        name = path.name.removesuffix(".toml")
        recorded_name = f"gates/gate-{name}.json"
        recorded = _read_json(folder / recorded_name, recorded_name)
        try:
            again = gate_under(path, results, certificates, f"policies/{path.name}")
        except TrustmhError as exc:
            problems.append(f"policies/{path.name}: cannot be read as a policy ({exc})")
            continue
        old, new = _verdict_view(recorded), _verdict_view(again)
        for key in sorted(set(old) | set(new)):
            if _differs(old.get(key), new.get(key)):
                problems.append(f"{recorded_name}: {key}: {json.dumps(old.get(key))} recorded, "
                                f"{json.dumps(new.get(key))} recomputed from policies/{path.name}")
    return problems


def provenance_problems(folder: Path, results: Mapping[str, Any], items: list[dict[str, Any]]) -> list[str]:
    """provenance.json's models that answered (the product's per item, each judge's per call) against the
    counts items.jsonl gives again."""
    run = (_read_json(folder / "provenance.json", "provenance.json") or {}).get("run") or {}
    problems = []
    for field, again in (("models_answered", models_answered(items, results)), ("judges_answered", judges_answered(items)),
                         ("judges_answered_by_subtask", judges_answered_by_subtask(items))):
        if run.get(field) != again:
            problems.append(f"provenance.json: run.{field}: {json.dumps(run.get(field))} recorded, "
                            f"{json.dumps(again)} counted from items.jsonl")
    return problems


def _unpacked(dossier: Path, tmp: str) -> Path:
    """A dossier's folder: itself, or its archive unpacked into `tmp` (members that would land outside refused)."""
    if dossier.is_dir():
        return dossier
    if not dossier.is_file():
        raise TrustmhError(f"{dossier}: no such dossier (a folder written by `trustmh dossier`, or its .tar.gz)")
    try:
        with tarfile.open(dossier) as tar:
            tar.extractall(tmp, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise TrustmhError(f"{dossier}: not a dossier archive ({exc})") from None
    found = [p.parent for p in Path(tmp).rglob(MANIFEST)]
    if len(found) != 1:
        raise TrustmhError(f"{dossier}: the archive holds {len(found)} {MANIFEST} files, not one")
    return found[0]


def verify_dossier(dossier: Path) -> list[str]:
    """Every problem found (empty: the dossier verifies)."""
    with tempfile.TemporaryDirectory(prefix="trustmh-verify-") as tmp:
        folder = _unpacked(dossier, tmp)
        manifest = _read_json(folder / MANIFEST, MANIFEST)
        problems = digest_problems(folder, manifest)
        if not (folder / "results.json").is_file() or not (folder / "items.jsonl").is_file():
            return problems
        results = load_results(folder / "results.json")
        items = [json.loads(line) for line in (folder / "items.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        problems += [f"results.json: subtasks.{sid}.{field}: {json.dumps(old)} recorded, {json.dumps(new)} "
                     "recomputed from items.jsonl" for sid, field, old, new in recomputed_figures(results, items)]
        problems += verdict_problems(folder, results)
        problems += provenance_problems(folder, results, items)
    return problems
