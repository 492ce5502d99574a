"""The PsyLeak prompts: the original's tier-3 input reproduced byte for byte (faithful, checked against the
released inputs) and ours (default), with the leak judge's and the proxy model's prompts.
"""

from __future__ import annotations

import re
from typing import Any

from trustmh.core import TrustmhError
from trustmh.prompts import render


def faithful_story(body: str) -> str:
    """The original's story: whitespace runs → one space, split on ". ", last piece dropped, ". "-joined + ".".

    Dropping the last piece cuts the final "What should Dr. X say?" after "Dr." (docs/pillars/index.md#flaws), kept in faithful.
    """
    flat = re.sub(r"\s+", " ", body)
    return ". ".join(flat.split(". ")[:-1]) + "."


def faithful_question(rec: dict[str, Any], qtype: str) -> str:
    if qtype == "free-response":
        return render("privacy_faithful_q_free_response", aware=rec["aware_agent"]) + '\nAnswer: "'
    if qtype == "info-accessibility":
        q = render("privacy_faithful_q_info_accessibility", about=rec["subject_agent"],
                   topic=rec["secret"].lower())
    elif qtype == "privacy-sharing":
        q = render("privacy_faithful_q_privacy_sharing", about=rec["subject_agent"])
    elif qtype == "control":
        q = render("privacy_faithful_q_control", control=rec["control"].strip())
    else:
        raise TrustmhError(f"unknown PsyLeak question type {qtype!r}")
    return q + "\nAnswer: "


def faithful_prompt(rec: dict[str, Any], qtype: str, primed: bool = True) -> str:
    """The original's tier-3 input: priming instruction, blank line, `Scenario:`, story, question, cue."""
    instruction = render("privacy_faithful_priming") + "\n\n" if primed else ""
    return f"{instruction}Scenario:\n{faithful_story(rec['body'])}\n{faithful_question(rec, qtype)}"


TOPIC_WORDS = {
    "family_relationship": "problems in family relationships",
    "social_relationship": "problems in social relationships",
    "romantic_relationship": "problems in a romantic relationship",
    "self_esteem": "low self-esteem",
    "mental_health_issue": "a mental health issue",
    "work_stress": "stress at work",
    "academic_stress": "academic stress",
}


def topic_words(topic: str) -> str:
    """The topic label as words (docs/pillars/index.md#flaws): a phrase for the known labels, else underscores as spaces."""
    return TOPIC_WORDS.get(topic, topic.replace("_", " "))


def default_story(rec: dict[str, Any]) -> str:
    """The story as written (line breaks kept), without its closing "What should X say?" line (docs/pillars/index.md#flaws)."""
    lines = [ln.rstrip() for ln in rec["body"].split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1].strip() == f"What should {rec['aware_agent']} say?":
        lines.pop()
    return "\n".join(lines).strip()


def disclosure_text(rec: dict[str, Any]) -> str:
    """The client's own words (the `Client:` paragraph up to the counsellor's reply); whole story if absent."""
    body = rec["body"]
    m = re.search(r"^Client:(.*?)(?=^" + re.escape(rec["aware_agent"]) + r":)", body, re.S | re.M)
    return m.group(1).strip() if m else default_story(rec)


def fixed_control(line: str, topic: str | None = None) -> str:
    """The control line with the original's "in order to to" typo fixed (docs/pillars/index.md#flaws) and the topic label, if
    given, written as words (docs/pillars/index.md#flaws)."""
    line = line.strip().replace("in order to to ", "in order to ")
    if topic:
        line = line.replace(f"'s {topic},", f"'s {topic_words(topic)},")
    return line


def default_prompt(rec: dict[str, Any], qtype: str, primed: bool = False) -> str:
    fields = {"about": rec["subject_agent"], "aware": rec["aware_agent"], "questioner": rec["oblivious_agent"],
              "topic": topic_words(rec["secret"])}
    if qtype == "free-response":
        q = render("privacy_q_free_response", **fields)
    elif qtype == "info-accessibility":
        q = render("privacy_q_info_accessibility", **fields)
    elif qtype == "privacy-sharing":
        q = render("privacy_q_privacy_sharing", **fields)
    elif qtype == "control":
        q = render("privacy_q_control", control=fixed_control(rec["control"], rec["topic"]))
    else:
        raise TrustmhError(f"unknown PsyLeak question type {qtype!r}")
    priming = render("privacy_priming") + "\n\n" if primed else ""
    return render("privacy_leak", priming=priming, story=default_story(rec), question=q)


def leak_judge_prompt(*, aware: str, about: str, questioner: str, disclosure: str, story: str,
                      reply: str) -> str:
    """The default leak judge's prompt: story, the client's disclosure, the third party and the reply."""
    return render("privacy_leak_judge", aware=aware, about=about, questioner=questioner,
                  disclosure=disclosure, story=story, reply=reply)


def proxy_prompt(reply: str, topic: str) -> str:
    """Faithful proxy-model question on the reply alone (our wording, the original's structure)."""
    return render("privacy_proxy", reply=reply, topic=topic.lower())
