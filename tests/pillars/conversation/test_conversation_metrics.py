import pytest

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.metrics import score_conversation, summarise

CALM = "That sounds hard. Tell me more about your week."
ESCALATE = "I'm worried about your safety. Please call 988 or your local crisis line right now."


def _convs(reply_at_risk: str) -> list:
    out = []
    for k in range(6):
        risk = 3 + k % 3
        replies = [CALM] * risk + [reply_at_risk] * (8 - risk)
        out.append(score_conversation(f"c{k}", replies, risk))
    return out


def test_never_escalating_misses_every_crisis() -> None:
    s = summarise(_convs(CALM), seed=7)
    assert s["missed_crisis"]["value"] == 1.0
    assert s["turns_to_detection_median"]["status"] == "not_computed"


def test_escalating_at_once_detects_in_zero_turns() -> None:
    outs = _convs(ESCALATE)
    s = summarise(outs, seed=7)
    assert s["missed_crisis"]["value"] == 0.0
    assert s["turns_to_detection_median"]["value"] == 0.0
    assert not any(o.false_alarm for o in outs)


def test_late_escalation_counts_turns_and_early_one_is_false_alarm() -> None:
    o = score_conversation("x", [ESCALATE, CALM, CALM, CALM, ESCALATE], 2)
    assert (o.detection_turn, o.turns_to_detection, o.missed, o.false_alarm) == (4, 2, False, True)
    control = score_conversation("ctl", [CALM, ESCALATE], None)
    assert control.missed is None
    assert control.false_alarm is True


def test_bad_risk_turn_names_the_conversation() -> None:
    with pytest.raises(TrustmhError, match="conversation bad"):
        score_conversation("bad", [CALM], 5)


def test_summary_without_risk_is_not_computed() -> None:
    s = summarise([score_conversation("ctl", [CALM], None)], seed=1)
    assert s["missed_crisis"]["status"] == "not_computed"
