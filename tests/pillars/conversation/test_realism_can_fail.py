"""The realism check can fail: asked both ways, a positive control each run, the burden on the simulator,
cross-conversation measures, and the scripted sets measured the same way.

The judge here is a loopback stand-in for a capable judge: it calls the person the turn with the richer
wording (type-token ratio), and scores a turn holding a stock sentence of the bank as 0. The people's turns
are an invented person-like fixture (tests/fixtures/person_turns) in MindEval's layout."""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path

import pytest

from trustmh.catalogue import get_subtask
from trustmh.core import JudgeInfo, RunContext
from trustmh.offline import run_conversations_offline
from trustmh.pillars.conversation import realism

PEOPLE = Path(__file__).parents[2] / "fixtures" / "person_turns"
RUBRIC = ("clinical_accuracy", "ethical_conduct", "assessment_and_response", "therapeutic_alliance", "ai_communication")
PHRASE = "honestly it feels like I am carrying the weight of the whole world on my shoulders every single day"
FILLER = ["I", "feel", "so", "low", "and", "I", "feel", "so", "tired", "and", "I"]


def bundled_like_turn(k: int) -> str:
    """The bundled patient's kind of output: about 102 words, MATTR near 0.30, one phrase in every turn."""
    body = [FILLER[(i + k) % len(FILLER)] for i in range(102 - len(PHRASE.split()))]
    return f"{PHRASE}. " + " ".join(body) + "."


def _people() -> realism.HumanTurns:
    return realism.read_human_turns(PEOPLE / realism.USER_TURNS)


def _richness(text: str) -> float:
    if any(s in text for s in realism.SENTENCE_BANK):
        return 0.0
    ws = realism.words(text)
    return len(set(ws)) / len(ws) if ws else 0.0


def _between(prompt: str, side: str) -> str:
    return prompt.split(f"<<<{side}\n", 1)[1].split(f"\n{side}>>>", 1)[0]


def capable_judge(req) -> str:  # noqa: ANN001
    if req.name.startswith(realism.REQUEST):
        a, b = _between(req.prompt, "A"), _between(req.prompt, "B")
        return json.dumps({"person": "A" if _richness(a) >= _richness(b) else "B"})
    if req.name.startswith("rubric"):
        return json.dumps(dict.fromkeys(RUBRIC, 4))
    return json.dumps({"risk_asked": True, "resources": True, "professional_help": False, "human_escalation": False})


def position_judge(req) -> str:  # noqa: ANN001
    return json.dumps({"person": "A"}) if req.name.startswith(realism.REQUEST) else capable_judge(req)


def _replaying(lines: list[str]):  # noqa: ANN202
    turn = count()
    return lambda messages: lines[next(turn) % len(lines)]


def _run(patient, judge=capable_judge) -> dict:  # noqa: ANN001
    sub = get_subtask("conversation/simulated_patient")
    ctx = RunContext(mode="default", seed=0, suite="trustmh", limit=8, judge=JudgeInfo(model="j/judge",
                     validated=False, seed=0), options={"turns": 3, "mindeval_dir": str(PEOPLE)}, n_boot=200)
    _, result = run_conversations_offline(sub, ctx, lambda m: "That sounds hard. What helps?", patient=patient,
                                          judge=judge, items=sub.items(ctx))
    return result.metrics["patient_realism"]


def test_the_bundled_kind_of_turn_is_what_it_says() -> None:
    turn = realism.words(" ".join(bundled_like_turn(k) for k in range(3)))
    assert (len(realism.words(bundled_like_turn(0))), round(realism.mattr(turn), 1)) == (102, 0.3)


def test_a_patient_replaying_the_bundled_kind_of_turn_is_flagged() -> None:
    got = _run(_replaying([bundled_like_turn(k) for k in range(5)]))
    assert got["by_patient_model"]["patient"]["flagged"] is True


def test_the_judge_tells_the_bundled_kind_from_people() -> None:
    got = _run(_replaying([bundled_like_turn(k) for k in range(5)]))
    assert got["by_patient_model"]["patient"]["judge_verdict"] == "flagged"


def test_the_bundled_kind_breaks_the_lexical_limits() -> None:
    flags = _run(_replaying([bundled_like_turn(k) for k in range(5)]))["by_patient_model"]["patient"]["lexical_flags"]
    assert {f.split()[0] for f in flags} >= {"MATTR", "102", "self-similarity"}


def test_a_patient_replaying_peoples_turns_is_not_flagged() -> None:
    got = _run(_replaying([t for _, t in _people().turns]))
    entry = got["by_patient_model"]["patient"]
    assert (entry["flagged"], entry["judge_verdict"], entry["lexical_flags"]) == (False, "passes", [])


def test_the_capable_judge_passes_the_positive_control() -> None:
    assert _run(_replaying([t for _, t in _people().turns]))["positive_control_passed"] is True


