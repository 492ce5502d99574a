"""Moore et al. (FAccT 2025), "Expressing stigma and inappropriate responses prevents LLMs from safely replacing
mental health providers" (`jlcmoore/llms-as-therapists`, MIT): readers of the publisher's interjection files.

The publisher's definition, applied unchanged: every interjection (a message signalling suicidal ideation,
delusions, hallucinations, mania or compulsive behaviour) carries a yes/no *verification question* about the
reply and the answer an appropriate reply gets (`verification_correct`). A reply is appropriate when the
rater's answer equals that answer (their `correct_response`); a row with no readable answer is not
appropriate (their comparison of a missing answer is false), and is counted as such here too.

Files read (paths under the publisher's repository, pinned in the data registry as `moore`):

* `interjection_prompts.py`: the ten interjections, read as data (`ast.literal_eval` of the one dictionary,
  never executed);
* `results/interjections/<run>/*.jsonl`: LLM runs, GPT-4o's answer in `<judge>_classification`;
* `results/interjections/<run>/*.csv`: commercial therapy bots and human therapists (answers by people in
  `human_classification`), a CSV copy of one GPT-4o run, and `classification_validation.csv` (GPT-4o and two
  annotators, `annotator_1_classification`, `annotator_2_classification`, on 100 of 350 replies);
* `results/interjections/all_combined.csv`: the publisher's concatenation of the runs in the paper.

Every row that cannot be used as it stands is named (file, row, field) and counted; the reading goes on.
Nothing here is copied into trustmh: the texts are read at run time from the publisher's files.
"""

from __future__ import annotations

import ast
import csv
import difflib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import MAX_DATA_FILE_BYTES, bounded_file, check_input_file, present
from trustmh.data.publisher import publishers_copy, registered_file
from trustmh.data.registry import get as get_dataset
from trustmh.data.rows import KeyedRows, RowProblem, RowReport
from trustmh.flag_values import as_typed

DATASET = "moore"
REPO = "jlcmoore/llms-as-therapists"
COMMIT = "743e5c2d6ceb156f9114ff405786151628aac84e"
DATA_ROOT = "external/llms-as-therapists"  # the registry's folder for the publisher's files
PROMPTS_FILE = "interjection_prompts.py"
RESULTS_DIR = "results/interjections"
COMBINED_FILE = f"{RESULTS_DIR}/all_combined.csv"
VALIDATION_FILE = "classification_validation.csv"
HUMAN_THERAPIST_MODEL = "human_therapist"
CONDITIONS = ("suicidal ideation", "delusions", "hallucinations", "mania", "compulsive behavior, obsessive behavior")
ANNOTATORS = ("annotator_1", "annotator_2")
GPT4O = "gpt-4o-2024-08-06"
ANSWERS = ("yes", "no")
CITATION = ("Moore, Grabb, Agnew, Klyman, Chancellor, Ong & Haber (2025), Expressing stigma and inappropriate "
            "responses prevents LLMs from safely replacing mental health providers, FAccT '25; "
            f"github.com/{REPO} (MIT)")


@dataclass(frozen=True)
class Interjection:
    """One of the publisher's interjections: the client's message(s), the question about the reply and the
    answer an appropriate reply gets."""

    condition: str
    name: str
    messages: tuple[str, ...]  # client, (bot, client)*: the last one is the interjection itself
    question: str
    appropriate_answer: str  # "yes" | "no"


@dataclass
class Row:
    """One judged reply of one result file."""

    file: str
    index: int  # row number in its file (0-based, data rows)
    key: str  # the publisher's key (transcript_condition_name_message), else "<name>#<index>"
    name: str  # interjection name ("bridge", "dead"...)
    condition: str
    appropriate_answer: str
    reply: str | None
    answers: dict[str, str | None]  # rater -> "yes" | "no" | None (no readable answer)
    transcript: str | None = None
    message_number: str | None = None
    participant: str | None = None  # human therapists: the participant id
    messages: tuple[str, ...] = ()  # the interjection as stored in the row (client, (bot, client)*)

    def appropriate(self, rater: str) -> bool:
        """The publisher's `correct_response`: the rater's answer equals the appropriate answer."""
        return self.answers.get(rater) == self.appropriate_answer


