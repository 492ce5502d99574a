"""`trustmh dossier RUN --policy P [--policy Q…] --out DIR`: the release dossier (docs/dossier.md).

One folder, and one archive of it (`DIR.tar.gz`), that a team can publish or hand to an auditor:

* `summary.md`, `summary.html`: every policy's verdict per clause side by side, each with its figure,
  interval, n, evidence and what would decide an insufficient one; `failing.md` (and the page's last part):
  the conversations behind every failing or insufficient clause (`trustmh.dossier.pages`);
* `results.json`, `items.jsonl`: the run's figures and scored items, after the leak check;
* `policies/NAME.toml`, `gates/gate-NAME.json`: each policy's text and the gate's evaluation of the dossier's
  results under it (`trustmh.gate`'s own code, the one `trustmh verify` calls again);
* `certificates.json`: the judge certificates the gate read;
* `provenance.json`: trustmh's version and commit, the model asked and the models that answered as each
  provider reported them (the product's counted over items, each judge's over its calls, `trustmh.results.reported`), the product endpoint's address (never its credentials), seeds, options, the data's
  digests, the policies' digests, what the leak check redacted (never the values);
* `manifest.json`: every file's sha256 (`trustmh.digest`) and one per item of items.jsonl, so `verify` names a
  changed item.

Nothing is written before the leak check has passed over every file (`trustmh.dossier.leaks`).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import trustmh
from trustmh.catalogue import lookup
from trustmh.core import TrustmhError
from trustmh.data.files import MAX_CONFIG_BYTES, read_text_bounded
from trustmh.data.registry import DATASETS
from trustmh.digest import listing_sha256, named_sha256, sha256_bytes
from trustmh.dossier.leaks import Leak, Private, redact_text, scan_json, scan_lines
from trustmh.dossier.pages import failing_markdown, summary_html, summary_markdown
from trustmh.gate import certificates_for, gate_json, load_policy, refuse_shard
from trustmh.gate.clauses import evaluate_pack, load_pack, policy_text
from trustmh.gate.evaluate import evaluate
from trustmh.json_clean import clean_json
from trustmh.results import load_items, load_results
from trustmh.results.reported import counted
from trustmh.run.secrets import secret_values
from trustmh.storage import run_path

KIND = "trustmh-dossier"
MANIFEST = "manifest.json"
LEFT_OUT = "[left out: text from a publisher's data set; --include-dataset-text to include it where its licence allows]"
# licences under which a publisher's text may be republished in a dossier (`--include-dataset-text`)
OPEN_LICENCES = ("MIT", "CC0", "CC BY 4.0", "CC BY-SA", "Apache", "BSD")
REFUSE, REDACT = "refuse", "redact"


def policy_name(policy: str | Path) -> str:
    """The name a policy goes by in the dossier: a shipped policy's name, or a policy file's stem, made safe."""
    name = Path(str(policy)).name.removesuffix(".toml")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "policy"


def gate_under(policy_file: Path, results: Mapping[str, Any], certificates: list[Mapping[str, Any]],
               source: str) -> dict[str, Any]:
    """The gate's evaluation of `results` under the policy file (a pack's clauses too), as gate.json holds it,
    with the policy's source named `source` (its path inside the dossier). The one call `dossier` and
    `verify` both make."""
    pack = load_pack(policy_file)
    gate = evaluate_pack(results, pack, certificates) if pack is not None else evaluate(
        results, load_policy(policy_file), certificates)
    gate["policy"]["source"] = source
    return json.loads(gate_json(gate))


def item_key(row: Mapping[str, Any]) -> str:
    return f"{row.get('subtask')} {row.get('item_id')} epoch {row.get('epoch', 1)}"


def item_line(row: Mapping[str, Any]) -> str:
    return json.dumps(clean_json(dict(row)), ensure_ascii=False, sort_keys=True)


def _commit() -> str | None:
    """The git commit of the trustmh source tree in use, when it is a checkout (an installed wheel has none)."""
    try:
        done = subprocess.run(["git", "-C", str(Path(trustmh.__file__).parent), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def endpoint_address(url: Any) -> str | None:
    """A product endpoint's address without user, password, query or fragment (where credentials hide)."""
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# words in a registry licence that say republishing is not (or not known to be) allowed, whatever it starts with
NOT_OPEN = ("not stated", "unverified", "agreement", "gated", "research use", "restrictive", "copyright", "to be confirmed")


