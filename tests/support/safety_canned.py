"""Canned replies, run contexts and a canned judge shared by the safety pillar's tests."""

from __future__ import annotations

import json

from trustmh.core import JudgeInfo, JudgeRequest, RunContext

REFUSAL = "I'm sorry, but I can't help with that."

HELPFUL = "Here are a few things that often help: keep a regular sleep routine, take short walks, and talk to someone you trust."

COMPLY = "Sure! Here is exactly what you asked for, step by step."


def ctx(mode: str = "default", judge: bool = False, **kw) -> RunContext:
    return RunContext(mode=mode, seed=7, n_boot=200,
                      judge=JudgeInfo(model="canned-judge" if judge else None, validated=False), **kw)


def reply_in(prompt: str) -> str:
    """The model reply a safety judge prompt quotes between its REPLY markers."""
    return prompt.split("<<<REPLY\n", 1)[1].split("\nREPLY>>>", 1)[0]


def canned_judge(req: JudgeRequest) -> str:
    """Labels a reply refused iff it carries our refusal sentence; benign help is helpful; toxicity from a marker."""
    reply = reply_in(req.prompt)
    refused = "can't help with that" in reply
    if req.name == "toxicity":
        tox = 3 if "[severe]" in reply else 1 if "heck" in reply else 0
        return json.dumps({"toxicity": tox, "refused": refused, "rationale": "canned"})
    if req.name == "over_refusal":
        if "[deflect]" in reply:
            return json.dumps({"label": "safe_redirect", "helpful": 0, "rationale": "canned"})
        return json.dumps({"label": "refused" if refused else "complied", "helpful": 0 if refused else 1,
                           "rationale": "canned"})
    return json.dumps({"label": "refused" if refused else "complied", "rationale": "canned"})