@dataclass
class ResultFile:
    """One result file of the publisher's results/interjections folder."""

    path: str  # relative to the repository root
    run: dict[str, str]  # the folder's `key=value&...` settings
    kind: str  # "llm" | "commercial_bot" | "human_therapist" | "validation" | "llm_csv_copy"
    model: str
    raters: list[str]
    rows: list[Row] = field(default_factory=list)


# ------------------------------------------------------------------------------------------- cells


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().lower() in ("", "nan", "none", "null")


def answer_of(value: Any) -> str | None:
    """A rater's yes/no answer ("Yes", " no " read as yes/no); anything else is None (no readable answer)."""
    if _missing(value) or not isinstance(value, str):
        return None
    v = value.strip().lower()
    return v if v in ANSWERS else None


def text_of(value: Any) -> str | None:
    """A text cell: None when missing; numbers (a reader's floats and ints) as their text."""
    if _missing(value):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split()) if not isinstance(value, str) else value


def id_of(value: Any) -> str | None:
    """An identifier cell: "1339.0" (a float a table tool wrote) and 1339 both read as "1339"."""
    t = text_of(value)
    if t is None:
        return None
    t = t.strip()
    return t[:-2] if re.fullmatch(r"-?\d+\.0", t) else t


def same_question(a: str | None, b: str | None) -> bool:
    """Two copies of a verification question are the same up to whitespace (the publisher's CSVs wrap lines,
    some with CRLF)."""
    return a is not None and b is not None and " ".join(a.split()) == " ".join(b.split())


def run_settings(folder: str) -> dict[str, str]:
    """`contextualize=False&model=gpt-4o&...` → {"contextualize": "False", "model": "gpt-4o", ...}."""
    out = {}
    for part in folder.split("&"):
        k, sep, v = part.partition("=")
        if sep:
            out[k] = v
    return out


# ------------------------------------------------------------------------------------------ prompts


def load_interjections(path: Path) -> list[Interjection]:
    """The interjections of the publisher's `interjection_prompts.py`, read as data: the literal assigned to
    `CONDITION_TO_INTERJECTIONS` is evaluated with `ast.literal_eval` (the file is never executed)."""
    check_input_file(path, MAX_DATA_FILE_BYTES, str(path))  # a folder's file: bounded like every file supplied
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        raise TrustmhError(f"{path}: cannot read as Python source ({exc})") from None
    value = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "CONDITION_TO_INTERJECTIONS" for t in targets):
            value = node.value
    if value is None:
        raise TrustmhError(f"{path}: no CONDITION_TO_INTERJECTIONS dictionary")
    try:
        table = ast.literal_eval(value)
    except ValueError as exc:
        raise TrustmhError(f"{path}: CONDITION_TO_INTERJECTIONS is not a plain literal ({exc})") from None
    out: list[Interjection] = []
    for condition, named in table.items():
        for name, spec in named.items():
            where = f"{path}: {condition}/{name}"
            msgs = spec.get("interjection")
            messages = (msgs,) if isinstance(msgs, str) else tuple(msgs) if isinstance(msgs, list | tuple) else ()
            answer = answer_of(spec.get("verification_correct"))
            question = spec.get("verification_prompt")
            if not messages or not all(isinstance(m, str) and m.strip() for m in messages):
                raise TrustmhError(f"{where}: interjection is not a message or a list of messages")
            if len(messages) % 2 == 0:
                raise TrustmhError(f"{where}: {len(messages)} messages; expected client, (bot, client)*")
            if not isinstance(question, str) or not question.strip() or answer is None:
                raise TrustmhError(f"{where}: verification_prompt or verification_correct (yes/no) missing")
            out.append(Interjection(condition=str(condition), name=str(name), messages=messages,
                                    question=question, appropriate_answer=answer))
    if not out:
        raise TrustmhError(f"{path}: CONDITION_TO_INTERJECTIONS holds no interjection")
    return out


# -------------------------------------------------------------------------------------- result files


def _read_csv(path: Path) -> list[dict[str, Any]]:
    try:
        with bounded_file(path).open(encoding="utf-8-sig", newline="") as fh:
            return list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TrustmhError(f"{path}: cannot read as CSV ({exc})") from None


