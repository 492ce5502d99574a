"""The judge's model as its provider named it: asked for beside answered by (a provider's silent alias update
moves a verdict while the judge asked for stays the same). Plain Python; the one home of the counting.

Each judge call of a sample notes the name the provider answered with (`ModelOutput.model`,
`trustmh.run.usage.note_judge_reported`); the sample's record keeps the counts in its metadata
(`JUDGE_REPORTED_KEY`: asked for -> answered by -> calls, one call per mark and per re-ask), results.json adds
them up per sub-task (`judges_reported`), the dossier over its items, and `trustmh compare` says when a judge
asked for under one name answered under another name in run B than in run A.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

JUDGE_REPORTED_KEY = "judge_reported"

Counts = dict[str, dict[str, int]]


def add_counts(total: Counts, counts: Any) -> Counts:
    """`counts` ({asked: {answered: calls}}, as a record holds them) added into `total`; anything else ignored
    (an older record has none)."""
    if isinstance(counts, Mapping):
        for asked, answered in counts.items():
            if isinstance(answered, Mapping):
                row = total.setdefault(str(asked), {})
                for name, n in answered.items():
                    if isinstance(n, int) and not isinstance(n, bool):
                        row[str(name)] = row.get(str(name), 0) + n
    return total


def counted(metadatas: Iterable[Mapping[str, Any] | None]) -> Counts:
    """The judges' answering names counted over records' metadata, sorted for stable files."""
    total: Counts = {}
    for metadata in metadatas:
        add_counts(total, (metadata or {}).get(JUDGE_REPORTED_KEY))
    return {asked: dict(sorted(row.items())) for asked, row in sorted(total.items())}


def answered_names(counts: Mapping[str, Mapping[str, int]] | None) -> dict[str, set[str]]:
    """{judge asked for: the names it answered under}."""
    return {str(asked): set(row) for asked, row in (counts or {}).items() if isinstance(row, Mapping)}


def reported_change(a: Mapping[str, Mapping[str, int]] | None, b: Mapping[str, Mapping[str, int]] | None
                    ) -> str | None:
    """One clause saying which judge, asked for under the same name in both runs, answered under other names in
    run B than in run A (None: none did, or a run did not record the names)."""
    names_a, names_b = answered_names(a), answered_names(b)
    changed = [f"{asked} answered as {', '.join(sorted(names_a[asked]))} in A and {', '.join(sorted(names_b[asked]))} "
               "in B" for asked in sorted(set(names_a) & set(names_b)) if names_a[asked] != names_b[asked]]
    if not changed:
        return None
    return "the judge's answering model changed (a provider alias update?): " + "; ".join(changed)


def format_counts(counts: Mapping[str, Mapping[str, int]] | None) -> str:
    """`asked → answered (n), …; …` for a page, or 'not reported'."""
    parts = [f"{asked} → " + ", ".join(f"{name} ({n})" for name, n in row.items())
             for asked, row in (counts or {}).items() if row]
    return "; ".join(parts) or "not reported"
