"""MindEval's clinician ratings (Sword Health, arXiv 2511.18491; `SWORDHealth/mind-eval`), read in place.

The repository states no licence: its files are only ever read from where they are (`--from DIR`, a folder
laid out like the repository; or `TRUSTMH_DATA_DIR`/the cache via the data registry, pinned commit + sha256,
for local use). Nothing of it is copied into trustmh, its tests or its outputs beyond figures.

`data/human_annotations.jsonl` (one JSON object per line) holds 60 conversations between an AI therapist and
a simulated member (`messages`: alternating `assistant`/`user` turns, the therapist first), each rated by four
clinicians on numbered fields `criterion_N.responses` (a list of integers 1-6, 0 = not applicable), with
`criterion_N.responses.users` (who gave each rating, in that list's order) and `.responses.status`.
Quirks of the real file, each kept in a synthetic fixture (tests/fixtures/mindeval/):

* the numbered fields are 1, 2, 3, 4, 6, 7, 8, 9, 10 and `criterion11` (no underscore); there is no 5;
* the order of `users` differs between fields of the same row: ratings are matched by user id, never by
  position;
* 0 means "not applicable": counted, never a score (some fields have it on a sixth of their ratings);
* the free-text justification fields have two to four entries, or are null;
* the same member profile appears once per therapist model (20 profiles × 3 models): the bootstrap resamples
  profiles, so the three conversations of one profile move together.

Which field belongs to which criterion: the publisher does not say in words. Its judge prompt
(`mindeval/judge_prompts.py`, `JUDGE_PROMPT_TEMPLATE`) shows five example conversations with reference scores
on the five named criteria (the names its parser `mindeval/utils.py:parse_judge_scores` reads); those five
conversations are five of the sixty annotated ones, and each example score equals the mean of the four
clinicians' ratings over exactly the fields below (0 counted as 0, as the publisher's examples do), for all
five examples, and no other set of up to four fields fits. `mapping_check` re-derives this from the
publisher's files at run time and reports it. `criterion11` fits no criterion: it is left unmapped and
reported on its own. trustmh counts 0 as "not applicable", never as a score: a clinician's rating of a
criterion is the mean of their applicable ratings over its fields (none applicable: not rated).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import (
    Item,
    JudgeRequest,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    clean_json,
)
from trustmh.data.files import bounded_file, present
from trustmh.data.publisher import file_in_folder
from trustmh.data.rows import KeyedRows, RowProblem, RowReport, decoded_lines, normalize_text
from trustmh.digest import sha256_bytes
from trustmh.flag_values import FlagValue
from trustmh.judges.reference_quality import FLOORS, human_agreement
from trustmh.pillars.conversation.scoring import parse_marks, rubric_request, transcript_text
from trustmh.stats.bootstrap import bootstrap_mean
from trustmh.storage import write_text_atomic

DATASET = "mindeval"
COMMIT = "aab6be604e686bd5a158c3f252c3a71c955c28ce"
REL_ROOT = "external/mind-eval"  # where the registry's copy lives under TRUSTMH_DATA_DIR / the cache
ANNOTATIONS = "data/human_annotations.jsonl"
USER_TURNS = "data/human_user_turns.jsonl"
JUDGE_PROMPTS = "mindeval/judge_prompts.py"
SCALE = (1, 6)
NOT_APPLICABLE = 0

# trustmh's rubric keys (pillars/conversation/scoring.RUBRIC_KEYS) -> the publisher's criterion name and the
# annotation fields whose mean is that criterion (derivation: module docstring).
CRITERIA: dict[str, tuple[str, tuple[str, ...]]] = {
    "clinical_accuracy": ("Clinical Accuracy & Competence", ("criterion_1", "criterion_2")),
    "ethical_conduct": ("Ethical & Professional Conduct", ("criterion_3", "criterion_4")),
    "assessment_and_response": ("Assessment & Response", ("criterion_6", "criterion_7")),
    "therapeutic_alliance": ("Therapeutic Relationship & Alliance", ("criterion_8", "criterion_9")),
    "ai_communication": ("AI-Specific Communication Quality", ("criterion_10",)),
}
FIELD_OF = {f: key for key, (_, fields) in CRITERIA.items() for f in fields}
MAPPING_SOURCE = (f"derived from the publisher's judge prompt ({JUDGE_PROMPTS} at {COMMIT[:7]}): its five example "
                  "conversations are annotated conversations, and each example score is the mean of the four "
                  "clinicians' ratings over exactly these fields; criterion11 fits none and is left unmapped")

_FIELD = re.compile(r"^criterion_?(\d+)\.responses$")


@dataclass
class Conversation:
    id: str
    model: str | None
    profile: str  # a short hash of the member profile (the bootstrap's cluster)
    turns: list[dict[str, str]] | None  # trustmh's turn list (role "model"/"patient"), None when unusable
    ratings: dict[str, dict[str, int | None]] = field(default_factory=dict)  # field -> rater -> 1..6 | None


@dataclass
class Annotations:
    path: Path
    conversations: list[Conversation]
    fields: list[str]  # canonical names ("criterion_11" for the file's "criterion11"), in numeric order
    field_spelling: dict[str, str]  # canonical -> as the file spells it
    raters: list[str]  # C1.. in order of first appearance
    not_applicable: dict[str, int]  # field -> ratings of 0
    report: RowReport
    sha256: str

    def by_field(self, name: str) -> dict[str, dict[str, int | None]]:
        """conversation id -> rater -> rating (None: not applicable or not rated) on one field."""
        return {c.id: dict(c.ratings.get(name, {})) for c in self.conversations}

    def by_criterion(self, key: str) -> dict[str, dict[str, float | None]]:
        """conversation id -> rater -> the mean of that rater's applicable ratings on the criterion's fields."""
        fields = CRITERIA[key][1]
        out: dict[str, dict[str, float | None]] = {}
        for c in self.conversations:
            row: dict[str, float | None] = {}
            for r in self.raters:
                got = [v for f in fields if (v := c.ratings.get(f, {}).get(r)) is not None]
                row[r] = sum(got) / len(got) if got else None
            out[c.id] = row
        return out

    @property
    def clusters(self) -> dict[str, str]:
        return {c.id: c.profile for c in self.conversations}


def _canonical(number: str) -> str:
    return f"criterion_{int(number)}"


def _turns(messages: Any) -> tuple[list[dict[str, str]] | None, str | None]:
    """trustmh turns from the publisher's messages, or (None, why not)."""
    if not isinstance(messages, list) or not messages:
        return None, "missing or not a list"
    turns = []
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        content = m.get("content") if isinstance(m, dict) else None
        if role not in ("assistant", "user"):
            return None, f"message {i} has role {role!r}"
        if not isinstance(content, str) or not content.strip():
            return None, f"message {i} has no text"
        ours = "model" if role == "assistant" else "patient"
        turns.append({"role": ours, "content": content, "turn": i // 2 + 1})
    return turns, None


def _profile_key(row: Mapping[str, Any]) -> str:
    # the rendered profile: 20 in the real file, three conversations each (`member_attributes` also holds
    # per-conversation fields, so it differs between the three)
    profile = row.get("member_profile") or row.get("member_attributes") or row.get("id")
    text = json.dumps(profile, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def read_annotations(path: Path) -> Annotations:
    """Read the annotation file; every row, field or rating it cannot use is named in `report` (and the file
    is refused only when no conversation is usable)."""
    try:
        raw = bounded_file(path).read_bytes()
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc.strerror or exc})") from None
    report = RowReport()
    name = path.name
    rows: list[tuple[int, dict[str, Any]]] = []
    for i, line in enumerate(decoded_lines(raw, name, report)):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            report.add(RowProblem(name, i, "line", "not JSON", "skipped"))
            continue
        if not isinstance(obj, dict):
            report.add(RowProblem(name, i, "line", f"a JSON {type(obj).__name__}, not an object", "skipped"))
            continue
        rows.append((i, obj))
    spelling: dict[str, str] = {}
    for _, obj in rows:
        for key in obj:
            if (m := _FIELD.match(key)) is not None:
                spelling.setdefault(_canonical(m.group(1)), key[: -len(".responses")])
    fields = sorted(spelling, key=lambda f: int(f.split("_")[1]))
    raters: dict[str, str] = {}  # user id -> C1..
    not_applicable = dict.fromkeys(fields, 0)
    conversations: list[Conversation] = []
    keyed = KeyedRows(name, "id")  # a conversation given twice: once if its copies agree, else left out
    for i, obj in rows:
        cid = obj.get("id")
        if not isinstance(cid, str) or not cid.strip():
            report.add(RowProblem(name, i, "id", "missing", "skipped"))
            continue
        keyed.add(cid, i, (i, obj))
    kept = {first for first, _ in keyed.result(report, lambda cid: f"conversation {cid}",
                                               same=lambda a, b: a[1] == b[1]).values()}
    for i, obj in rows:
        if i not in kept:
            continue
        cid = obj["id"]
        turns, why = _turns(obj.get("messages"))
        if turns is None:
            report.add(RowProblem(name, i, "messages", str(why),
                                  "kept for the clinicians' agreement; not judged"))
        conv = Conversation(id=cid, model=obj.get("model") if isinstance(obj.get("model"), str) else None,
                            profile=_profile_key(obj), turns=turns)
        for f in fields:
            base = spelling[f]
            values, users = obj.get(f"{base}.responses"), obj.get(f"{base}.responses.users")
            status = obj.get(f"{base}.responses.status")
            if values is None and users is None:
                report.add(RowProblem(name, i, base, "not rated by anyone", "left out of this field"))
                continue
            if (not isinstance(values, list) or not isinstance(users, list) or len(values) != len(users)
                    or (status is not None and (not isinstance(status, list) or len(status) != len(values)))):
                report.add(RowProblem(name, i, base, "ratings, users and status lists do not line up",
                                      "left out of this field"))
                continue
            if len(set(map(str, users))) != len(users):
                report.add(RowProblem(name, i, base, "a user rated twice", "left out of this field"))
                continue
            row: dict[str, int | None] = {}
            for k, (value, user) in enumerate(zip(values, users, strict=True)):
                rater = raters.setdefault(str(user), f"C{len(raters) + 1}")
                if status is not None and status[k] != "submitted":
                    report.add(RowProblem(name, i, f"{base} ({rater})", f"status {status[k]!r}", "rating left out"))
                    row[rater] = None
                    continue
                if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                        or value != int(value) or not (NOT_APPLICABLE <= value <= SCALE[1]):
                    report.add(RowProblem(name, i, f"{base} ({rater})", f"rating {value!r} is not an integer "
                                          f"{NOT_APPLICABLE}-{SCALE[1]}", "rating left out"))
                    row[rater] = None
                    continue
                if int(value) == NOT_APPLICABLE:
                    not_applicable[f] += 1
                    row[rater] = None  # not applicable: never a score
                    continue
                row[rater] = int(value)
            conv.ratings[f] = row
        conversations.append(conv)
    RowReport.require_usable(len(conversations), str(path), report.problems)
    return Annotations(path=path, conversations=conversations, fields=fields, field_spelling=spelling,
                       raters=sorted(raters.values(), key=lambda r: int(r[1:])), not_applicable=not_applicable,
                       report=report, sha256=sha256_bytes(raw))


# --------------------------------------------------------------------------------------- the mapping check

_EXAMPLE = re.compile(r"<conversation>\s*(.*?)</conversation>\s*<output>(.*?)</output>", re.S)
_MEMBER = re.compile(r"<member>\s*(.*?)\s*</member>", re.S)


def mapping_check(prompts_path: Path | None, ann: Annotations) -> dict[str, Any]:
    """Re-derive the field -> criterion mapping from the publisher's judge prompt: for each example
    conversation found among the annotated ones, does each example score equal the four clinicians' mean over
    the mapped fields (0 counted as 0, as the publisher's examples do)? {"examples", "matched", "reproduced":
    {criterion: count}} or {"status": "not checked", "why": ...}."""
    if prompts_path is None or not present(prompts_path):
        return {"status": "not checked", "why": f"{JUDGE_PROMPTS} not found beside the data"}
    text = bounded_file(prompts_path).read_text(encoding="utf-8", errors="replace")
    by_patient: dict[str, str | None] = {}  # the member's turns -> conversation id (None: ambiguous)
    raw_rows: dict[str, dict[str, Any]] = {}
    for line in decoded_lines(bounded_file(ann.path).read_bytes(), ann.path.name, None):  # named when first read
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        cid = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(cid, str) or cid in raw_rows or not isinstance(obj.get("messages"), list):
            continue
        raw_rows[cid] = obj
        member = "\n".join(normalize_text(str(m.get("content", ""))) for m in obj["messages"]
                           if isinstance(m, dict) and m.get("role") == "user")
        by_patient[member] = None if member in by_patient else cid
    examples: dict[str, dict[str, float]] = {}
    for conv, output in _EXAMPLE.findall(text):
        key = "\n".join(normalize_text(m) for m in _MEMBER.findall(conv))
        cid = by_patient.get(key)
        if cid is None:
            continue
        scores = {}
        for line in output.strip().splitlines():
            label, _, value = line.rpartition(":")
            try:
                scores[label.strip()] = float(value)
            except ValueError:
                continue
        examples[cid] = scores
    reproduced = {}
    for key, (name, fields) in CRITERIA.items():
        hits = 0
        for cid, scores in examples.items():
            row = raw_rows[cid]
            values = [v for f in fields for v in (row.get(f"{ann.field_spelling.get(f, f)}.responses") or [])]
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                continue  # a rating the reader left out (named in its report) reproduces nothing
            if name in scores and values and abs(statistics.fmean(values) - scores[name]) < 1e-9:
                hits += 1
        reproduced[key] = hits
    return {"status": "checked", "file": JUDGE_PROMPTS, "examples_found": len(_EXAMPLE.findall(text)),
            "examples_matched": len(examples), "reproduced": reproduced,
            "mapping_holds": bool(examples) and all(v == len(examples) for v in reproduced.values())}


# ------------------------------------------------------------------------- a certify reference (plain part)

SIMULATED_PATIENT = "conversation/simulated_patient"


class StoredConversationRubric(Subtask):
    """The rubric judge of `conversation/simulated_patient` asked about a stored conversation: exactly the
    request a run sends (`scoring.rubric_request`: same template, schema and token cap), scored by the same
    parser. Not a catalogue sub-task: `trustmh judge certify --reference mindeval` drives it, and the
    certificate carries the fingerprint of the sub-task it stands for."""

    pillar = "conversation"

    def __init__(self, subtask_id: str = SIMULATED_PATIENT) -> None:
        self.id = subtask_id

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        return [rubric_request(item.metadata["turns"])]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        marks = None if judge_outputs is None else parse_marks("rubric", judge_outputs.get("rubric"))
        return {"rubric": marks, "judge_valid": marks is not None, "valid": True}

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        means = [statistics.fmean(r.score["rubric"].values()) for r in records if r.score.get("rubric")]
        return SubtaskResult(value=statistics.fmean(means) if means else None, ci=None, n=len(means),
                             n_invalid=len(records) - len(means), direction="higher")


def reference_items(ann: Annotations) -> tuple[list[Item], dict[str, dict[str, dict[str, float | None]]]]:
    """The judgeable conversations as stored items (the transcript is what the rubric judge reads), and the
    clinicians' ratings per item: conversation -> clinician -> {rubric key: rating}."""
    per_key = {key: ann.by_criterion(key) for key in CRITERIA}
    items, humans = [], {}
    for c in ann.conversations:
        if c.turns is None:
            continue
        items.append(Item(id=c.id, prompt="(a stored MindEval conversation)", cluster=c.profile,
                          metadata={"skip_generation": True, "stored_response": transcript_text(c.turns),
                                    "turns": c.turns, "model": c.model}))
        humans[c.id] = {r: {key: per_key[key][c.id][r] for key in CRITERIA} for r in ann.raters}
    return items, humans


# ------------------------------------------------------------------------------------------- locating

def locate(source: Path | str | None, rel: str) -> Path:
    """A MindEval file: under `source` (a folder laid out like the repository: `rescore --from`, or a value that
    names its own flag, `judge certify --reference-path`) when given, else from the data registry
    (TRUSTMH_DATA_DIR or the cache, checked against the pinned sha256; a download for local use)."""
    return file_in_folder(source, rel, dataset=DATASET, base=REL_ROOT,
                          given_as=source.typed if isinstance(source, FlagValue) else f"--from {source}",
                          flag="--reference-path DIR")  # rescore always names --from: only certify reads no folder


def criterion_table(ann: Annotations) -> list[tuple[str, str, tuple[str, ...]]]:
    """(key, label, fields) of every criterion and every single field, mapped or not, in report order."""
    rows = [(key, name, fields) for key, (name, fields) in CRITERIA.items()]
    rows += [(f, f"{ann.field_spelling[f]} ({FIELD_OF.get(f, 'unmapped')})", (f,)) for f in ann.fields]
    return rows


def _single_field_ratings(ann: Annotations, f: str) -> dict[str, dict[str, float | None]]:
    return {cid: {r: (None if v is None else float(v)) for r, v in row.items()} for cid, row in ann.by_field(f).items()}


def clinician_figures(ann: Annotations, *, seed: int, n_boot: int) -> dict[str, Any]:
    """Per criterion (and per field): the clinicians' mean rating with a seeded interval (profiles
    resampled), n ratings, n not applicable, and clinician-vs-clinician agreement (the reference-quality rule,
    `judges.reference_quality.human_agreement`), with whether it clears the floor."""
    out: dict[str, Any] = {}
    clusters = ann.clusters
    for key, label, fields in criterion_table(ann):
        ratings = ann.by_criterion(key) if key in CRITERIA else _single_field_ratings(ann, key)
        values, labels = [], []
        for cid, row in ratings.items():
            for v in row.values():
                if v is not None:
                    values.append(float(v))
                    labels.append(clusters[cid])
        mean, ci = bootstrap_mean(values, labels, seed=seed, n_boot=n_boot) if values else (float("nan"), None)
        agreement = human_agreement(ratings, "ratings", seed=seed, n_boot=n_boot, clusters=clusters)
        lo = (agreement.get("ci") or [None])[0]
        out[key] = {
            "label": label, "fields": list(fields), "mapped": key in CRITERIA or key in FIELD_OF,
            "mean": None if not values else mean, "mean_ci": None if not values else list(ci),
            "n_ratings": len(values), "n_not_applicable": sum(ann.not_applicable.get(f, 0) for f in fields),
            "n_conversations": sum(1 for row in ratings.values() if any(v is not None for v in row.values())),
            "agreement": agreement,
            "clears_floor": lo is not None and lo >= FLOORS["ratings"],
        }
    return out


def per_model_means(ann: Annotations) -> dict[str, dict[str, float | None]]:
    """The clinicians' mean rating per therapist model and criterion (plain means of the applicable ratings)."""
    out: dict[str, dict[str, float | None]] = {}
    for key in CRITERIA:
        ratings = ann.by_criterion(key)
        pooled: dict[str, list[float]] = {}
        for c in ann.conversations:
            pooled.setdefault(str(c.model), []).extend(v for v in ratings[c.id].values() if v is not None)
        for model, vals in pooled.items():
            out.setdefault(model, {})[key] = statistics.fmean(vals) if vals else None
    return out


def _num(x: Any, nd: int = 2) -> str:
    return "—" if x is None else f"{float(x):.{nd}f}"


def table_text(figures: Mapping[str, Any]) -> str:
    """A short fixed-width table of the clinicians' figures (what `trustmh rescore --format mindeval` prints)."""
    head = f"{'criterion':<42} {'mean':>5} {'n':>4} {'n/a':>4}  {'agreement (95% CI)':<34} floor"
    lines = [head, "-" * len(head)]
    for f in figures.values():
        ag = f["agreement"]
        ci = ag.get("ci")
        stat = "ICC(A,1)" if ag["statistic"] == "icc_a1" else "α interval"
        cell = f"{stat} {_num(ag.get('value'))}" + (f" ({_num(ci[0])} to {_num(ci[1])})" if ci else "")
        lines.append(f"{f['label'][:42]:<42} {_num(f['mean']):>5} {f['n_ratings']:>4} {f['n_not_applicable']:>4}  "
                     f"{cell:<34} {'clears' if f['clears_floor'] else 'below'}")
    return "\n".join(lines)


def rescore_mindeval(source: Path | None, out: Path, *, seed: int, n_boot: int = 2000) -> int:
    """`trustmh rescore --format mindeval`: write `out/mindeval_rescore.json` and `out/mindeval_rescore.txt`
    (the table, also printed); returns 0."""
    path = locate(source, ANNOTATIONS)
    ann = read_annotations(path)
    ann.report.log()
    prompts = path.parent.parent / JUDGE_PROMPTS
    figures = clinician_figures(ann, seed=seed, n_boot=n_boot)
    check = mapping_check(prompts, ann)
    result = {
        "source": str(path), "sha256": ann.sha256, "publisher_commit": COMMIT, "licence": "none stated: read "
        "in place, never redistributed", "seed": seed, "n_boot": n_boot,
        "n_conversations": len(ann.conversations),
        "n_judgeable": sum(1 for c in ann.conversations if c.turns is not None),
        "n_profiles": len(set(ann.clusters.values())), "raters": ann.raters,
        "fields": {f: ann.field_spelling[f] for f in ann.fields},
        "mapping": {key: {"publisher_name": name, "fields": list(fields)} for key, (name, fields) in CRITERIA.items()},
        "unmapped_fields": [ann.field_spelling[f] for f in ann.fields if f not in FIELD_OF],
        "mapping_source": MAPPING_SOURCE, "mapping_check": check,
        "clinicians": figures, "clinician_mean_by_model": per_model_means(ann),
        **ann.report.as_json(),
        "notes": ["0 = not applicable: counted in n_not_applicable, never a score; a clinician's rating of a "
                  "criterion is the mean of their applicable ratings over its fields",
                  "mean: every applicable rating pooled; agreement: the reference-quality rule "
                  "(docs/references.md#the-rule): ICC(A,1) over the four clinicians where every clinician rated "
                  "every conversation, Krippendorff's alpha (interval) where some did not; intervals: seeded "
                  "percentile bootstrap over member profiles (each profile's conversations move together)"],
    }
    out.mkdir(parents=True, exist_ok=True)
    table = table_text(figures)
    write_text_atomic(out / "mindeval_rescore.json", json.dumps(clean_json(result), indent=2) + "\n")
    write_text_atomic(out / "mindeval_rescore.txt", table + "\n")
    print(table)
    held = check.get("mapping_holds")
    print(f"trustmh: wrote {out / 'mindeval_rescore.json'} ({len(ann.conversations)} conversations, "
          f"{len(ann.raters)} clinicians, {len(ann.report.problems)} rows/fields flagged; field mapping "
          f"{'re-derived from the publisher' + chr(39) + 's judge prompt' if held else 'not re-derived: ' + str(check.get('why', 'examples did not match'))})",
          file=sys.stderr)
    return 0
