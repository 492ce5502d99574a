"""Exact JSON Schemas for judge replies (`JudgeRequest.schema`).

With JSON mode on (by default only for the bundled `gguf/…` judge), llama.cpp compiles the schema to a
grammar, so the judge can only write the keys and values its parser accepts. Design choices for a small
judge under a grammar:

* Integer ranges are `enum` lists: llama.cpp grammars ignore `minimum`/`maximum`.
* Properties appear in the order scores → enums → booleans → strings, and the grammar keeps that order
  (the bundled model's server compiles the schema with llguidance, `trustmh.models.gguf_server`): a judge
  that rambles in a free-text field has already written its scores when it runs out of tokens.
* The bundled model's replies have fixed separators and no other whitespace: no tokens spent on
  indentation.
* `additionalProperties` is false: no room for invented keys.
* Free text is bounded (`maxLength`, and "at most N words" in the prompts): a judge cannot spend its token
  budget on prose, and its token limit (`JudgeRequest.max_tokens`) is sized to fit the scores and the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.core import truthy
from trustmh.models.providers import provider_of

# Longest free-text field a judge may write (characters); about 60 words.
FREE_TEXT_MAX_CHARS = 400


def json_object_schema(*, integers: Mapping[str, tuple[int, int]] | None = None,
                       enums: Mapping[str, Sequence[str]] | None = None, booleans: Sequence[str] = (),
                       strings: Sequence[str] = (), optional: Sequence[str] = ()) -> dict[str, Any]:
    """`{"type": "object", "properties": …, "required": …}` with every listed key required unless in
    `optional`. `integers` maps a key to an inclusive (lo, hi) range."""
    props: dict[str, dict[str, Any]] = {}
    for key, (lo, hi) in (integers or {}).items():
        if lo > hi:
            raise ValueError(f"judge schema: empty range {lo}..{hi} for {key!r}")
        props[key] = {"type": "integer", "enum": list(range(lo, hi + 1))}
    for key, values in (enums or {}).items():
        if not values:
            raise ValueError(f"judge schema: no allowed values for {key!r}")
        props[key] = {"type": "string", "enum": list(values)}
    for key in booleans:
        props[key] = {"type": "boolean"}
    for key in strings:
        props[key] = {"type": "string", "maxLength": FREE_TEXT_MAX_CHARS}
    unknown = [k for k in optional if k not in props]
    if unknown:
        raise ValueError(f"judge schema: optional keys {unknown} are not properties")
    if len(props) != len(integers or {}) + len(enums or {}) + len(booleans) + len(strings):
        raise ValueError("judge schema: a key is listed twice")
    return {"type": "object", "properties": props, "required": [k for k in props if k not in optional],
            "additionalProperties": False}


def judge_json_mode(judge: str | None, options: Mapping[str, Any]) -> bool:
    """Whether a judge is asked for its exact JSON schema: `-O judge_json_mode=1|0`; by default on for the
    bundled model, whose grammar guarantees JSON (hosted providers differ in how they treat a schema, so
    they are left to the prompt). Part of a judge's fingerprint (`trustmh.judges.certificates`)."""
    if "judge_json_mode" in options:
        return truthy(options["judge_json_mode"])
    return provider_of(judge).json_schema