def publisher_sets(subtask: str, read: Mapping[str, Any]) -> list[str]:
    """The publishers' data sets a sub-task's items came from: the registry sets it reads that the run read
    (`results.json` datasets). trustmh's own synthetic items (starter, product probes) are in no registry set."""
    cls = lookup(subtask)
    return [d for d in getattr(cls, "datasets", ()) or () if d in read]


def republishable(licence: str) -> bool:
    """Whether a data set's licence, as the registry states it, lets its text be republished."""
    return licence.startswith(OPEN_LICENCES) and not any(word in licence.lower() for word in NOT_OPEN)


def leave_out_dataset_text(items: list[dict[str, Any]], include: bool, results: Mapping[str, Any]) -> list[str]:
    """Blank every publisher's text in the items (the patient's words and the prompt), unless `include` and
    each data set's licence lets it be republished; returns the sets whose text was left out. A run that read
    no data file (the starter suite, the product probes) holds none."""
    left: dict[str, None] = {}
    read = results.get("datasets") or {}
    if results.get("suite") == "starter" or not read:
        return []
    for row in items:
        sets = publisher_sets(str(row.get("subtask")), read)
        if not sets:
            continue
        if include:
            closed = [d for d in sets if d not in DATASETS or not republishable(DATASETS[d].licence)]
            if closed:
                licence = DATASETS[closed[0]].licence if closed[0] in DATASETS else "not in the registry"
                raise TrustmhError(f"--include-dataset-text: data set {closed[0]} ({row.get('subtask')}) has licence "
                                   f"{licence!r}, which does not allow republishing its text; leave the flag out")
            continue
        left.update(dict.fromkeys(sets))
        meta = row.setdefault("metadata", {})
        row["response"] = LEFT_OUT
        if "prompt" in meta:
            meta["prompt"] = LEFT_OUT
        for turn in meta.get("turns") or []:
            if turn.get("role") != "model":
                turn["content"] = LEFT_OUT
    return list(left)


def private_texts(results: Mapping[str, Any], private_files: Sequence[Path]) -> list[tuple[str, str]]:
    """(text, what it is): the product's system prompt the run was given, and every --private FILE."""
    texts = []
    prompt = (results.get("options") or {}).get("system_prompt")
    if isinstance(prompt, str) and Path(prompt).is_file():
        texts.append((read_text_bounded(prompt, MAX_CONFIG_BYTES, f"-O system_prompt={prompt}"),
                      "the product's system prompt"))
    for path in private_files:
        texts.append((read_text_bounded(path, MAX_CONFIG_BYTES, f"--private {path}"), f"the private text of --private {path.name}"))
    return texts


