"""Golden results: the renovation of the package layout (issue 20) must not move a single figure.

Two runs were recorded before the renovation, at b4d5a3b, and are compared field by field (minus the
`created` timestamp and the `usage` bookkeeping): the offline demo (`trustmh run` with the bundled model on
the starter suite) and a
canned multi-pillar run of the starter suite against the loopback OpenAI-compatible server, whose replies
are a fixed function of the prompt. The only edit to the recorded files: notes that cited the design
documents outside the repository (`PILLARS.md §…`) now cite the docs site, as the code does. Numbers are
compared to 1e-12: the renovation put every κ through one function (`stats.agreement.cohen_kappa`), whose
summation order differs from some of the copies it replaced in the last bit.
Regenerate (only for a change that is meant to move figures) with `TRUSTMH_REGENERATE_GOLDEN=1`.

History: both files equalled the b4d5a3b runs at 3012064, the renovation's end (checked again on 2026-11-26).
They were regenerated on 2026-11-26 for changes meant to move them: the product probe sub-tasks, judge
fingerprints, usage and plan blocks, patient-honesty figures and the severity counts the gate reads (all
additions); the escalation's human-rated items now matched to the study's sampled answers as its own analysis
does (issue 22) and its judge prompt reordered for prefix caching (issue 25), which change which items the
canned judge reads and what it replies, so the escalation's invalid count and categories; and, for the demo,
the bundled model's new runtime (llama.cpp's server, issue 26), then its Q4_0 copy of the weights (issue 26,
afternoon; the prompt cache moved nothing: two runs, one regenerating this file, gave the same results), then
its judge's JSON written with fixed separators and no indentation (issue 26, evening: the judge's replies
change, so its scores). Regenerated on 2026-11-27 for the wave of issues 31-36: four sub-tasks added
(`clinical/siri2`, `fairness/stigma` and `crisis/interjections`, not computed offline with their reasons;
`conversation/harm_to_others` on its starter set), the AI-disclosure probe's first-reply and late figures,
the simulated patients' realism block (not computed without MindEval's turns), the one wording for a judge
without a certificate, the Clinical pillar in the overall count, and the plan's batch and discount blocks.
No value of an existing sub-task moved. Regenerated on 2026-11-27 for the wave of issues 39-44, for changes meant
to move figures: every conversation interval clusters on its stimulus with an exact bound on the effective n
(issue 41: [0, 0] on two items becomes [0, 0.84]); a sub-task whose every rating is invalid is not computed
(issue 42: the demo's crisis identification, ethics, emotion, knowledge and diagnosis; the canned run's
conversation probes, emotion, diagnosis and AITA); robustness retention above 1 is a floor effect, not computed
(issue 42); the keyword floor beside every conversation figure and the sets' new counts (issue 40). The canned
run regenerated on 2026-11-27 for issue 44 (every judged run re-judges its anchor items, certified or not):
`judge.anchors` added to its twelve judged single-turn sub-tasks and the plan block's calls, tokens and wall
times grew by the anchors' calls; no value, interval or count of any sub-task moved. The demo file was
regenerated after it: the demo leaves the anchors out (`-O anchors=0`), and `options.anchors = 0` is its only
change.

When the golden runs run (issue 48): the offline demo takes about four minutes and the canned run one or two, so
each is re-run only when what it depends on has changed. `demo_inputs.json` beside `demo_results.json`, and
`canned_inputs.json` beside `canned_results.json`, hold the sha256 of everything the run read when its golden file
was last written (`tests/support/demo_inputs.py`: every `trustmh` module it imported or file it opened, every
non-Python file of the package and the names of all its files, the data files it opened, the checkout's test
modules it imported (the recorder, the loopback server, the canned replies in `canned_golden.py`), the versions of
the distributions it imported, Python, pyproject's pins; for the demo also llama.cpp's wheel and the model file)
and of the golden file itself. When every input hashes as recorded, the run cannot give other figures, so the test
checks only that the golden file is the one recorded with those inputs; when any input differs (or the record is
missing), it runs the run, in a process of its own, and compares as before, with a warning naming the inputs that
changed. `TRUSTMH_REGENERATE_GOLDEN=1` always runs both and writes the golden files and their records: after a
change the digest covers that moves no figure, regenerating leaves the results files as they were and refreshes
the records.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import demo_inputs
from trustmh.digest import sha256_file

GOLDEN = Path(__file__).parent
# each golden run: its results file and, beside it, its inputs when that file was written
# ({"results_sha256", "digest", "inputs": {name: sha256}})
RUNS = {"demo": (GOLDEN / "demo_results.json", GOLDEN / "demo_inputs.json"),
        "canned": (GOLDEN / "canned_results.json", GOLDEN / "canned_inputs.json")}
# `usage` counts calls answered from the response cache, which depends on which of two identical concurrent
# requests finishes first: bookkeeping, not a figure.
VOLATILE = ("created", "usage")
def comparable(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in VOLATILE:
        data.pop(key, None)
    return data


def same(got: Any, want: Any) -> bool:
    """Equal, with floats equal to 1e-12 (absolute or relative)."""
    if isinstance(want, float) and isinstance(got, int | float) and not isinstance(got, bool):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(want, dict) and isinstance(got, dict):
        return set(got) == set(want) and all(same(got[k], want[k]) for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want, strict=True))
    return got == want


def check_against_golden(results: Path, golden: Path) -> None:
    got = comparable(results)
    if os.environ.get("TRUSTMH_REGENERATE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert set(got) == set(want), "the same top-level fields"
    for key in sorted(want):
        assert same(got[key], want[key]), f"results.json field {key!r} differs from the golden run"


def _stored_inputs(record_file: Path) -> dict[str, Any] | None:
    """The record beside a golden file whose every input still hashes as recorded; None when any differs (with a
    warning naming them, so that a CI log says why the run was run)."""
    if os.environ.get("TRUSTMH_REGENERATE_GOLDEN"):
        return None
    if not record_file.is_file():
        warnings.warn(f"{record_file.name}: no record, the golden run is run", stacklevel=2)
        return None
    stored = json.loads(record_file.read_text(encoding="utf-8"))
    moved = demo_inputs.changed(stored["inputs"])
    if moved:
        warnings.warn(f"{record_file.name}: {len(moved)} inputs changed, the golden run is run: "
                      + ", ".join(moved[:20]) + (" ..." if len(moved) > 20 else ""), stacklevel=2)
        return None
    return stored


def check_golden_run(run: str, tmp_path: Path) -> None:
    golden, record_file = RUNS[run]
    stored = _stored_inputs(record_file)
    if stored is not None:  # nothing the run reads has changed: the golden file must be the one it wrote
        assert stored["digest"] == demo_inputs.digest(stored["inputs"]), f"{record_file.name}: digest of its inputs"
        assert stored["results_sha256"] == sha256_file(golden), \
            f"{golden.name} differs from the file recorded with these inputs in {record_file.name}"
        return
    out, record = tmp_path / run, tmp_path / "record.json"
    proc = subprocess.run([sys.executable, str(Path(demo_inputs.__file__).with_name("record_demo.py")), run,
                           str(out), str(record)],
                          capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    check_against_golden(out / "results.json", golden)
    if os.environ.get("TRUSTMH_REGENERATE_GOLDEN"):
        inputs = demo_inputs.inputs_of(json.loads(record.read_text(encoding="utf-8")), bundled_model=run == "demo")
        record_file.write_text(json.dumps({"results_sha256": sha256_file(golden),
                                           "digest": demo_inputs.digest(inputs), "inputs": inputs},
                                          indent=1, sort_keys=True) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_offline_demo_results_are_unchanged(tmp_path: Path) -> None:
    check_golden_run("demo", tmp_path)


@pytest.mark.slow
def test_canned_multi_pillar_run_results_are_unchanged(tmp_path: Path) -> None:
    check_golden_run("canned", tmp_path)
