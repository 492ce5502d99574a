"""What each figure in a result's `metrics` is, in words: the label the report prints under a metric's name
and the gate uses where it would otherwise print a field name.

A sub-task declares the labels of its own figures (`Subtask.metric_labels`, beside the code that computes
them); the figures every result carries, whoever computes them, are labelled here (`SHARED`). A key may be
a template with `{placeholder}`s for figures named after a category, a set or a level
(`"{split}_crisis_miss_rate"`): the part of the name it stands for is put into the label, underscores as
spaces. A result may carry labels of its own (`metrics["metric_labels"]`); they come first.

Plain Python on plain data; the catalogue finds a sub-task's class from its id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from trustmh.catalogue import lookup

# Figures every result carries (added by the run), or named alike in several sub-tasks with one meaning.
# A sub-task's own label for the same name comes first.
SHARED: dict[str, str] = {
    "n_items": "distinct items scored",
    "n_samples": "replies scored (an item asked several times counts each time)",
    "n_errors": "samples that failed with an error and were not scored",
    "judge_recovered": "judge replies cut off by the token limit whose complete score fields were recovered",
    "n_every_reply_unusable": "ratings, every one a reply of the model's that nothing could use (each counted "
                              "against the model)",
    "n": "items scored",
    "n_valid": "items with a valid reply",
    "n_invalid": "items without a valid reply",
    "invalid_rate": "share of replies that could not be read",
    "accuracy": "share of items answered correctly",
    "macro_f1": "macro-averaged F1 over the classes (each class counts the same)",
    "n_replies": "model replies scored",
    "n_dialogues": "dialogues scored",
    "n_conversations": "conversations scored",
    "n_pass": "conversations that passed",
    "n_ratings": "ratings asked",
    "n_valid_ratings": "ratings the judge gave a readable answer to",
    "n_judge_invalid": "judge replies that could not be read",
    "n_invalid_judge": "judge replies that could not be read",
    "judge_invalid_rate": "share of judge replies that could not be read",
    "n_invalid_reply": "model replies that could not be read",
    "n_invalid_replies": "model replies that could not be read",
    "keyword_judge_accuracy": "share of replies on which the keyword rule and the judge agree",
    "keyword_judge_kappa": "Cohen's kappa between the keyword rule and the judge",
    "keyword_judge_n": "replies both the keyword rule and the judge scored",
}

_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")


@cache
def _pattern(template: str) -> re.Pattern[str]:
    parts = _PLACEHOLDER.split(template)  # literal, name, literal, name, ...
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+)" for i, p in enumerate(parts))
    return re.compile(f"^{regex}$")


def _words(text: str) -> str:
    return text.replace("_", " ")


def label_in(labels: Mapping[str, str], key: str, *, templates: bool = True) -> str | None:
    """`key`'s label in one table: its own entry, else (with `templates`) the template that matches it with the
    most literal text (`{split}_n_crisis_items` before `{split}_n_{category}`), its placeholders filled in."""
    if key in labels:
        return labels[key]
    best: tuple[int, str] | None = None
    for template, label in labels.items() if templates else ():
        if "{" not in template:
            continue
        match = _pattern(template).match(key)
        literal = len(_PLACEHOLDER.sub("", template))
        if match and (best is None or literal > best[0]):
            best = (literal, label.format(**{k: _words(v) for k, v in match.groupdict().items()}))
    return None if best is None else best[1]


def declared_labels(subtask_id: str) -> dict[str, str]:
    """The labels a sub-task declares, its base classes' first and its own over them."""
    cls = lookup(subtask_id)
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__ if cls is not None else ()):
        out.update(vars(klass).get("metric_labels") or {})
    return out


def metric_label(subtask_id: str, key: str, metrics: Mapping[str, Any] | None = None) -> str | None:
    """What the figure `key` of the sub-task `subtask_id` is, in words; None for a figure nobody labelled."""
    own = (metrics or {}).get("metric_labels")
    tables = (own if isinstance(own, Mapping) else {}, declared_labels(subtask_id), SHARED)
    # a name given in full anywhere (`n_replies`) before a template that would also match it (`n_{category}`)
    for templates in (False, True):
        for table in tables:
            label = label_in(table, key, templates=templates)
            if label is not None:
                return label
    return None


def metric_labels(subtask_id: str, metrics: Mapping[str, Any] | None) -> dict[str, str]:
    """Every labelled figure of one result's `metrics`, by key (the report's metrics table)."""
    return {k: label for k in (metrics or {}) if (label := metric_label(subtask_id, k, metrics)) is not None}
