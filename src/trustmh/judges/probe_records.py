"""Probe records: a judge's bias battery (`trustmh judge probe`, docs/judge-probes.md) as a file beside its
certificate, `<certificates dir>/probes/<fingerprint>.json`, found by the fingerprint a run records, so that the
gate (`require_probe`) and the report's Judges section read it as they read the certificate."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trustmh.storage import write_text_atomic

FORMAT = 1
KIND = "trustmh-judge-probe"
PROBES_DIR = "probes"
PASSING = "pass"


def probe_path(certs_dir: str | Path, fingerprint: str) -> Path:
    return Path(certs_dir) / PROBES_DIR / f"{fingerprint}.json"


def write_probe_record(certs_dir: str | Path, record: Mapping[str, Any]) -> Path:
    """Write `<certs_dir>/probes/<fingerprint>.json` atomically (replacing an older battery of that judge)."""
    if record.get("kind") != KIND or not record.get("fingerprint"):
        raise ValueError("not a probe record")
    path = probe_path(certs_dir, str(record["fingerprint"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path


def find_probe(certs_dir: str | Path | None, fingerprint: str | None) -> dict[str, Any] | None:
    """The probe record beside the certificates for this fingerprint, or None (none, unreadable, another's)."""
    if not fingerprint or certs_dir is None:
        return None
    try:
        data = json.loads(probe_path(certs_dir, fingerprint).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("format") != FORMAT \
            or data.get("fingerprint") != fingerprint:
        return None
    return data