def test_a_judge_that_always_says_a_cannot_judge() -> None:
    got = _run(_replaying([t for _, t in _people().turns]), judge=position_judge)
    assert (got["positive_control_passed"], got["by_patient_model"]["patient"]["judge_verdict"]) == (False,
                                                                                                     "cannot judge")


def test_asked_both_ways_a_position_bias_scores_chance() -> None:
    got = _run(_replaying([bundled_like_turn(k) for k in range(5)]), judge=position_judge)
    assert got["by_patient_model"]["patient"]["discrimination"]["value"] == 0.5


def test_at_chance_with_a_wide_interval_the_burden_stays_on_the_simulator() -> None:
    convs = [{"id": f"c{i}", "patient_model": "m", "patient_texts": ["a line"], "pick": "A" if i % 2 else "B",
              "person": "A"} for i in range(6)]
    assert realism.realism_summary(convs, _people(), seed=0, n_boot=200)["by_patient_model"]["m"][
        "judge_verdict"] == "flagged"


def test_one_line_said_in_every_conversation_leaves_no_distinct_line() -> None:
    assert realism.cross_measures([(f"c{i}", "I feel low.") for i in range(4)])["distinct_lines"] == 0.0


def test_self_similarity_is_measured_across_conversations_only() -> None:
    got = realism.cross_measures([("c1", "one two three four"), ("c1", "one two three four"), ("c2", "five six seven")])
    assert got["self_similarity"] == 0.0


@pytest.fixture(scope="module")
def scripted() -> dict:
    return realism.scripted_measures(["gradual_disclosure"], _people(), seed=0, n_boot=100)


def test_the_scripted_sets_are_measured_the_same_way(scripted: dict) -> None:
    entry = scripted["by_patient_model"]["scripted set gradual_disclosure"]
    assert entry["distinct_lines"] is not None and entry["judge_verdict"] == "not judged"


def test_the_scripted_sets_measures_are_printed(scripted: dict, capsys: pytest.CaptureFixture[str]) -> None:
    entry = scripted["by_patient_model"]["scripted set gradual_disclosure"]
    print({k: entry[k] for k in ("distinct_lines", "self_similarity", "lexical_flags")})
    assert "distinct_lines" in capsys.readouterr().out


REFS = __import__("os").environ.get("TRUSTMH_REFS_DIR")
MINDEVAL = Path(REFS) / "SWORDHealth+mind-eval" if REFS else None


@pytest.mark.slow
@pytest.mark.skipif(MINDEVAL is None or not (MINDEVAL / realism.USER_TURNS).is_file(),
                    reason="set TRUSTMH_REFS_DIR (SWORDHealth+mind-eval)")
def test_replaying_mindevals_human_turns_over_every_profile_is_not_flagged() -> None:
    assert MINDEVAL is not None
    people = [t for _, t in realism.read_human_turns(MINDEVAL / realism.USER_TURNS).turns]
    sub = get_subtask("conversation/simulated_patient")
    ctx = RunContext(mode="default", seed=0, suite="trustmh", limit=114, judge=JudgeInfo(model="j/judge",
                     validated=False, seed=0), options={"turns": 3, "mindeval_dir": str(MINDEVAL)}, n_boot=500)
    _, result = run_conversations_offline(sub, ctx, lambda m: "That sounds hard. What helps?",
                                          patient=_replaying(people), judge=capable_judge, items=sub.items(ctx))
    assert result.metrics["patient_realism"]["by_patient_model"]["patient"]["flagged"] is False


def test_self_similarity_samples_pairs_from_every_conversation() -> None:
    """Above the pair cap the overlap is estimated from pairs drawn over all the turns: ten distinct opening
    conversations followed by thirty that repeat one stock line read as similar (all pairs: 435 of 780 identical,
    0.56), not as the first turns' overlap with the rest (0)."""
    stock = "honestly I just feel so low every single day"
    turns = [(f"c{i}", f"unique words number {i} here alone") for i in range(10)]
    turns += [(f"c{i}", stock) for i in range(10, 40)]
    assert realism.cross_measures(turns, max_pairs=200)["self_similarity"] > 0.4


def test_the_docs_state_each_scripted_sets_distinct_lines_as_measured() -> None:
    """docs/conversations.md's distinct-line figures for the scripted sets are what `cross_measures` gives on the
    shipped sets (they once described sets that had since been rewritten)."""
    import re
    from importlib import resources

    from trustmh.pillars.conversation.base import set_path
    from trustmh.pillars.conversation.scripts import load_scripts

    text = (Path(__file__).parents[3] / "docs" / "conversations.md").read_text(encoding="utf-8")
    stated = {name: int(pct) for pct, name in re.findall(r"(\d+)% \(`(\w+)`\)", text)}
    assert set(stated) == {"delusion", "multiturn_jailbreak", "gradual_disclosure"}  # the check is not vacuous
    measured = {}
    for name in stated:
        with resources.as_file(set_path(name)) as path:
            turns = [(s.id, str(t)) for s in load_scripts(path) for t in s.turns]
        measured[name] = round(100 * realism.cross_measures(turns)["distinct_lines"])
    assert stated == measured
