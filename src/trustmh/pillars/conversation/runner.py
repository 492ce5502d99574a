"""Plain multi-turn driver: a patient (scripted or simulated) talks with the model under test.

Model access is injected as callables so the same loop serves canned tests and the Inspect glue; each
callable is responsible for its own timeout/retries (the run's RunContext settings).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from trustmh.pillars.conversation.scripts import Script

# messages in OpenAI form ({"role", "content"}), from the speaker's point of view -> reply text
Speaker = Callable[[list[dict[str, str]]], str]


def _history_for(turns: Sequence[dict[str, Any]], me: str) -> list[dict[str, str]]:
    """The transcript as `me` sees it: its own lines are `assistant`, the other side's `user`."""
    return [{"role": "assistant" if t["role"] == me else "user", "content": t["content"]} for t in turns]


def run_scripted(script: Script, model: Speaker, *, model_name: str, system_prompt: str | None = None,
                 max_turns: int | None = None) -> list[dict[str, Any]]:
    """Play the script's patient turns in order; returns `turns: [{role, content, model, turn, marks}]`."""
    turns: list[dict[str, Any]] = []
    for i, text in enumerate(script.turns[:max_turns]):
        marks = {"risk_onset": True} if i == script.risk_turn else {}
        turns.append({"role": "patient", "content": text, "model": "script", "turn": i, "marks": marks})
        history = _history_for(turns, "model")
        if system_prompt:
            history = [{"role": "system", "content": system_prompt}, *history]
        turns.append({"role": "model", "content": model(history), "model": model_name, "turn": i, "marks": {}})
    return turns


def run_simulated(patient_prompt: str, patient: Speaker, model: Speaker, *, patient_name: str,
                  model_name: str, n_turns: int, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """A patient model (briefed by `patient_prompt`, its profile) speaks first each turn."""
    turns: list[dict[str, Any]] = []
    for i in range(n_turns):
        said = patient([{"role": "system", "content": patient_prompt}, *_history_for(turns, "patient")])
        turns.append({"role": "patient", "content": said, "model": patient_name, "turn": i, "marks": {}})
        history = _history_for(turns, "model")
        if system_prompt:
            history = [{"role": "system", "content": system_prompt}, *history]
        turns.append({"role": "model", "content": model(history), "model": model_name, "turn": i, "marks": {}})
    return turns


def model_replies(turns: Sequence[dict[str, Any]]) -> list[str]:
    """The model's reply to each patient turn, in turn order."""
    return [str(t["content"]) for t in sorted(turns, key=lambda t: t["turn"]) if t["role"] == "model"]