def _read_jsonl(path: Path, rel: str, report: RowReport) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        lines = bounded_file(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            report.add(RowProblem(rel, i, "line", "not JSON", "skipped"))
            continue
        if not isinstance(obj, dict):
            report.add(RowProblem(rel, i, "line", "not an object", "skipped"))
            continue
        rows.append(obj)
    return rows


def _kind(folder: Mapping[str, str], name: str) -> str:
    if name == VALIDATION_FILE:
        return "validation"
    if folder.get("model") == HUMAN_THERAPIST_MODEL:
        return "human_therapist"
    if "contextualize" not in folder:  # the live bots' runs have no transcripts to contextualise
        return "commercial_bot"
    return "llm" if name.endswith(".jsonl") else "llm_csv_copy"


def _raters(header: Iterable[str]) -> list[str]:
    return [h[: -len("_classification")] for h in header if h.endswith("_classification")]


def _rows(raw: Sequence[Mapping[str, Any]], rel: str, raters: Sequence[str], report: RowReport) -> list[Row]:
    """The usable rows of one result file; a record given twice (the same key) counts once when its copies
    agree and not at all when they differ (`KeyedRows`), so a doubled file cannot double n."""
    out: list[Row] = []
    keyed = KeyedRows(rel, "key")
    for i, r in enumerate(raw):
        key = text_of(r.get("key"))
        name = text_of(r.get("id")) or (key.split("_")[2] if key and key.count("_") >= 3 else None)
        condition = text_of(r.get("condition"))
        correct = answer_of(r.get("verification_correct"))
        missing = [f for f, v in (("interjection name (id/key)", name), ("condition", condition),
                                  ("verification_correct", correct)) if v is None]
        if missing:
            report.add(RowProblem(rel, i, ", ".join(missing), "missing or not yes/no", "skipped"))
            continue
        answers: dict[str, str | None] = {}
        for rater in raters:
            cell = r.get(f"{rater}_classification")
            answers[rater] = answer_of(cell)
            if answers[rater] is None and not _missing(cell):
                report.add(RowProblem(rel, i, f"{rater}_classification", f"{str(cell)[:20]!r} is not yes/no",
                                      "counted as no answer (not appropriate)"))
        reply = text_of(r.get("model_response"))
        out.append(Row(file=rel, index=i, key=key or f"{name}#{i}", name=name, condition=condition,  # type: ignore[arg-type]
                       appropriate_answer=correct, reply=reply, answers=answers,  # type: ignore[arg-type]
                       transcript=id_of(r.get("transcript_index")), message_number=id_of(r.get("message_number")),
                       participant=id_of(r.get("participant_id")), messages=messages_of(r.get("interjection"))))
        keyed.add(out[-1].key, i, dict(r))
    kept = keyed.result(report)
    first: dict[str, int] = {}
    return [row for row in out if row.key in kept and first.setdefault(row.key, row.index) == row.index]


def messages_of(value: Any) -> tuple[str, ...]:
    """An interjection cell: one message, a JSON list, or a list written by Python's repr (the CSVs); a cell
    that is neither (unbalanced quotes in a hand-made copy) is kept as one message."""
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    text = text_of(value)
    if text is None:
        return ()
    if text.lstrip().startswith("["):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return (text,)
        if isinstance(parsed, list | tuple) and all(isinstance(v, str) for v in parsed):
            return tuple(parsed)
    return (text,)


def read_result_files(root: Path, report: RowReport) -> list[ResultFile]:
    """Every result file under `root/results/interjections/<run>/` (jsonl and csv), sorted by path."""
    base = root / RESULTS_DIR
    if not base.is_dir():
        raise TrustmhError(f"--from {root}: no {RESULTS_DIR} folder (expected the publisher's repository layout, "
                           f"github.com/{REPO})")
    prompts = root / PROMPTS_FILE
    defined = {i.name: i.appropriate_answer for i in load_interjections(prompts)} if present(prompts) else {}
    out: list[ResultFile] = []
    for path in sorted(p for p in base.glob("*/*") if p.suffix in (".jsonl", ".csv")):
        if (f := read_result_file(path, path.relative_to(root).as_posix(), report, defined)) is not None:
            out.append(f)
    if not out:
        raise TrustmhError(f"{base}: no result file (<run>/*.jsonl or <run>/*.csv)")
    return out


def read_result_file(path: Path, rel: str, report: RowReport,
                     defined: Mapping[str, str] | None = None) -> ResultFile | None:
    """One result file (`rel`: its path in the repository, `<results>/<run folder>/<file>`); None when it holds
    no answer column (named in `report`). `defined`: name -> appropriate answer of interjection_prompts.py, to
    name stored answers that differ."""
    check_input_file(path, MAX_DATA_FILE_BYTES, str(path))  # a folder's file: bounded like every file supplied
    folder = run_settings(path.parent.name)
    if path.suffix == ".jsonl":
        raw = _read_jsonl(path, rel, report)
        header = list(dict.fromkeys(k for r in raw for k in r))
    else:
        raw = _read_csv(path)
        header = list(raw[0]) if raw else []
    raters = _raters(header)
    if not raters:
        report.add(RowProblem(rel, -1, "file", "no *_classification column", "file left out"))
        return None
    rows = _rows(raw, rel, raters, report)
    RowReport.require_usable(len(rows), rel, report.problems)
    if path.name == VALIDATION_FILE:
        _name_absent_annotators(header, rows, rel, report)
    for rater in raters:
        if all(r.answers[rater] is None for r in rows):  # e.g. an annotator column of NaN only
            report.add(RowProblem(rel, -1, f"{rater}_classification", "no yes/no answer in any row (all missing, "
                                  "NaN or not yes/no)", "this rater's figures are not computed"))
            continue
        if n := sum(1 for r in rows if r.answers[rater] is None and r.reply is None):
            report.add(RowProblem(rel, -1, f"{rater}_classification", f"{n} rows with no reply and no answer",
                                  "counted as not appropriate, as the publisher"))
    _check_answers(rows, defined or {}, rel, report)
    return ResultFile(path=rel, run=folder, kind=_kind(folder, path.name), model=folder.get("model", path.parent.name),
                      raters=raters, rows=rows)


def _name_absent_annotators(header: Sequence[str], rows: Sequence[Row], rel: str, report: RowReport) -> None:
    """An annotator column renamed or dropped: named with the column expected and the closest one the file has,
    so the agreement table's empty cells have their cause on the console, not only "no reply answered"."""
    for column in (f"{a}_classification" for a in ANNOTATORS if f"{a}_classification" not in header):
        close = difflib.get_close_matches(column, [h for h in header if h not in _known_columns()], n=1, cutoff=0.6)
        has = f" (the file has {close[0]!r}: renamed?)" if close else ""
        report.add(RowProblem(rel, -1, column, f"column absent{has}; none of its {len(rows)} rows carries this "
                              "annotator's answer", "this annotator's agreement figures are not computed"))


def _known_columns() -> set[str]:
    return {"key", "condition", "transcript_index", "interjection", "verification_in_context", "verification_prompt",
            "verification_options", "verification_correct", "message_number", "model_response",
            "classification_prompt", f"{GPT4O}_classification", *(f"{a}_classification" for a in ANNOTATORS)}


def _check_answers(rows: Sequence[Row], defined: Mapping[str, str], rel: str, report: RowReport) -> None:
    """Name the interjections whose stored appropriate answer differs from interjection_prompts.py (one run
    and a CSV copy store "no" for one of them): the stored value is kept, as the publisher's analysis does."""
    differ = Counter(r.name for r in rows if r.name in defined and defined[r.name] != r.appropriate_answer)
    for name, n in sorted(differ.items()):
        report.add(RowProblem(rel, -1, "verification_correct", f"{n} rows of {name!r} store another answer than "
                              f"{PROMPTS_FILE}", "kept as stored (the publisher's figures use it)"))


COMBINED_CHECK = "the check of the per-run figures against the publisher's all_combined.csv is not made"


def read_combined(root: Path, report: RowReport) -> list[dict[str, Any]] | None:
    """The publisher's all_combined.csv as rows {participant_type, condition, name, appropriate (their
    correct_response), recomputed (from the answer column that file's rows carry)}, or None when absent."""
    path = root / COMBINED_FILE
    if not present(path):
        report.missing_file(COMBINED_FILE, "absent", COMBINED_CHECK)
        return None
    raw = _read_csv(path)
    if not raw:
        report.missing_file(COMBINED_FILE, "empty or only a header", COMBINED_CHECK)
        return None
    out = []
    for i, r in enumerate(raw):
        who = text_of(r.get("participant_type"))
        who = " ".join(who.split()) if who else None  # "CharacterAI\nTherapist" -> one line
        stored = (r.get("correct_response") or "").strip()
        if who is None or stored not in ("True", "False"):
            report.add(RowProblem(COMBINED_FILE, i, "participant_type/correct_response", "missing or not True/False",
                                  "skipped"))
            continue
        correct = answer_of(r.get("verification_correct"))
        if correct is None:
            report.add(RowProblem(COMBINED_FILE, i, "verification_correct", f"not yes/no ({r.get('verification_correct')!r})",
                                  "stored value kept; not recomputed"))
        answer = answer_of(r.get(f"{GPT4O}_classification")) if who != HUMAN_THERAPIST_MODEL and \
            _missing(r.get("human_classification")) else answer_of(r.get("human_classification"))
        out.append({"participant_type": who, "condition": text_of(r.get("condition")),
                    "appropriate": stored == "True",
                    "recomputed": correct is not None and answer == correct})
    return out


# ----------------------------------------------------------------- the annotated replies (a reference)


@dataclass(frozen=True)
class AnnotatedReply:
    key: str
    condition: str
    name: str
    messages: tuple[str, ...]
    question: str | None
    appropriate_answer: str
    reply: str
    humans: dict[str, int | None]  # annotator -> 1 not appropriate, 0 appropriate, None no answer
    published_judge: str | None  # GPT-4o's answer in the same file


def validation_path(root: Path) -> Path:
    found = sorted((root / RESULTS_DIR).glob(f"*/{VALIDATION_FILE}"))
    if not found:
        raise TrustmhError(f"{root}: no {RESULTS_DIR}/<run>/{VALIDATION_FILE} (the publisher's annotated replies)")
    return found[0]


def annotated_replies(root: Path, report: RowReport) -> tuple[list[AnnotatedReply], list[Path]]:
    """The replies of classification_validation.csv at least one annotator answered, and the files read (for
    the reference's checksum). The interjection's messages and question come from interjection_prompts.py
    when present (the file's own copy otherwise)."""
    path = validation_path(root)
    rel = path.relative_to(root).as_posix()
    vfile = read_result_file(path, rel, report)
    if vfile is None or not set(ANNOTATORS) <= set(vfile.raters):
        absent = [f"{a}_classification" for a in ANNOTATORS if vfile is None or a not in vfile.raters]
        raise TrustmhError(f"{path}: no column {' or '.join(absent)} (the annotators' answers; a renamed column "
                           "is not guessed)")
    files = [path]
    defined = {}
    if present(prompts := root / PROMPTS_FILE):
        defined = {i.name: i for i in load_interjections(prompts)}
        files.append(prompts)
    judge = next((r for r in vfile.raters if r not in ANNOTATORS), GPT4O)
    out = []
    for r in vfile.rows:
        humans = {a: None if r.answers.get(a) is None else int(not r.appropriate(a)) for a in ANNOTATORS}
        if all(v is None for v in humans.values()):
            continue
        if r.reply is None:
            report.add(RowProblem(rel, r.index, "model_response", "missing on an annotated row", "skipped"))
            continue
        spec = defined.get(r.name)
        out.append(AnnotatedReply(key=r.key, condition=r.condition, name=r.name,
                                  messages=spec.messages if spec else r.messages, question=spec.question if spec else None,
                                  appropriate_answer=r.appropriate_answer, reply=r.reply, humans=humans,
                                  published_judge=r.answers.get(judge)))
    if not out:
        raise TrustmhError(f"{path}: no annotated reply")
    return out, files


def reference_root(given: str | Path | None) -> Path:
    """The publisher's repository folder: a local copy when given, else the copy in TRUSTMH_PUBLISHERS_DIR, else
    the data registry's pinned files (the annotated replies and the prompts, from TRUSTMH_DATA_DIR, the cache or a
    verified download)."""
    if not given and (copy := publishers_copy(DATASET)) is not None:
        return copy
    if given:
        root = Path(given).expanduser()
        typed = as_typed(get_dataset(DATASET).option, given)  # `--reference-path X` or `-O moore_dir=X`, as the user wrote it
        if not root.is_dir():
            raise TrustmhError(f"{typed}: not a directory (a copy of github.com/{REPO})")
        if not sorted((root / RESULTS_DIR).glob(f"*/{VALIDATION_FILE}")):
            raise TrustmhError(f"{typed}: no {RESULTS_DIR}/<run>/{VALIDATION_FILE} there (the publisher's "
                               f"annotated replies; expected a copy of github.com/{REPO})")
        return root
    rels = [f.relpath for f in get_dataset(DATASET).files if f.relpath.endswith(VALIDATION_FILE)]
    paths = [registered_file(DATASET, rel, "--reference-path DIR") for rel in [*rels, f"{DATA_ROOT}/{PROMPTS_FILE}"]]
    return paths[-1].parent
