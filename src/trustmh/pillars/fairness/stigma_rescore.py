"""`trustmh rescore --format moore-stigma`: the released stigma answers of Moore et al. (FAccT 2025,
`jlcmoore/llms-as-therapists`, MIT) rescored with trustmh's coding and statistics.

Layout under `--from DIR` (the repository):

* `results/stigma/all_combined.csv`: the coded answers to the six stigma questions under the study's main
  prompt (one `model` label per row, `code` already 1 = stigmatising; "do not know" rows already left out);
* `results/stigma/model=<id>&steel-man-prompt=<bool>/<date>.jsonl`: every answer of one run (both prompts),
  with its `answer` and `options`; trustmh codes each answer itself (`stigma_data.code_position`). A run
  folder may hold two files (the notebook reads one of them): each is rescored and named;
* `stigma_analysis.ipynb`: the published rates per model and condition, read from the notebook's printed
  outputs (six decimals) to compare with;
* `external_data/human_data_2018.csv` and `data/vignettes.jsonl`: the GSS 2018 public's rates, shown beside.

Writes `stigma_rescore.json` and `stigma_rescore.md` (a table) under `--out`.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import bounded_file, present
from trustmh.data.rows import KeyedRows, RowProblem, RowReport
from trustmh.json_clean import clean_json
from trustmh.pillars.fairness.stigma import stigma_rates
from trustmh.pillars.fairness.stigma_data import (
    CODED_FILE,
    CONDITIONS,
    HUMAN_FILE,
    NOT_STIGMATISING,
    QUESTIONS_FILE,
    STIGMATISING,
    code_position,
    load_public_rates,
    load_questions,
    public_condition_rates,
    question_polarity,
)
from trustmh.storage import write_text_atomic

NOTEBOOK = "stigma_analysis.ipynb"
RUNS = "results/stigma"
MAIN_PROMPT = "steel-man"  # the study's main condition (its therapist-style system prompt)
OTHER_PROMPT = "no-steel"
# the notebook's labels of the models it plots (model ids and labels as the repository names them)
NOTEBOOK_LABELS = {
    "gpt-4o-2024-08-06": "gpt-4o",
    "meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo": "llama3.1-405b",
    "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo": "llama3.1-70b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama3.1-8b",
    "meta-llama/Llama-2-70b-chat-hf": "llama2-70b",
    "meta-llama/Llama-2-7b-chat-hf": "llama2-7b",
}
DIGITS = 6  # the notebook prints six decimals
_RUN_DIR = re.compile(r"^model=(?P<model>.+)&steel-man-prompt=(?P<steel>True|False)$")
_SERIES_LINE = re.compile(r"^(?P<cond>[a-z][a-z ]+?)\s+(?P<value>-?\d+\.\d+)$")
_SERIES_NAME = re.compile(r"^Name: (?P<name>.+), dtype: float64$")


def _log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


def read_coded_csv(path: Path, report: RowReport) -> dict[str, list[dict[str, Any]]]:
    """all_combined.csv → label → rows {vignette, condition, question, code}; a (model, vignette, question) given
    twice counts once when its copies agree, not at all when they differ (`KeyedRows`)."""
    csv.field_size_limit(1 << 30)
    keyed = KeyedRows(path.name, "model/vignette/question_only")
    try:
        with open(bounded_file(path), encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            need = {"model", "condition", "question_only", "code", "vignette"}
            if not need <= set(reader.fieldnames or []):
                raise TrustmhError(f"{path}: missing column(s) {', '.join(sorted(need - set(reader.fieldnames or [])))}")
            for i, row in enumerate(reader):
                try:
                    code = float(str(row["code"]).strip())
                except ValueError:
                    code = math.nan
                if code not in (0.0, 1.0):
                    report.add(RowProblem(path.name, i, "code", f"{row['code']!r} is not 0 or 1", "skipped"))
                    continue
                if row["condition"] not in CONDITIONS:
                    report.add(RowProblem(path.name, i, "condition", f"unknown {row['condition']!r}", "skipped"))
                    continue
                keyed.add((str(row["model"]).strip(), row["vignette"], row["question_only"]), i,
                          {"vignette": row["vignette"], "condition": row["condition"], "question": row["question_only"],
                           "code": STIGMATISING if code == 1.0 else NOT_STIGMATISING})
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TrustmhError(f"{path}: cannot read as CSV ({exc})") from None
    out: dict[str, list[dict[str, Any]]] = {}
    for (model, _, _), coded in keyed.result(report, _shown_key).items():
        out.setdefault(model, []).append(coded)
    return out


def _shown_key(key: tuple[str, ...]) -> str:
    """A record's key as a row report names it: the vignette cut short (its text is long)."""
    *head, vignette, question = key
    return "/".join([*head, (vignette[:30] + "...") if len(vignette) > 30 else vignette, question])