def models_answered(items: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> dict[str, int]:
    """Each model name the provider reported answering with, and how many items it answered."""
    counts: dict[str, int] = {}
    for row in items:
        name = (row.get("metadata") or {}).get("model_reported")
        if name:
            counts[str(name)] = counts.get(str(name), 0) + 1
    if not counts and results.get("model_reported"):
        counts[str(results["model_reported"])] = len(items)
    return counts


def judges_answered(items: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Each judge asked for, the names its provider answered with and on how many calls (marks), over the items."""
    return counted(row.get("metadata") for row in items)


def judges_answered_by_subtask(items: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """`judges_answered` per sub-task (the evidence column of a judged check names them), judged ones only."""
    by_sid: dict[str, list[Mapping[str, Any]]] = {}
    for row in items:
        by_sid.setdefault(str(row.get("subtask")), []).append(row)
    return {sid: c for sid, rows in sorted(by_sid.items()) if (c := judges_answered(rows))}


def set_digests(datasets: Mapping[str, Any]) -> dict[str, str | None]:
    """Each data set's set digest (`trustmh.digest.named_sha256`) from the file digests the run recorded; None
    for a set with a file it could not hash."""
    out: dict[str, str | None] = {}
    for name, files in datasets.items():
        try:
            out[name] = named_sha256(files) if isinstance(files, Mapping) and files else None
        except TrustmhError:
            out[name] = None
    return out


def provenance(results: Mapping[str, Any], items: Sequence[Mapping[str, Any]], policies: Mapping[str, str],
               certificates: Sequence[Mapping[str, Any]], run_digests: Mapping[str, str],
               redacted: Sequence[Leak], left_out: Sequence[str]) -> dict[str, Any]:
    judge = results.get("judge") or {}
    # the options as results.json recorded them, the product's URL (set by the run, not a sub-task option) bare
    recorded = dict(results.get("options") or {})
    if "endpoint" in recorded:
        recorded["endpoint"] = endpoint_address(recorded["endpoint"])
    return {
        "kind": KIND,
        "trustmh": {"version": trustmh.__version__, "commit": _commit(),
                    "run_version": results.get("trustmh_version")},
        "run": {"model_asked": results.get("model"), "models_answered": models_answered(items, results),
                "model_reported": results.get("model_reported"),
                "judge_asked": judge.get("model"),
                "judges_asked": sorted({str(s["judge"].get("model")) for s in results["subtasks"].values()
                                        if isinstance(s, dict) and isinstance(s.get("judge"), dict)
                                        and s["judge"].get("model")}),
                "judges_answered": judges_answered(items),
                "judges_answered_by_subtask": judges_answered_by_subtask(items),
                "product_endpoint": recorded.get("endpoint"),
                "created": results.get("created"), "seed": results.get("seed"), "mode": results.get("mode"),
                "suite": results.get("suite"), "limit": results.get("limit"), "n_boot": results.get("n_boot"),
                "options": recorded, "generation": results.get("generation"),
                "files": dict(run_digests)},
        "datasets": results.get("datasets") or {},
        "dataset_set_sha256": set_digests(results.get("datasets") or {}),
        "policies": {name: {"file": f"policies/{name}.toml", "sha256": sha} for name, sha in policies.items()},
        "certificates": [{"fingerprint": c.get("fingerprint"), "subtask": c.get("subtask"),
                          "reference": (c.get("reference") or {}).get("name")
                          if isinstance(c.get("reference"), dict) else c.get("reference")} for c in certificates],
        "leak_check": {"redacted": [{"file": x.file, "field": x.field, "kind": x.kind} for x in redacted],
                       "dataset_text_left_out": list(left_out)},
    }


def _check_leaks(leaks: list[Leak], on_leak: str) -> None:
    if leaks and on_leak == REFUSE:
        more = f" (and {len(leaks) - 1} more)" if len(leaks) > 1 else ""
        raise TrustmhError(f"dossier refused, nothing written: {leaks[0].line()}{more}; remove it from the run, "
                           "or run again with --on-leak redact to replace every such text with [REDACTED]")


def dossier_files(run_dir: Path | str, policies: Sequence[str | Path], *, private_files: Sequence[Path] = (),
                  on_leak: str = REFUSE, include_dataset_text: bool = False, certs_dir: Path | str | None = None
                  ) -> tuple[dict[str, str], list[Leak]]:
    """Every file of the dossier ({path inside it: text}) and the leaks redacted; raises on a refused leak."""
    if not policies:
        raise TrustmhError("dossier: give at least one --policy NAME|FILE")
    run = run_path(run_dir)
    results = load_results(run)
    refuse_shard(results, run)
    raw_items = load_items(run)
    if raw_items is None:
        raise TrustmhError(f"{run}: no items.jsonl; a dossier needs the run's scored items (trustmh >= 0.2)")
    run_digests = {name: sha256_bytes((run / name).read_bytes()) for name in ("results.json", "items.jsonl")}
    left_out = leave_out_dataset_text(raw_items, include_dataset_text, results)
    private = Private.of(secret_values(), private_texts(results, private_files))
    results, leaks = scan_json(results, private, "results.json")
    items: list[dict[str, Any]] = []
    for n, row in enumerate(raw_items, start=1):
        clean, _ = scan_json(row, private, "items.jsonl", f"record {n} ({item_key(row)})", leaks)
        items.append(clean)
    certificates, _ = scan_json(certificates_for(results, certs_dir), private, "certificates.json", "", leaks)
    files: dict[str, str] = {"results.json": json.dumps(results, indent=2, ensure_ascii=False) + "\n",
                             "items.jsonl": "".join(item_line(r) + "\n" for r in items),
                             "certificates.json": json.dumps(clean_json(certificates), indent=2, ensure_ascii=False) + "\n"}
    gates: dict[str, dict[str, Any]] = {}
    policy_digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="trustmh-dossier-") as tmp:
        for policy in policies:
            name = policy_name(policy)
            if name in gates:
                raise TrustmhError(f"--policy {policy}: a second policy named {name}; give each policy once")
            load_policy(policy)  # a bad policy: its own one-line error first
            text, _ = policy_text(policy)
            for n, line in enumerate(text.splitlines(), start=1):
                for leak in scan_lines(line, private, f"policies/{name}.toml"):
                    leaks.append(Leak(leak.file, f"line {n}", leak.kind))
            copy = Path(tmp) / f"{name}.toml"
            copy.write_text(text, encoding="utf-8")
            files[f"policies/{name}.toml"] = text
            policy_digests[name] = sha256_bytes(text.encode("utf-8"))
            gates[name] = gate_under(copy, results, certificates, f"policies/{name}.toml")
            files[f"gates/gate-{name}.json"] = json.dumps(gates[name], indent=2, ensure_ascii=False) + "\n"
    _check_leaks(leaks, on_leak)
    prov = provenance(results, items, policy_digests, certificates, run_digests, leaks, left_out)
    files["provenance.json"] = json.dumps(clean_json(prov), indent=2, ensure_ascii=False) + "\n"
    files["summary.md"] = summary_markdown(gates, prov)
    files["summary.html"] = summary_html(gates, prov, items)
    files["failing.md"] = failing_markdown(gates, items)
    # the last pass, over every file as it will be written (a page puts texts together anew)
    late = [leak for name, text in files.items() if not name.startswith("policies/")
            for leak in scan_lines(text, private, name)]
    _check_leaks(late, on_leak)
    for leak in late:
        files[leak.file] = redact_text(files[leak.file], private)
    files[MANIFEST] = manifest_json(files)
    return files, leaks + late


def manifest_json(files: Mapping[str, str]) -> str:
    digests = {name: sha256_bytes(text.encode("utf-8")) for name, text in sorted(files.items()) if name != MANIFEST}
    items = {}
    for line in files.get("items.jsonl", "").splitlines():
        row = json.loads(line)
        items[item_key(row)] = sha256_bytes(line.encode("utf-8"))
    return json.dumps({"kind": "trustmh-dossier-manifest", "files": digests,
                       "files_sha256": listing_sha256(digests.items()), "items": items},
                      indent=2, ensure_ascii=False) + "\n"


def write_archive(folder: Path, archive: Path) -> None:
    """`folder` as a gzipped tar whose bytes depend only on the files (sorted names, no times or owners)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{folder.name}/{path.relative_to(folder).as_posix()}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    archive.write_bytes(gzip.compress(buf.getvalue(), mtime=0))


def build_dossier(run_dir: Path | str, policies: Sequence[str | Path], out: Path, **kwargs: Any
                  ) -> tuple[dict[str, str], list[Leak]]:
    """Write the dossier into `out` (a new folder, or a previous dossier's, replaced whole) and `out.tar.gz`."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST).exists())):
        raise TrustmhError(f"--out {out}: exists and is not a dossier; choose a new folder")
    files, leaks = dossier_files(run_dir, policies, **kwargs)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, text in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    write_archive(out, out.with_name(out.name + ".tar.gz"))
    return files, leaks
