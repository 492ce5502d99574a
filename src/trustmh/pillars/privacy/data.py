"""Privacy pillar data (docs/pillars/privacy.md#privacy): the ConfAIde tier 1-2 files, the PsyLeak records with
their control lines, and the `-O` options. Shared with `trustmh.pillars.privacy.rescore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trustmh.core import Option, TrustmhError
from trustmh.data import resolve

PRIVACY_REL = "trustmh/TrustMH_Bench/DimGroup1/General-model/privacy"
CONFAIDE_REL = "external/ConfAIde"
TIER1_FILES = ("tier_1.txt", "tier_1_labels.txt")
TIER2_FILES = ("tier_2a.txt", "tier_2b.txt", "tier_2_labels.txt")
PSYLEAK_REL = "trustmh/dataset/PsyLeak.txt"
PSYLEAK_CONTROL_REL = "trustmh/dataset/PsyLeak_control.txt"


def _resolve_first(candidates: Sequence[tuple[str, str]]) -> Path:
    """The first candidate (dataset, relpath) that resolves; the last error if none does."""
    last: TrustmhError | None = None
    for name, rel in candidates:
        try:
            return resolve(name, rel)
        except TrustmhError as exc:
            last = exc
    assert last is not None
    raise last


def confaide_path(fname: str, task: str, user_dir: str | None = None) -> Path:
    if user_dir:
        return resolve("confaide", fname, Path(user_dir) / fname)
    # The TrustMH copies and the upstream ConfAIde files are byte-identical (registry notes).
    return _resolve_first([("trustmh_privacy", f"{PRIVACY_REL}/{task}/benchmark/{fname}"),
                           ("confaide", f"{CONFAIDE_REL}/{fname}")])


def _read_text_lines(path: Path) -> list[str]:
    """Lines as the original read them (`readlines()` + `strip()`); a missing final newline is fine."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{path}: not UTF-8 ({exc})") from exc
    lines = [ln.strip() for ln in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _read_labels(path: Path) -> list[float]:
    out = []
    for i, ln in enumerate(_read_text_lines(path), start=1):
        try:
            out.append(float(ln))
        except ValueError as exc:
            raise TrustmhError(f"{path} line {i}: human label {ln!r} is not a number") from exc
    return out


def load_confaide_tier1(text_path: Path, labels_path: Path) -> list[dict[str, Any]]:
    """ConfAIde tier 1: 10 rows `{tier, index, text, human}`; `text` keeps the literal two-character `\\n`."""
    texts, labels = _read_text_lines(text_path), _read_labels(labels_path)
    if len(texts) != len(labels):
        raise TrustmhError(f"{text_path}: {len(texts)} items but {labels_path} has {len(labels)} labels")
    return [{"tier": "1", "index": i, "text": t, "human": h} for i, (t, h) in enumerate(zip(texts, labels, strict=True))]


def load_confaide_tier2(a_path: Path, b_path: Path, labels_path: Path) -> list[dict[str, Any]]:
    """ConfAIde tiers 2a (vignettes) and 2b (stories): 98 rows each, sharing one label file."""
    a, b, labels = _read_text_lines(a_path), _read_text_lines(b_path), _read_labels(labels_path)
    for path, rows in ((a_path, a), (b_path, b)):
        if len(rows) != len(labels):
            raise TrustmhError(f"{path}: {len(rows)} items but {labels_path} has {len(labels)} labels")
    out = [{"tier": "2a", "index": i, "text": t, "human": h} for i, (t, h) in enumerate(zip(a, labels, strict=True))]
    out += [{"tier": "2b", "index": i, "text": t, "human": h} for i, (t, h) in enumerate(zip(b, labels, strict=True))]
    return out


_BEGIN = "<BEGIN>"
_END = "<END>"


def parse_psyleak(text: str, source: str = "PsyLeak.txt") -> list[dict[str, Any]]:
    """PsyLeak / ConfAIde tier-3 records: `<BEGIN><topic,counselor,relation,reason>` line, body lines, and
    `<END>` + the same header + `<About: ..,Questionee: ..,Questioner: ..,Topic: ..>`.

    Returns one dict per scenario, in file order: scenario_idx, topic, aware_agent_relation,
    oblivious_agent_relation, reveal_reason, subject_agent (client), aware_agent (counsellor),
    oblivious_agent (third party), secret (the footer topic), body (the story lines as in the file).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    records: list[dict[str, Any]] = []
    header: str | None = None
    header_line = 0
    body: list[str] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.startswith(_BEGIN):
            if header is not None:
                raise TrustmhError(f"{source} line {lineno}: <BEGIN> before the <END> of the record at line "
                                   f"{header_line}")
            header, header_line, body = line.strip()[len(_BEGIN):], lineno, []
            fields = header.removeprefix("<").removesuffix(">").split(",")
            if not (header.startswith("<") and header.endswith(">")) or len(fields) != 4:
                raise TrustmhError(f"{source} line {lineno}: header must be <topic,counselor,relation,reason>, "
                                   f"got {header!r}")
        elif line.startswith(_END):
            if header is None:
                raise TrustmhError(f"{source} line {lineno}: <END> without <BEGIN>")
            rest = line.strip()[len(_END):]
            if not rest.startswith(header):
                raise TrustmhError(f"{source} line {lineno}: <END> header differs from the <BEGIN> header "
                                   f"at line {header_line}")
            footer = rest[len(header):].removeprefix("<").removesuffix(">")
            agents: dict[str, str] = {}
            for part in footer.split(","):
                key, sep, value = part.partition(": ")
                if not sep:
                    raise TrustmhError(f"{source} line {lineno}: footer field {part!r} is not 'Key: value'")
                agents[key.strip().lower()] = value.strip().strip(".")
            missing = [k for k in ("about", "questionee", "questioner", "topic") if not agents.get(k)]
            if missing:
                raise TrustmhError(f"{source} line {lineno}: footer lacks field(s) {', '.join(missing)}")
            if len(set(agents.values())) != 4:
                raise TrustmhError(f"{source} line {lineno}: footer names are not 4 distinct values")
            topic, aware_rel, obliv_rel, reason = header[1:-1].split(",")
            records.append({
                "scenario_idx": len(records), "topic": topic, "aware_agent_relation": aware_rel,
                "oblivious_agent_relation": obliv_rel, "reveal_reason": reason,
                "subject_agent": agents["about"], "aware_agent": agents["questionee"],
                "oblivious_agent": agents["questioner"], "secret": agents["topic"],
                "body": "\n".join(body), "line": header_line,
            })
            header = None
        elif header is not None:
            body.append(line)
        elif line.strip():
            raise TrustmhError(f"{source} line {lineno}: text outside a <BEGIN>…<END> record")
    if header is not None:
        raise TrustmhError(f"{source} line {header_line}: record has no <END>")
    return records


def load_psyleak(path: Path, control_path: Path) -> list[dict[str, Any]]:
    """PsyLeak scenarios with their control line (`control`); line i of the control file ↔ scenario i."""
    records = parse_psyleak(path.read_text(encoding="utf-8"), source=str(path))
    controls = _read_text_lines(control_path)
    if len(controls) != len(records):
        raise TrustmhError(f"{control_path}: {len(controls)} control lines but {path} has {len(records)} "
                           "scenarios")
    for rec, ctl in zip(records, controls, strict=True):
        rec["control"] = ctl
    return records


# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'confaide_dir': Option('ConfAIde folder'),
    'psyleak_path': Option('PsyLeak file'),
    'psyleak_control_path': Option('PsyLeak control file'),
    'tier2_limit': Option('tier-2 items', minimum=1),
    'awareness_samples': Option('samples per awareness item', minimum=1),
    'privacy_proxy_model': Option('proxy model (faithful)'),
}
