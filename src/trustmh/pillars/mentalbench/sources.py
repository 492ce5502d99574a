"""MentalBench (docs/pillars/mentalbench.md#mentalbench): the non-sub-task parts.

* `trustmh.pillars.mentalbench.sources` (this module): source keys and column names, the sources' families, the
  reasoning splitter and `gen_status` of docs/pillars/mentalbench.md#generation.
* `trustmh.pillars.mentalbench.diagnostics`: the judges' diagnostics
  (docs/pillars/mentalbench.md#ensembles-and-diagnostics): agreement among members, self-preference and
  test–retest (the ensemble's rule itself is `trustmh.judges.ensemble`, as for every sub-task).
* `trustmh.pillars.mentalbench.export`: tidy long tables (`judge_long.csv`, `human_long.csv`) in the format that
  `trustmh align --human FILE --judge FILE` reads.

The sub-task itself is `trustmh.pillars.mentalbench.generation.MentalBenchGeneration`; re-judging released responses
is `trustmh.cli.rescore_mentalbench.rescore_mentalbench`.

Commands (a new judge on the released MentalBench responses, aligned against the released expert ratings)::

    # 1. judge the released responses (first 1,000 rows = the MentalAlign subset); writes results.json,
    #    judge_long.csv and, when the MentalAlign workbooks are available, human_long.csv
    trustmh rescore --format mentalbench --from DIR_WITH_MENTALBENCH_CSV --out rejudge \\
        --judge openai/gpt-4.1 --mode faithful --limit 1000
    # 2. how far the new judge agrees with the human experts
    trustmh align --human rejudge/human_long.csv --judge rejudge/judge_long.csv --mode default \\
        --out rejudge/align.json

    # the human table on its own (Python):
    python -c "from trustmh.pillars.mentalbench.export import human_long_table as h; \\
               h('shared/data/mentalalign', 'human_long.csv')"

    # a model under test on MentalBench contexts, with a two-judge ensemble and 2 repeats per judge:
    trustmh run --suite mentalbench --model ollama/llama3.1 --judge openai/gpt-4o \\
        --judge anthropic/claude-3-7-sonnet-20250219 -O judge_repeats=2 --limit 100 \\
        -O mentalbench_path=MentalBench-100k.zip
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trustmh.core import LENGTH_STOPS
from trustmh.models.providers import model_family
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES, GROUPS

__all__ = ["ATTRIBUTES", "GROUPS", "CSS", "ARS", "SOURCE_COLUMNS", "SOURCE_FAMILY", "source_family",
           "split_reasoning", "Split", "gen_status", "is_missing_text", "MODEL_SOURCE", "ORIGINAL"]

CSS: tuple[str, ...] = tuple(a for a in ATTRIBUTES if GROUPS[a] == "CSS")
ARS: tuple[str, ...] = tuple(a for a in ATTRIBUTES if GROUPS[a] == "ARS")

ORIGINAL = "original"
MODEL_SOURCE = "model"  # the source key of the model under test inside a run

# Canonical source key → MentalBench column (docs/pillars/mentalbench.md#data).
SOURCE_COLUMNS: dict[str, str] = {
    "original": "response",
    "claude": "Claude-3.5-Haiku",
    "ds_llama": "deepseek-llama",
    "ds_qwen": "deepseek-qwen",
    "gemini": "Gemini",
    "gpt4o": "gpt-4o",
    "gpt4omini": "gpt-4omini",
    "llama_3": "Llama-3.1",
    "qwen_2": "Qwen-2.5",
    "qwen_3": "Qwen-3",
}
# Family of the generator behind each canonical source (the DeepSeek-R1 distills count as deepseek).
SOURCE_FAMILY: dict[str, str] = {
    "original": "human",
    "claude": "anthropic",
    "ds_llama": "deepseek",
    "ds_qwen": "deepseek",
    "gemini": "google",
    "gpt4o": "openai",
    "gpt4omini": "openai",
    "llama_3": "meta",
    "qwen_2": "qwen",
    "qwen_3": "qwen",
}



def source_family(name: str | None) -> str | None:
    """The family of a canonical source key ("gpt4o", "ds_llama", "original" → "human"), else of a model
    string (`trustmh.models.providers.model_family`)."""
    if name in SOURCE_FAMILY:
        return SOURCE_FAMILY[name]
    return model_family(name)


# ---------------------------------------------------------------------------------------------------------
# Reasoning split and gen_status (docs/pillars/mentalbench.md#generation)
# ---------------------------------------------------------------------------------------------------------

_OPEN = re.compile(r"<think>", re.I)
_CLOSE = re.compile(r"</think>", re.I)


@dataclass(frozen=True)
class Split:
    reasoning: str
    text: str  # the visible reply (stripped)


def split_reasoning(raw: str | None) -> Split:
    """Split a raw output into reasoning and visible text: `<think>…</think>` blocks, text before a lone
    `</think>` and everything after an unclosed `<think>` are reasoning."""
    if not raw:
        return Split("", "")
    reasoning: list[str] = []
    visible: list[str] = []
    rest = raw
    # A closing tag before any opening tag: everything before it is reasoning (template-injected <think>).
    first_close = _CLOSE.search(rest)
    first_open = _OPEN.search(rest)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        reasoning.append(rest[:first_close.start()])
        rest = rest[first_close.end():]
    while True:
        m = _OPEN.search(rest)
        if m is None:
            visible.append(rest)
            break
        visible.append(rest[:m.start()])
        after = rest[m.end():]
        c = _CLOSE.search(after)
        if c is None:  # unclosed: everything after it is reasoning
            reasoning.append(after)
            break
        reasoning.append(after[:c.start()])
        rest = after[c.end():]
    # A stray </think> left in the visible part (e.g. "<think>a</think> b </think> c"): text before it is
    # reasoning too.
    text = "".join(visible)
    closes = list(_CLOSE.finditer(text))
    if closes:
        last = closes[-1]
        reasoning.append(text[:last.start()])
        text = text[last.end():]
    return Split("\n".join(r.strip() for r in reasoning if r.strip()), text.strip())


def is_missing_text(value: object) -> bool:
    """Empty strings, NaN, None and the literal text `nan` are missing (docs/pillars/mentalbench.md#data)."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value  # NaN
    return isinstance(value, str) and value.strip().lower() in ("", "nan")




def gen_status(split: Split, finish_reason: str | None = None, error: bool = False) -> str:
    """ok | truncated (finish reason length, visible text remains) | reasoning_only | empty | error."""
    if error:
        return "error"
    if split.text:
        return "truncated" if finish_reason in LENGTH_STOPS else "ok"
    return "reasoning_only" if split.reasoning else "empty"
