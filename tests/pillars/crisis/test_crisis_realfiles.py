"""The crisis study's files as they really are (issue 22): readers that survive them, the study's pairing rule,
its appropriateness table and its labelling analysis, against hand-computed figures.

Every fixture here is synthetic (invented text). Each reproduces a quirk found in the study's real files
(ellisalicante/LLMs-Mental-Health-Crisis @ f4a70c1fd4ea6f7e09d50721065db4a4039e9fac; rows 0-based in the JSON
list):

* NaN answer ............ data/human_label/H2_scores_n206_s42.json row 21 (H1 has the text)      -> H2 row 2
* formula residue ....... H2_scores row 22 answer "T+D24+B24", row 45 inputs "T+D47+A47"          -> H2 rows 5, 3
* integer for text ...... H2_scores row 42 answer 5                                               -> H2 row 4
* raters' copies differ . H1_scores row 22: the sampled answer plus a stray trailing "5"           -> H1 row 4
* CRLF .................. data/llm_evaluator/sampled/sampled_lowest_scores_n200.json row 124 answer
                          has CRLF, the H1/H2 copies LF (15 merged judge rows hold CRLF answers)   -> reference row 1
* list vs joined inputs . sampled / merged / label files: `inputs` a list of turns; H*_scores: the
                          turns joined by " | "                                                   -> every file
* NaN rating and label .. H1/H2_scores rows 5, 8, 27, 79, ... (16 rows; the sampled row has
                          evaluation null)                                                        -> row 5
* same answer twice ..... merged judge files: 16 repeats per judge, some with another score (the
                          study keeps the first in sorted file order)                             -> judge-a row 2
* error object as answer  data/llm_evaluator/*/n_200/merged/*gpt-5-nano-answers*-174234_merged.json
                          and -180602 row 104: `answer` is the API's error object (a dict)         -> judge-a file 2
* "" label .............. LLM label runs (gpt-4o-mini 0/1/2 rows, gpt-5-nano 1/0/0, Llama-4-Scout
                          7/6/10)                                                                 -> llm-a#1, llm-b#2
* 5-annotator majority .. the merged human label file's `label` is the plurality of five labels
                          (null on a tie, 16 rows); the four published annotators tie on 28 rows  -> items 4, 5
* file name spelling .... H4_labelled_n206_s42.json beside H1-H3 `_labeled_`                       -> H4

`test_real_crisis_*` run on a local copy of that repository when TRUSTMH_CRISIS_REPO points at it, or
TRUSTMH_REFS_DIR holds it as ellisalicante+LLMs-Mental-Health-Crisis (the data is never committed), and check
the study's published figures and its raters' agreement under the reference-quality rule.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from crisis_canned import FIX
from trustmh.core import JudgeInfo, RunContext, TrustmhError
from trustmh.data.rows import RowReport, item_key, match_rows, text_problem
from trustmh.offline import run_offline
from trustmh.pillars.crisis.data import CRISIS_FILES, load_human_scores, load_rater_pair
from trustmh.pillars.crisis.escalation import CrisisEscalation
from trustmh.pillars.crisis.rescore import rescore_crisis
from trustmh.stats.agreement import cohen_kappa, fleiss_kappa, ratings_to_table
from trustmh.stats.classification import majority_label

NAN = float("nan")
SI, SH, AC, NC, VT = "suicidal_ideation", "self-harm", "anxiety_crisis", "no_crisis", "violent_thoughts"

# ------------------------------------------------------------------------------------------ the fixture

REFERENCE = [  # the sampled answers: list inputs, one CRLF answer, one unrated row
    {"inputs": ["<syn: a0>", "<syn: b0>"], "answer": "<syn: answer zero>", "label": SI},
    {"inputs": ["<syn: t1>"], "answer": "<syn: answer one>\r\n\r\n<syn: more>", "label": SH},
    {"inputs": ["<syn: t2>"], "answer": "<syn: answer two>", "label": AC},
    {"inputs": ["<syn: t3>"], "answer": "<syn: answer three>", "label": NC},
    {"inputs": ["<syn: t4>"], "answer": "<syn: answer four>", "label": VT},
    {"inputs": ["<syn: t5>"], "answer": "<syn: answer five>", "label": None, "evaluation": None},
]


def joined(j: int) -> str:
    return " | ".join(REFERENCE[j]["inputs"])


def lf(j: int) -> str:
    return REFERENCE[j]["answer"].replace("\r\n", "\n")


H1 = [  # joined inputs, LF answers; row 4 is a copy with a stray trailing character
    {"inputs": joined(0), "answer": lf(0), "label": SI, "evaluation": 5},
    {"inputs": joined(1), "answer": lf(1), "label": SH, "evaluation": 3},
    {"inputs": joined(2), "answer": lf(2), "label": AC, "evaluation": 2},
    {"inputs": joined(3), "answer": lf(3), "label": NC, "evaluation": 4},
    {"inputs": joined(4), "answer": lf(4) + "5", "label": VT, "evaluation": 1},
    {"inputs": joined(5), "answer": lf(5), "label": NAN, "evaluation": NAN},
]
H2 = [  # NaN answer, formula residue in inputs and answer, an integer answer
    {"inputs": joined(0), "answer": lf(0), "label": SI, "evaluation": 4},
    {"inputs": joined(1), "answer": lf(1), "label": SH, "evaluation": 3},
    {"inputs": joined(2), "answer": NAN, "label": AC, "evaluation": 3},
    {"inputs": "T+D47+A47", "answer": lf(3), "label": NC, "evaluation": 5},
    {"inputs": joined(4), "answer": 5, "label": VT, "evaluation": 2},
    {"inputs": joined(5), "answer": "T+D24+B24", "label": NAN, "evaluation": NAN},
]
H1_COL = [5, 3, 2, 4, 1, None]
H2_COL = [4, 3, 3, 5, 2, None]

# judge-a: 4.667 (a mean of three runs), 3, 2, 2, 1; its second file repeats answer 2 with another score and
# holds an API error object as an answer. judge-b did not score answer 4.
JUDGE_A_1 = [4.666666666666667, 3.0, 2.0, 2.0, 1.0]
JUDGE_B = [4.0, 2.0, 2.5, 5.0]
A_COL = [*JUDGE_A_1, None]
B_COL = [*JUDGE_B, None, None]
JURY_COL = [(4.666666666666667 + 4) / 2, 2.5, 2.25, 3.5, 1.0, None]


def merged_row(j: int, score: float, answer: object = None) -> dict:
    ref = REFERENCE[j]
    return {"inputs": ref["inputs"], "label": ref["label"], "dataset_id": "syn", "answer":
            ref["answer"] if answer is None else answer, "refusal": False, "evaluation": score,
            "explanation": "<syn>", "evals": [score] * 3, "evaluation_std": 0.0}


# labelling: 6 conversations, four annotators, two LLMs with two runs each
HUMAN_LABELS = {
    "H1_labeled": [SI, SH, AC, NC, NC, AC],
    "H2_labeled": [SI, SH, AC, NC, AC, NC],
    "H3_labeled": [SI, SI, AC, NC, NC, AC],
    "H4_labelled": [SI, SH, NC, NC, AC, NC],  # the real spelling of H4's file name
}
LLM_LABELS = {
    "llm-a-labeled-sampled_dataset_n_200_syn-s42-20250101-000001": [SI, SH, AC, NC, NC, ""],
    "llm-a-labeled-sampled_dataset_n_200_syn-s42-20250101-000002": [SI, SH, AC, NC, NC, AC],
    "llm-b-labeled-sampled_dataset_n_200_syn-s42-20250101-000003": [SI, SI, NC, NC, AC, NC],
    "llm-b-labeled-sampled_dataset_n_200_syn-s42-20250101-000004": [SI, SH, NC, "", AC, NC],
}
MERGED_GOLD = [SI, SH, AC, NC, None, AC]  # the five-annotator plurality: item 4 tied


def dump(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")  # writes NaN bare, like the study's files


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "crisis-repo"
    dump(root / "data/llm_evaluator/sampled/sampled_lowest_scores_n200.json",
         [{**r, "evaluation": r.get("evaluation", 3.0)} for r in REFERENCE])
    a = root / "data/llm_evaluator/judge-a/n_200/merged"
    dump(a / "judge-a-evaluation_m1-answers-syn-20250101-000001_merged.json",
         [merged_row(j, s) for j, s in enumerate(JUDGE_A_1)])
    dump(a / "judge-a-evaluation_m2-answers-syn-20250101-000002_merged.json",
         [merged_row(2, 4.0), merged_row(3, 2.0, answer={"message": "<syn: invalid prompt>", "code": "x"})])
    dump(root / "data/llm_evaluator/judge-b/n_200/merged/judge-b-evaluation_m1-answers-syn-20250101-000003_merged.json",
         [merged_row(j, s) for j, s in enumerate(JUDGE_B)])
    dump(root / "data/human_label/H1_scores_n206_s42.json", H1)
    dump(root / "data/human_label/H2_scores_n206_s42.json", H2)
    conv = [{"inputs": r["inputs"], "dataset_id": "syn"} for r in REFERENCE]
    dump(root / "data/human_label/human-labeled-sampled_dataset_n206_s42-merged_labels.json",
         [{**c, "label": g, "all_labels": []} for c, g in zip(conv, MERGED_GOLD, strict=True)])
    for name, labels in HUMAN_LABELS.items():
        dump(root / f"data/human_label/{name}_n206_s42.json",
             [{**c, "label": lab} for c, lab in zip(conv, labels, strict=True)])
    for name, labels in LLM_LABELS.items():
        dump(root / f"data/llm_label/{name}.json", [{**c, "label": lab} for c, lab in zip(conv, labels, strict=True)])
    # the merged file of one LLM's runs is not a run of its own
    dump(root / "data/llm_label/llm-a-labeled-sampled_dataset_n_200_syn-s42-merged_labels.json",
         [{**c, "label": SI} for c in conv])
    return root


def rescore(repo: Path, tmp_path: Path) -> dict:
    assert rescore_crisis(repo, tmp_path / "out", seed=1, n_boot=50) == 0
    return json.loads((tmp_path / "out" / "crisis_rescore.json").read_text(encoding="utf-8"))


EXPECTED_PROBLEMS = [
    "H1_scores_n206_s42.json row 4: answer differs from the reference copy; matched by position",
    "H2_scores_n206_s42.json row 2: answer missing; matched by position",
    "H2_scores_n206_s42.json row 3: inputs formula residue ('T+D47+A47'); matched by position",
    "H2_scores_n206_s42.json row 4: answer non-string (int 5); matched by position",
    "H2_scores_n206_s42.json row 5: answer formula residue ('T+D24+B24'); matched by position",
]

# --------------------------------------------------------------------------------------- cell checks


@pytest.mark.parametrize(("value", "expected"), [
    ("some text", None),
    (NAN, "missing"),
    (None, "missing"),
    (5, "non-string (int 5)"),
    ("   ", "empty"),
    ("T+D24+B24", "formula residue ('T+D24+B24')"),
    ("=A1&B2", "formula residue ('=A1&B2')"),
    ("=CONCAT(A1,B1)", "formula residue ('=CONCAT(A1,B1)')"),
    ("A+B", None),  # no row number: not a cell reference
    ("I feel 2+2 is 4", None),
])
def test_text_problem(value: object, expected: str | None) -> None:
    assert text_problem(value) == expected


def test_keys_map_crlf_whitespace_and_joined_turns() -> None:
    assert item_key(REFERENCE[1]["inputs"], REFERENCE[1]["answer"]) == item_key(joined(1), lf(1))
    assert item_key(["x", " y\r\n"], "a") == item_key("x | y", "a")
    assert item_key("T+D47+A47", "a") is None
    assert item_key(["x"], NAN) is None


def test_match_rows_by_key_then_position_naming_each_quirk() -> None:
    m = match_rows(REFERENCE, H2, file="H2.json")
    assert m.ref_of == [0, 1, 2, 3, 4, 5]
    assert (m.by_key, m.by_position, m.unmatched) == (2, 4, 0)
    reordered = match_rows(REFERENCE, [H1[3], H1[0]], file="h.json")
    assert reordered.ref_of == [3, 0]  # a reordered file is matched on the key, not the position
    other = match_rows(REFERENCE, [{"inputs": "<syn: other>", "answer": "<syn: other>"}] + H1[1:], file="h.json")
    assert other.ref_of[0] is None  # both fields usable and both differ: never paired by position
    assert str(other.problems[0]) == "h.json row 0: row no reference row with this conversation and answer; skipped"


# -------------------------------------------------------------------------------------- human scores


def test_human_scores_read_as_published(repo: Path) -> None:
    report = RowReport()
    rows = load_human_scores(repo / "data/human_label/H2_scores_n206_s42.json", report)
    assert [r["evaluation"] for r in rows] == H2_COL  # every rating kept, whatever the text cells hold
    assert [r["answer"] is None for r in rows] == [False, False, True, False, True, True]
    assert rows[3]["utterances"] is None
    assert len(report.problems) == 4


def test_rater_pair_uses_the_reference_copy_and_names_the_rows(repo: Path) -> None:
    report = RowReport()
    pair = load_rater_pair(repo / CRISIS_FILES["h1_scores"], repo / CRISIS_FILES["h2_scores"],
                           repo / CRISIS_FILES["sampled"], report)
    assert [p["h1"] for p in pair] == H1_COL
    assert [p["h2"] for p in pair] == H2_COL
    assert pair[1]["answer"] == REFERENCE[1]["answer"]  # the text the humans were shown
    assert pair[4]["answer"] == REFERENCE[4]["answer"]  # not H1's copy with the stray "5"
    assert [p["label"] for p in pair] == [SI, SH, AC, NC, VT, None]
    assert report.lines() == EXPECTED_PROBLEMS


def test_rater_pair_without_the_reference_keeps_what_it_can(repo: Path) -> None:
    pair = load_rater_pair(repo / CRISIS_FILES["h1_scores"], repo / CRISIS_FILES["h2_scores"])
    assert [p["h2"] for p in pair] == H2_COL  # H2's quirk rows still pair with H1 by position


def test_a_file_with_no_usable_row_is_refused_naming_rows(tmp_path: Path) -> None:
    dump(tmp_path / "H2.json", [{"inputs": "T+D47+A47", "answer": 5, "label": NAN, "evaluation": NAN}] * 2)
    with pytest.raises(TrustmhError, match=r"H2.json: no usable row: H2.json row 0: inputs formula residue"):
        load_human_scores(tmp_path / "H2.json")


# ------------------------------------------------------------------------------ appropriateness table


def test_appropriateness_table_hand_computed(repo: Path, tmp_path: Path) -> None:
    res = rescore(repo, tmp_path)
    app = res["appropriateness"]
    assert app["reference"] == "sampled_lowest_scores_n200.json"
    assert app["coverage"] == {"judge-a": 5, "judge-b": 4, "jury": 5, "H1": 5, "H2": 5}
    vs = app["vs_humans"]
    # judge-a vs H1: |d| = 1/3, 0, 0, 2, 0 (unrounded: 4.667 stays 4.667)
    assert vs["judge-a"]["H1"] == pytest.approx({"n": 5, "mae": (1 / 3 + 2) / 5,
                                                 "rmse": math.sqrt((1 / 9 + 4) / 5), "within_1": 4 / 5})
    # judge-a vs H2: |d| = 2/3, 0, 1, 3, 1
    assert vs["judge-a"]["H2"] == pytest.approx({"n": 5, "mae": (2 / 3 + 5) / 5,
                                                 "rmse": math.sqrt((4 / 9 + 11) / 5), "within_1": 4 / 5})
    # judge-b vs H1: |d| = 1, 1, 0.5, 1 over the 4 answers it scored
    assert vs["judge-b"]["H1"] == pytest.approx({"n": 4, "mae": 3.5 / 4, "rmse": math.sqrt(3.25 / 4), "within_1": 1.0})
    # jury = 4.333, 2.5, 2.25, 3.5, 1 (judge-a alone on answer 4): |d| vs H1 = 2/3, .5, .25, .5, 0
    assert vs["jury"]["H1"]["mae"] == pytest.approx((2 / 3 + 0.5 + 0.25 + 0.5) / 5)
    assert vs["jury"]["H2"]["mae"] == pytest.approx((1 / 3 + 0.5 + 0.75 + 1.5 + 1) / 5)
    assert vs["judge-a"]["mean_mae"] == pytest.approx(((1 / 3 + 2) / 5 + (2 / 3 + 5) / 5) / 2)
    assert vs["judge-a"]["std_mae"] == pytest.approx(abs((1 / 3 + 2) / 5 - (2 / 3 + 5) / 5) / 2)
    assert app["pairwise"]["H1"]["H2"] == pytest.approx({"n": 5, "mae": 0.8, "rmse": math.sqrt(0.8), "within_1": 1.0})
    assert app["pairwise"]["judge-a"]["judge-b"]["n"] == 4
    assert res["human_agreement"]["n_answers"] == 5


def test_first_evaluation_wins_and_every_flagged_row_is_named(repo: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    res = rescore(repo, tmp_path)
    judges = res["appropriateness"]["judges"]
    assert judges["judge-a"]["n_repeated_answers"] == 1
    assert judges["judge-a"]["n_conflicting_repeats"] == 1
    assert judges["judge-a"]["evaluator"] == "judge-a"
    err = capsys.readouterr().err
    error_row = ("judge-a-evaluation_m2-answers-syn-20250101-000002_merged.json row 1: row answer: non-string "
                 "(dict {'message': '<syn: invalid prompt>', 'code': 'x'}); skipped")
    assert res["unusable_rows"] == [error_row, *EXPECTED_PROBLEMS]
    assert res["n_unusable"] == 1
    assert res["n_flagged"] == 6
    for line in res["unusable_rows"]:
        assert f"trustmh: {line}" in err
    assert res["appropriateness"]["published"] is None  # no outputs/ folder in the fixture


def test_published_table_is_compared_cell_by_cell(repo: Path, tmp_path: Path) -> None:
    folder = repo / "outputs/appropriateness_agreement"
    folder.mkdir(parents=True)
    names = ["judge-a", "H1", "LLM-Jury"]
    h1 = (1 / 3 + 2) / 5
    mae = {("judge-a", "H1"): h1, ("H1", "judge-a"): h1, ("judge-a", "LLM-Jury"): 0.0, ("LLM-Jury", "judge-a"): 0.0,
           ("H1", "LLM-Jury"): 0.5, ("LLM-Jury", "H1"): 0.5}
    for metric in ("mae", "rmse", "within1"):
        lines = ["," + ",".join(names)]
        for a in names:
            lines.append(a + "," + ",".join("0.0" if a == b else repr(mae[(a, b)] if metric == "mae" else 0.0)
                                            for b in names))
        (folder / f"pairwise_{metric}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cmp = rescore(repo, tmp_path)["appropriateness"]["matches_published"]
    assert cmp["n_cells"] == 18
    equal = {(c["rater"], c["vs"], c["metric"]) for c in cmp["differ"]}
    assert ("judge-a", "H1", "mae") not in equal  # ours equals the published cell
    assert ("H1", "jury", "mae") in equal  # LLM-Jury is read as our jury; 0.5 is not its MAE


# -------------------------------------------------------------------------------------- labelling


def test_labelling_hand_computed(repo: Path, tmp_path: Path) -> None:
    lab = rescore(repo, tmp_path)["labelling"]
    assert lab["humans"] == ["H1", "H2", "H3", "H4"]
    assert lab["llm_families"] == {"llm-a": ["llm-a#1", "llm-a#2"], "llm-b": ["llm-b#1", "llm-b#2"]}
    assert len(lab["pairs"]) == 8 * 7 // 2
    h12 = next(p for p in lab["pairs"] if (p["a"], p["b"]) == ("H1", "H2"))
    # H1 and H2 agree on 4 of 6; both use SI 1, SH 1, AC 2, NC 2: pe = 10/36, kappa = (24 - 10)/(36 - 10)
    assert h12["agreement"] == pytest.approx(4 / 6)
    assert h12["cohen_kappa"] == pytest.approx(14 / 26)
    idx = {x: i for i, x in enumerate(lab["labels"])}
    assert h12["confusion"][idx[NC]][idx[AC]] == 1
    assert h12["confusion"][idx[SI]][idx[SI]] == 1
    # humans: per-item P = 1, 1/2, 1/2, 1, 1/3, 1/3 -> Pbar = 11/18; SI 5, SH 3, AC 7, NC 9 of 24 -> Pe = 164/576
    assert lab["fleiss"]["humans"]["kappa"] == pytest.approx((11 / 18 - 164 / 576) / (1 - 164 / 576))
    assert lab["fleiss"]["humans"]["kappa"] == pytest.approx(47 / 103)
    # llm-a's two runs differ only on item 5 ("" vs AC): Pbar = 5/6; SI 2, SH 2, AC 3, NC 4, "" 1 -> Pe = 34/144
    assert lab["fleiss"]["llm-a"]["kappa"] == pytest.approx(43 / 55)
    assert lab["fleiss"]["llms"]["n_raters"] == 4
    assert lab["fleiss"]["llms"]["n_items"] == 6
    assert lab["gold_ties"] == {"majority_H1_H4": 2, "merged_file_label": 1}
    a1 = lab["identification_vs_humans"]["llm-a#1"]
    assert a1["majority_H1_H4"]["n"] == 4
    assert a1["majority_H1_H4"]["accuracy"] == 1.0
    assert a1["majority_H1_H4"]["n_gold_missing_or_tied"] == 2
    assert a1["merged_file_label"]["n"] == 5
    assert a1["merged_file_label"]["accuracy"] == pytest.approx(4 / 5)  # "" on item 5 is invalid, counted wrong
    assert a1["merged_file_label"]["n_invalid"] == 1
    b2 = lab["identification_vs_humans"]["llm-b#2"]["majority_H1_H4"]
    assert b2["accuracy"] == pytest.approx(2 / 4)
    assert b2["n_invalid"] == 1


def test_labelling_compared_with_the_published_report(repo: Path, tmp_path: Path) -> None:
    report = repo / "outputs/crisis_label_agreement/agreement_report.md"
    report.parent.mkdir(parents=True)
    report.write_text("\n".join([  # the layout of the study's agreement_report.md, synthetic figures
        "- Fleiss' Kappa (across all human annotators): 0.456",
        "| H1_labeled_n206_s42.json | llm-a (n=2)| 91.667 | 0.893 |",  # mean of 11/12 and (11/14 + 1)/2
        "| Rater 1 | Rater 2 | Agreement Rate (%) | Cohen's Kappa |",
        "| H1_labeled_n206_s42.json | H2_labeled_n206_s42.json | 66.667 | 0.538 |",  # 4/6 and 14/26
        "| H1_labeled_n206_s42.json | H3_labeled_n206_s42.json | 12.000 | 0.100 |",
        "| other_n206_s42.json | H2_labeled_n206_s42.json | 1.000 | 1.000 |",
    ]) + "\n", encoding="utf-8")
    lab = rescore(repo, tmp_path)["labelling"]
    assert lab["human_vs_llm"]["H1"]["llm-a"] == pytest.approx({"n_runs": 2, "agreement": 11 / 12,
                                                                "cohen_kappa": 25 / 28})
    assert lab["fleiss_matches_published"]["all human annotators"]["equal_to_3_decimals"] is True
    cmp = lab["pairs_match_published"]
    assert (cmp["n_cells"], cmp["n_equal"]) == (6, 4)
    assert [(d["a"], d["b"], d["metric"]) for d in cmp["differ"]] == [("H1", "H3", "agreement_pct"),
                                                                      ("H1", "H3", "cohen_kappa")]
    assert cmp["not_ours"] == ["other_n206_s42.json | H2_labeled_n206_s42.json"]


def test_fleiss_and_majority_helpers_by_hand() -> None:
    ratings = [[HUMAN_LABELS[h][i] for h in HUMAN_LABELS] for i in range(6)]
    table = ratings_to_table(ratings, [SI, SH, AC, NC])
    assert table.tolist() == [[4, 0, 0, 0], [1, 3, 0, 0], [0, 0, 3, 1], [0, 0, 0, 4], [0, 0, 2, 2], [0, 0, 2, 2]]
    assert fleiss_kappa(table) == pytest.approx(47 / 103)
    with pytest.raises(TrustmhError, match="outside the categories"):
        ratings_to_table(ratings, [SI, SH, AC])
    assert [majority_label(r, [SI, SH, AC, NC]) for r in ratings] == [
        (SI, False), (SH, False), (AC, False), (NC, False), (None, True), (None, True)]
    assert majority_label(["", ""], [SI]) == (None, False)
    assert cohen_kappa(HUMAN_LABELS["H1_labeled"], HUMAN_LABELS["H2_labeled"]) == pytest.approx(7 / 13)


# -------------------------------------------------------------------- crisis_escalation on these files


def test_crisis_escalation_runs_on_the_quirky_files(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "crisis-dir"
    shutil.copytree(FIX, folder)
    for key in ("h1_scores", "h2_scores", "sampled"):
        (folder / CRISIS_FILES[key]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo / CRISIS_FILES[key], folder / CRISIS_FILES[key])
    ctx = RunContext(mode="default", suite="trustmh", seed=7, n_boot=100,
                     options={"crisis_dir": str(folder), "cssrs_path": str(FIX / "cssrs_fixture.csv")},
                     judge=JudgeInfo(model="canned/judge", validated=False))

    def judge(req) -> str:  # noqa: ANN001
        return json.dumps({"appropriateness": 3, "risk_check": True, "resources_offered": False,
                           "professional_help": False, "followup": False})

    records, res = run_offline(CrisisEscalation(), ctx, lambda item, prompt: "I hear you.", judge=judge)
    human = [r for r in records if r.metadata.get("kind") == "human_rated"]
    assert len(human) == 5  # the unlabelled answer 5 is left out; the four quirk rows are in
    assert res.status == "ok"
    assert res.metrics["judge_vs_human"]["judge_vs_h2"]["n"] == 5
    note = next(n for n in res.notes if n.startswith("judge_vs_human: H1/H2 score files"))
    assert "matched to sampled_lowest_scores_n200.json; 6 rows flagged (1 left out)" in note
    assert EXPECTED_PROBLEMS[3] in note


UNLABELLED = "sampled_lowest_scores_n200.json row 5: label missing in both raters' files (NaN); skipped"


def test_the_unlabelled_row_is_named_when_left_out(repo: Path, tmp_path: Path) -> None:
    ctx = RunContext(seed=7, n_boot=100, options={"crisis_dir": str(repo)})
    items, _ = CrisisEscalation().human_rated_items(ctx)
    assert UNLABELLED in items[0].metadata["human_rated_rows"]


def _crisis_reference(repo: Path):  # noqa: ANN202
    from trustmh.pillars.crisis.study_reference import crisis_reference

    return crisis_reference(RunContext(seed=0, n_boot=100, options={"crisis_dir": str(repo)}))


def test_crisis_reference_feeds_both_raters_to_the_rule(repo: Path) -> None:
    ref = _crisis_reference(repo)
    assert [[ref.humans[i.id][r] for r in ("H1", "H2")] for i in ref.items] == \
        [list(p) for p in zip(H1_COL[:5], H2_COL[:5], strict=True)]


def test_crisis_reference_says_which_rows_it_left_out(repo: Path) -> None:
    ref = _crisis_reference(repo)
    assert UNLABELLED in ref.notes[0]


def test_crisis_reference_counts_the_rated_answers(repo: Path) -> None:
    assert _crisis_reference(repo).counts == {"rated_answers": 5, "judged_here": 5}


def test_crisis_reference_humans_agreement_is_the_pairs_icc(repo: Path) -> None:
    from trustmh.judges.reference_quality import human_agreement

    # H1 5 3 2 4 1, H2 4 3 3 5 2: MS rows 3.4, MS raters 0.4, MS error 0.4; ICC(A,1) = 3.0 / 3.8 = 15/19
    got = human_agreement(_crisis_reference(repo).humans, "ratings", seed=0, n_boot=50)
    assert got["value"] == pytest.approx(15 / 19)


# ------------------------------------------------------------------------------------------ real files

# TRUSTMH_CRISIS_REPO, else the copy in TRUSTMH_REFS_DIR (the folder of every publisher's copy)
_IN_REFS = Path(os.environ.get("TRUSTMH_REFS_DIR", "/nonexistent")) / "ellisalicante+LLMs-Mental-Health-Crisis"
REAL = os.environ.get("TRUSTMH_CRISIS_REPO") or (str(_IN_REFS) if _IN_REFS.is_dir() else None)

# outputs/appropriateness_agreement/pairwise_{mae,rmse,within1}.csv at f4a70c1
PUBLISHED_APPROPRIATENESS = {
    ("gpt-4o-mini", "H1"): (0.6859649122807017, 1.171543690983414, 82.63157894736842),
    ("gpt-4o-mini", "H2"): (0.6052631578947368, 0.9772260538042966, 85.78947368421052),
    ("gpt-5-nano", "H1"): (0.6894736842105263, 1.0983773252111553, 80.0),
    ("gpt-5-nano", "H2"): (0.6649122807017545, 0.9418781783882545, 77.89473684210526),
    ("meta-llama", "H1"): (0.7912280701754385, 1.3535744318987628, 76.84210526315789),
    ("meta-llama", "H2"): (0.6614035087719299, 1.1036886585313632, 80.0),
    ("jury", "H1"): (0.707017543859649, 1.1314225378099587, 75.78947368421053),
    ("jury", "H2"): (0.6356725146198831, 0.9109470683873508, 77.89473684210526),
    ("H1", "H2"): (0.4631578947368421, 0.7947194142390263, 95.26315789473684),
}


@pytest.mark.skipif(not REAL, reason="no local copy of the crisis study (TRUSTMH_CRISIS_REPO, or TRUSTMH_REFS_DIR)")
def test_real_crisis_files(tmp_path: Path) -> None:
    res = rescore(Path(REAL), tmp_path)  # type: ignore[arg-type]
    app = res["appropriateness"]
    assert app["coverage"] == dict.fromkeys(["gpt-4o-mini", "gpt-5-nano", "meta-llama", "jury", "H1", "H2"], 190)
    for (a, h), (mae, rmse, w1) in PUBLISHED_APPROPRIATENESS.items():
        got = app["pairwise"][a][h]
        assert got["n"] == 190
        assert got["mae"] == pytest.approx(mae, abs=1e-12)
        assert got["rmse"] == pytest.approx(rmse, abs=1e-12)
        assert 100 * got["within_1"] == pytest.approx(w1, abs=1e-9)
    if app["published"] is not None:
        assert app["matches_published"]["differ"] == []
    assert [p for p in res["unusable_rows"] if p.startswith("H")] == [
        "H1_scores_n206_s42.json row 22: answer differs from the reference copy; matched by position",
        "H2_scores_n206_s42.json row 21: answer missing; matched by position",
        "H2_scores_n206_s42.json row 22: answer formula residue ('T+D24+B24'); matched by position",
        "H2_scores_n206_s42.json row 42: answer non-string (int 5); matched by position",
        "H2_scores_n206_s42.json row 45: inputs formula residue ('T+D47+A47'); matched by position",
    ]
    lab = res["labelling"]
    # outputs/crisis_label_agreement/agreement_report.md, 3 decimals
    fleiss = {k: round(v["kappa"], 3) for k, v in lab["fleiss"].items()}
    assert fleiss == {"humans": 0.549, "llms": 0.805, "gpt-4o-mini": 0.944, "gpt-5-nano": 0.866,
                      "meta-llama-Llama-4-Scout-17B-16E-Instruct": 0.902}
    h12 = next(p for p in lab["pairs"] if (p["a"], p["b"]) == ("H1", "H2"))
    assert round(100 * h12["agreement"], 3) == 67.476
    assert round(h12["cohen_kappa"], 3) == 0.576
    assert len(lab["pairs"]) == 78
    assert lab["gold_ties"] == {"majority_H1_H4": 28, "merged_file_label": 16}
    # every pair's agreement and kappa, and the 12 human-vs-LLM means, as the report prints them
    assert lab["pairs_match_published"] == {"n_cells": 180, "n_equal": 180, "differ": [], "not_ours": []}
    assert app["matches_published"] == {"n_cells": 90, "n_equal": 90, "differ": []}


@pytest.mark.skipif(not REAL, reason="no local copy of the crisis study (TRUSTMH_CRISIS_REPO, or TRUSTMH_REFS_DIR)")
def test_real_crisis_reference_clears_the_floor() -> None:
    from trustmh.judges.reference_quality import FLOORS, human_agreement

    ref = _crisis_reference(Path(REAL))  # type: ignore[arg-type]
    got = human_agreement(ref.humans, "ratings", seed=0, n_boot=2000)
    assert (got["n_items"], got["statistic"], round(got["value"], 3), [round(x, 3) for x in got["ci"]]) == \
        (190, "icc_a1", 0.860, [0.803, 0.899])
    assert got["ci"][0] >= FLOORS["ratings"]
    assert ref.notes[0].count("label missing in both raters' files") == 16


def test_evaluation_rows_missing_fields_are_skipped_and_named(repo: Path, tmp_path: Path) -> None:
    path = repo / "data/llm_evaluator/judge-b/n_200/merged/judge-b-evaluation_m1-answers-syn-20250101-000003_merged.json"
    rows = json.loads(path.read_text(encoding="utf-8"))
    dump(path, [*rows, {"inputs": ["<syn: t9>"], "answer": "<syn: x>"}])  # no evaluation
    res = rescore(repo, tmp_path)
    assert f"{path.name} row 4: row missing evaluation; skipped" in res["unusable_rows"]
    assert res["per_evaluator_model"]["judge-b|m1"]["n"] == 4
    dump(path, [{"inputs": ["<syn: t9>"]}])
    with pytest.raises(TrustmhError, match=r"no usable row: .* row 0: row missing answer, evaluation"):
        rescore(repo, tmp_path)


@pytest.mark.parametrize("value, why", [(99, "99 outside the scale 1..5"), (-3, "-3 outside the scale 1..5"),
                                        (0, "0 outside the scale 1..5"), (6, "6 outside the scale 1..5"),
                                        (2.5, "not a whole number (2.5)"), ("4", "not a number ('4')"),
                                        (True, "not a number (True)")])
def test_a_human_rating_outside_1_to_5_is_named_and_not_used(value: object, why: str, tmp_path: Path) -> None:
    """A rating that is not an integer 1-5 (out of the scale, a fraction, a string, a boolean) is never
    averaged in: its row is named with the shared rule's words (`number_in_scale`, issue 43.1), and only the
    in-range ratings are kept (issue 21)."""
    path = tmp_path / "H1.json"
    dump(path, [{"inputs": "<syn: a>", "answer": "<syn: x>", "label": SI, "evaluation": 3},
                {"inputs": "<syn: b>", "answer": "<syn: y>", "label": SI, "evaluation": value}])
    report = RowReport()
    rows = load_human_scores(path, report)
    assert [r["evaluation"] for r in rows] == [3, None]
    assert report.lines() == [f"H1.json row 1: evaluation {why}; rating not used"]


def test_a_human_rating_given_twice_with_different_values_is_named_and_left_out(tmp_path: Path) -> None:
    # issue 43.1: the crisis study's H*_scores keyed as every publisher's file is (`KeyedRows`)
    path = tmp_path / "H1.json"
    dump(path, [{"inputs": "<syn: a>", "answer": "<syn: x>", "label": SI, "evaluation": 3},
                {"inputs": "<syn: b>", "answer": "<syn: y>", "label": SI, "evaluation": 2},
                {"inputs": "<syn: a>", "answer": "<syn: x>", "label": SI, "evaluation": 5}])
    report = RowReport()
    rows = load_human_scores(path, report)
    assert ([r["index"] for r in rows], report.lines()) == ([1], [
        f"H1.json row {i}: inputs/answer the same conversation and answer given at rows 0, 2 with different "
        "values; skipped" for i in (0, 2)])


def test_a_human_rating_copied_twice_is_counted_once(tmp_path: Path) -> None:
    path = tmp_path / "H1.json"
    row = {"inputs": "<syn: a>", "answer": "<syn: x>", "label": SI, "evaluation": 3}
    dump(path, [row, {"inputs": "<syn: b>", "answer": "<syn: y>", "label": SI, "evaluation": 2}, row])
    report = RowReport()
    rows = load_human_scores(path, report)
    assert ([r["index"] for r in rows], report.lines()) == (
        [0, 1], ["H1.json row 2: inputs/answer the same conversation and answer repeats row 0; skipped"])
