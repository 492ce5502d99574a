"""The judge certificates the gate reads: those in the certificates directory (docs/judges.md#certificates).

TEMPORARY local stand-in for `trustmh.judges.certificates` (the judges helper's module, CERTIFICATE.md):
removed when that module lands; `certificates_for` then calls its `load_certificates`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def default_dir() -> Path:
    env = os.environ.get("TRUSTMH_CERTIFICATES_DIR")
    return Path(env) if env else Path.home() / ".cache" / "trustmh" / "certificates"


def load_certificates(certs_dir: Path | str) -> list[dict[str, Any]]:
    out = []
    for path in sorted(Path(certs_dir).glob("*.json")) if Path(certs_dir).is_dir() else []:
        try:
            cert = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(cert, dict):
            out.append(cert)
    return out


def certificates_for(results: dict[str, Any], certs_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """The certificates that could match a run's judged sub-tasks (by fingerprint)."""
    wanted = {((sub or {}).get("judge") or {}).get("fingerprint") for sub in (results.get("subtasks") or {}).values()
              if isinstance(sub, dict)} - {None}
    if not wanted:
        return []
    return [c for c in load_certificates(certs_dir or default_dir()) if c.get("fingerprint") in wanted]
