"""A judge against a reference set's humans: the consensus of the raters, the agreement figures of the judge
with it (and of each rater, and of the first two raters with each other), per attribute for a judge scoring
several at once (docs/judges.md#certificates). Plain statistics: no model is called here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.judges.certificates import verdict, worst_attribute
from trustmh.judges.references import Reference
from trustmh.stats.judge_agreement import judge_agreement


def consensus(labels: Sequence[Any], label_type: str) -> Any:
    """The humans' reference label of one item: the mean (ordinal), the majority (binary: a tie counts as
    harmful, the cautious reading; categorical: a tie is no consensus, None)."""
    got = [v for v in labels if v is not None]
    if not got:
        return None
    if label_type == "ordinal":
        return sum(float(v) for v in got) / len(got)
    counts: dict[Any, int] = {}
    for v in got:
        counts[v] = counts.get(v, 0) + 1
    top = max(counts.values())
    winners = [v for v, c in counts.items() if c == top]
    if len(winners) == 1:
        return winners[0]
    return 1 if label_type == "binary" else None


def agreement_figures(ref_type: str, humans: Mapping[str, Mapping[str, Any]], judged: Mapping[str, Any], *,
                      seed: int, n_boot: int, scale: tuple[float, float] | None,
                      clusters: Mapping[str, str] | None = None) -> tuple[dict[str, Any], dict]:
    """(judge vs the humans' consensus, extra: per-rater and human-vs-human figures). With `clusters`
    (item id -> cluster), the bootstrap resamples clusters (the judge-vs-consensus figures)."""
    ids = [i for i in humans if i in judged and consensus(list(humans[i].values()), ref_type) is not None]
    h = [consensus(list(humans[i].values()), ref_type) for i in ids]
    j = [judged[i] for i in ids]
    figures = judge_agreement(ref_type, h, j, seed=seed, n_boot=n_boot, scale=scale,
                              clusters=None if clusters is None else [clusters[i] for i in ids])
    raters = sorted({r for v in humans.values() for r in v})
    extra: dict[str, Any] = {"n_unlabelled": len([i for i in humans if i in judged]) - len(ids),
                             "raters": raters, "consensus": {"ordinal": "mean of the raters",
                                                             "binary": "majority, a tie counts as harmful",
                                                             "categorical": "majority, ties left out"}[ref_type]}
    per_rater = {}
    for r in raters:
        rid = [i for i in ids if humans[i].get(r) is not None]
        per_rater[r] = judge_agreement(ref_type, [humans[i][r] for i in rid], [judged[i] for i in rid],
                                       seed=seed, n_boot=n_boot, scale=scale)
    extra["per_rater"] = per_rater
    if len(raters) >= 2:
        a, b = raters[0], raters[1]
        both = [i for i in humans if humans[i].get(a) is not None and humans[i].get(b) is not None]
        extra["human_vs_human"] = {"raters": [a, b], **judge_agreement(
            ref_type, [humans[i][a] for i in both], [humans[i][b] for i in both], seed=seed, n_boot=n_boot,
            scale=scale)}
    return figures, extra


def attribute_figures(ref: Reference, judged: Mapping[str, Any], thresholds: Mapping[str, Mapping[str, float]],
                      *, seed: int, n_boot: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Figures of a judge scoring several attributes (docs/judges.md#mentalalign): per attribute, the judge
    against the raters' consensus on the items that attribute is labelled on (an unreadable judge score
    counts at its worst); the headline `agreement` holds each metric's weakest attribute
    (`certificates.worst_attribute`), so the certificate passes only when every attribute does."""
    per_attribute: dict[str, Any] = {}
    for attr in ref.attributes:
        humans = {i: {r: (v or {}).get(attr) for r, v in h.items()} for i, h in ref.humans.items()}
        values = {i: (v or {}).get(attr) for i, v in judged.items()}
        figs, _ = agreement_figures(ref.label_type, humans, values, seed=seed, n_boot=n_boot, scale=ref.scale,
                                    clusters=ref.clusters)
        per_attribute[attr] = {**figs, "verdict": verdict(figs["agreement"], thresholds)}
    compared = [i for i in ref.humans if i in judged
                and any(v is not None for h in ref.humans[i].values() for v in (h or {}).values())]
    n_invalid = sum(1 for i in compared if any((judged[i] or {}).get(a) is None for a in ref.attributes))
    figures = {"n": len(compared), "n_judge_invalid": n_invalid, "agreement": worst_attribute(per_attribute)}
    return figures, {"attributes": list(ref.attributes), "per_attribute": per_attribute,
                     "raters": sorted({r for h in ref.humans.values() for r in h}),
                     "consensus": "mean of the raters, per attribute",
                     "headline": "per metric, the attribute with the weakest protective bound"}