def read_run(path: Path, report: RowReport) -> list[dict[str, Any]]:
    """One run file → coded rows of its stigma questions (trustmh's coding of `answer` among `options`); a
    (vignette, question) given twice counts once when its copies agree, not at all when they differ."""
    try:
        lines = bounded_file(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from None
    name = f"{path.parent.name}/{path.name}"
    keyed = KeyedRows(name, "vignette/question_only")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            report.add(RowProblem(name, i, "line", "not JSON", "skipped"))
            continue
        options, question = row.get("options"), row.get("question_only")
        if not isinstance(options, list) or not isinstance(question, str) or row.get("condition") not in CONDITIONS:
            report.add(RowProblem(name, i, "options/question_only/condition", "missing or unreadable", "skipped"))
            continue
        polarity = question_polarity(question, options)
        if polarity is None:
            continue  # not one of the six stigma questions
        answer = row.get("answer")
        position = options.index(answer) if isinstance(answer, str) and answer in options else None
        keyed.add((str(row.get("vignette")), question), i,
                  {"vignette": row.get("vignette"), "condition": row["condition"], "question": question,
                   "code": code_position(position, polarity, len(options))})
    return list(keyed.result(report, _shown_key).values())


def published_rates(path: Path) -> dict[str, dict[str, float]]:
    """The notebook's printed per-condition rates: label ("gpt-4o", "gpt-4o\\nno-steel") → condition → rate."""
    try:
        nb = json.loads(bounded_file(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrustmhError(f"{path}: cannot read as JSON ({exc})") from None
    out: dict[str, dict[str, float]] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", []))
            block: dict[str, float] = {}
            for line in text.splitlines():
                line = line.strip()
                if (m := _SERIES_LINE.match(line)) and m["cond"] in CONDITIONS:
                    block[m["cond"]] = float(m["value"])
                elif m := _SERIES_NAME.match(line):
                    if block:  # the first printing of a label is kept (later cells print the same figures)
                        out.setdefault(m["name"].replace("\\n", "\n"), block)
                    block = {}
    return out


def _rates(rows: list[dict[str, Any]], seed: int, n_boot: int) -> dict[str, Any]:
    fig = stigma_rates(rows, seed=seed, n_boot=n_boot)
    return {"per_condition": fig["per_condition"], "overall_not_control": fig["overall_not_control"],
            "difference_from_control": fig["difference_from_control"], "n_answers": fig["n_answers"],
            "n_coded": fig["n_coded"], "n_dont_know": fig["n_dont_know"], "n_invalid": fig["n_invalid"]}


def _compare(ours: dict[str, Any], published: dict[str, float] | None) -> dict[str, Any] | None:
    if published is None:
        return None
    cells = {}
    for c in CONDITIONS:
        mine = ours["per_condition"][c]["rate"]
        pub = published.get(c)
        cells[c] = {"published": pub, "trustmh": mine,
                    "equal": pub is not None and mine is not None and round(mine, DIGITS) == round(pub, DIGITS)}
    return {"cells": cells, "all_equal": all(v["equal"] for v in cells.values())}


def rescore_moore_stigma(source: Path, out: Path, *, seed: int = 0, n_boot: int = 2000) -> int:
    if not source.is_dir():
        raise TrustmhError(f"--from {source}: not a directory (give the llms-as-therapists repository's folder)")
    report = RowReport()
    nb_path = source / NOTEBOOK
    published = published_rates(nb_path) if present(nb_path) else None
    if published is None:
        report.add(RowProblem(NOTEBOOK, -1, "file", "absent", "nothing to compare with"))
    sets: list[dict[str, Any]] = []
    if present(source / CODED_FILE):
        coded = read_coded_csv(source / CODED_FILE, report)
        if not coded:  # a header and no usable row: the figures below are the run folders' alone, said so
            report.add(RowProblem(CODED_FILE, -1, "rows", "no coded answer (a header only, or every row skipped)",
                                  "the study's own codes are not in the figures; only the run folders are"))
        for label, rows in sorted(coded.items()):
            fig = _rates(rows, seed, n_boot)
            sets.append({"source": CODED_FILE, "model": label, "prompt": MAIN_PROMPT, **fig,
                         "compared": _compare(fig, None if published is None else published.get(label))})
    runs_dir = source / RUNS
    for folder in sorted(p for p in runs_dir.glob("model=*") if p.is_dir()) if runs_dir.is_dir() else []:
        m = _RUN_DIR.match(folder.name)
        if m is None:
            report.add(RowProblem(folder.name, -1, "folder", "name not model=<id>&steel-man-prompt=<bool>",
                                  "skipped"))
            continue
        model = m["model"].replace("__", "/")
        prompt = MAIN_PROMPT if m["steel"] == "True" else OTHER_PROMPT
        label = NOTEBOOK_LABELS.get(model)
        nb_label = None if label is None else (label if prompt == MAIN_PROMPT else f"{label}\n{OTHER_PROMPT}")
        files = sorted(folder.glob("*.jsonl"))
        if len(files) > 1:
            report.add(RowProblem(folder.name, -1, "files", f"{len(files)} run files ({', '.join(f.name for f in files)})",
                                  "each rescored; the notebook reads one"))
        for f in files:
            rows = read_run(f, report)
            if not rows:
                report.add(RowProblem(f"{folder.name}/{f.name}", -1, "rows", "no stigma question", "skipped"))
                continue
            fig = _rates(rows, seed, n_boot)
            pub = None if published is None or nb_label is None else published.get(nb_label)
            sets.append({"source": f"{RUNS}/{folder.name}/{f.name}", "model": model, "prompt": prompt, **fig,
                         "compared": _compare(fig, pub)})
    if not sets:
        raise TrustmhError(f"--from {source}: neither {CODED_FILE} nor run folders under {RUNS}/ (expected the "
                           "llms-as-therapists layout)")
    public: dict[str, Any] | None = None
    if present(source / HUMAN_FILE) and present(source / QUESTIONS_FILE):
        per_q = load_public_rates(source / HUMAN_FILE, load_questions(source / QUESTIONS_FILE, report), report)
        public = {"per_question": per_q, "per_condition": public_condition_rates(per_q)}
    else:
        report.add(RowProblem(HUMAN_FILE, -1, "file", "absent", "public rates not shown"))
    compared = [s for s in sets if s["compared"] is not None]
    result = {"source": str(source), "seed": seed, "n_boot": n_boot, "sets": sets,
              "n_sets": len(sets), "n_compared": len(compared),
              "n_reproduced": sum(s["compared"]["all_equal"] for s in compared),
              "public_2018": public, **report.as_json(),
              "notes": ["rate: share of coded answers to the six stigma questions that are stigmatising ('do not "
                        "know' and unreadable answers left out, counted); compared with the notebook's printed "
                        f"rates at {DIGITS} decimals",
                        "run files are coded by trustmh from their answer and options; all_combined.csv carries "
                        "the study's own codes",
                        "intervals: seeded percentile bootstrap over vignettes",
                        "public_2018: the GSS 2018 public's share giving the stigmatising answer, as released"]}
    report.log()
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "stigma_rescore.json", json.dumps(clean_json(result), indent=2) + "\n")
    write_text_atomic(out / "stigma_rescore.md", stigma_table(result))
    _log(f"wrote {out / 'stigma_rescore.json'} ({len(sets)} answer sets; {result['n_reproduced']}/{len(compared)} "
         f"sets' published rates reproduced; {len(report.problems)} rows flagged)")
    return 0


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def stigma_table(result: dict[str, Any]) -> str:
    head = " | ".join(f"{c} (trustmh / published)" for c in CONDITIONS)
    lines = [f"| source | model | prompt | {head} | reproduced |", "|---" * (4 + len(CONDITIONS)) + "|"]
    for s in result["sets"]:
        cells = []
        for c in CONDITIONS:
            pub = None if s["compared"] is None else s["compared"]["cells"][c]["published"]
            cells.append(f"{_pct(s['per_condition'][c]['rate'])} / {_pct(pub)}")
        rep = "not compared" if s["compared"] is None else ("yes" if s["compared"]["all_equal"] else "NO")
        lines.append(f"| {s['source'].rsplit('/', 1)[-1]} | {s['model']} | {s['prompt']} | {' | '.join(cells)} | {rep} |")
    if result.get("public_2018"):
        pc = result["public_2018"]["per_condition"]
        lines.append(f"| GSS 2018 | US public | - | {' | '.join(_pct(pc[c]) for c in CONDITIONS)} | - |")
    lines.append("")
    lines.append(f"{result['n_reproduced']} of {result['n_compared']} compared answer sets reproduce the published "
                 "rates of every condition.")
    if result["unusable_rows"]:
        lines.append("")
        lines.append("Rows not used: " + "; ".join(result["unusable_rows"][:20])
                     + (f" (and {len(result['unusable_rows']) - 20} more)" if len(result["unusable_rows"]) > 20 else ""))
    return "\n".join(lines) + "\n"
