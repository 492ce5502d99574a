"""`default` mode (docs/align.md#default-mode): the improved analysis.

1. valid data only (robust judge parser; human 0/6/null invalid; misaligned rows excluded; all counted);
2. response-level agreement is primary (items = valid (conversation, source) pairs), model-level secondary
   with Spearman/Kendall of the source ranking (with and without `original`);
3. analytic McGraw–Wong CIs;
4. a cluster bootstrap over conversations computed from sufficient statistics (`W @ stats`) — every
   statistic on the same replicates;
5. weighted κ (quadratic primary, linear) and ordinal Krippendorff α;
6. absolute thresholds on the lower bound of response-level ICC(A,1), from a versioned constant;
7. label stability over seeds; 8. self-preference.
"""
# ruff: noqa: E741 - `h`/`l` (human/LLM) are the spec's names (docs/align.md#align)

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from trustmh.align.faithful import STABILITY_UNSTABLE_BELOW, pooled_pair_stats, stability_summary
from trustmh.pillars.mentalbench.align_data import AlignData
from trustmh.pillars.mentalbench.ratings import GROUPS
from trustmh.stats.agreement import (
    cohen_kappa,
    cohen_kappa_from_table,
    koo_li_band,
    kripp_alpha_ordinal_from_counts,
)
from trustmh.stats.bootstrap import cluster_draw_counts, percentile_ci_nan
from trustmh.stats.icc import anova_two_way, icc_a1, icc_analytic_ci, icc_c1, icc_k2_from_sums

# Written before any results were seen; never derived from data. Bump the version on any change.
THRESHOLDS: dict[str, Any] = {
    "version": "trustmh-align-thresholds/1",
    "basis": "Koo & Li (2016) bands applied to the lower 95% bound of the response-level ICC(A,1)",
    "statistic": "a1_lo (response level, cluster bootstrap percentile)",
    "trusted": 0.75,
    "supervised": 0.50,
    "calibrate_abs_bias": 0.25,
}
TRUST_LABELS = ("trusted", "supervised", "not_trusted")
SCALE = [1, 2, 3, 4, 5]


@dataclass
class DefaultConfig:
    """Each docs/align.md#default-mode change can be switched off."""

    valid_only: bool = True  # robust judge parser, human 0/6/null invalid (else strict scores)
    drop_misaligned: bool = True  # exclude rows whose whitespace-normalised contexts differ
    self_exclusion: bool = True  # judges never rate their own source (self-preference reported apart)
    n_boot: int = 1000
    stability_seeds: int = 200
    thresholds: dict[str, Any] = field(default_factory=lambda: dict(THRESHOLDS))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def half_up(x: np.ndarray) -> np.ndarray:
    """Round half up (np.rint rounds half to even, which would bin 2.5 as 2 and 3.5 as 4)."""
    return np.floor(np.asarray(x, float) + 0.5)


def trust_label(a1_lo: float, thresholds: dict[str, Any] = THRESHOLDS) -> str | None:
    if a1_lo is None or not np.isfinite(a1_lo):
        return None
    if a1_lo >= thresholds["trusted"]:
        return "trusted"
    if a1_lo >= thresholds["supervised"]:
        return "supervised"
    return "not_trusted"


def trust_codes(a1_lo: np.ndarray, thresholds: dict[str, Any] = THRESHOLDS) -> np.ndarray:
    x = np.asarray(a1_lo, float)
    out = np.where(x >= thresholds["trusted"], 0, np.where(x >= thresholds["supervised"], 1, 2))
    return np.where(np.isfinite(x), out, -1)


# ---------------------------------------------------------------------------------------------------------
# Ordinal statistics from 5 × 5 count tables, vectorised over leading axes (replicates × cells)
# ---------------------------------------------------------------------------------------------------------

def _pct(reps: np.ndarray, level: float = 0.95, min_valid: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CI over axis 0 (replicates) ignoring NaN; negative values kept."""
    lo, hi = percentile_ci_nan(np.asarray(reps, float), level, min_valid=min_valid, axis=0)
    return np.asarray(lo, float), np.asarray(hi, float)


def _icc_from_totals(T6: np.ndarray) -> tuple[np.ndarray, ...]:
    """(…, 6) totals [N, Σh, Σl, Σh², Σl², Σhl] → (icc_c1, icc_a1, ms_r, ms_c, ms_e)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return tuple(np.asarray(x, float) for x in icc_k2_from_sums(
            T6[..., 0], T6[..., 1], T6[..., 2], T6[..., 3], T6[..., 4], T6[..., 5]))


def _moments_from_totals(T6: np.ndarray) -> dict[str, np.ndarray]:
    N, Sh, Sl, Shh, Sll, Shl = (T6[..., i] for i in range(6))
    with np.errstate(invalid="ignore", divide="ignore"):
        mh, ml = Sh / N, Sl / N
        vh = (Shh - N * mh * mh) / (N - 1)
        vl = (Sll - N * ml * ml) / (N - 1)
        cov = (Shl - N * mh * ml) / (N - 1)
        bias = ml - mh
        ccc = 2 * cov / (vh + vl + bias ** 2)  # = 2 r s_h s_l / (...) with ddof 1 (authors' variant)
    return {"bias": bias, "ccc": ccc}


# ---------------------------------------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------------------------------------

@dataclass
class DefaultInputs:
    H: np.ndarray  # (I, S, A) human scores used
    Ls: dict[str, np.ndarray]  # judge → (I, S, A)
    item_keep: np.ndarray  # (I,) bool
    misaligned: np.ndarray  # (I,) bool (whitespace-normalised contexts differ)


def prepare(data: AlignData, cfg: DefaultConfig) -> DefaultInputs:
    H = data.human.score if cfg.valid_only else data.human.strict
    Ls = {j: (p.score if cfg.valid_only else p.strict) for j, p in data.judges.items()}
    _, mis = data.context_mismatch()
    keep = ~mis if cfg.drop_misaligned else np.ones(len(data.items), bool)
    return DefaultInputs(H, Ls, keep, mis)


def run_default(data: AlignData, cfg: DefaultConfig | None = None, *, seed: int = 42,
                stability_seeds: Sequence[int] | None = None) -> dict[str, Any]:
    cfg = cfg or DefaultConfig()
    inp = prepare(data, cfg)
    judges = list(data.judges)
    attrs = list(data.attributes)
    S = len(data.sources)
    items = np.flatnonzero(inp.item_keep)
    C = items.size
    H = inp.H[items]  # (C, S, A)
    cells = [(j, a) for j in judges for a in range(len(attrs))]
    n_cells = len(cells)
    incl = np.ones((n_cells, S), bool)  # source included in the response/model-level analysis
    family_idx: list[list[int]] = []  # per cell: the sources of the judge's family (self-preference)
    pairs_used = {j: np.zeros(S, int) for j in judges}
    # Per (conversation, source, cell) sufficient statistics.
    stat6 = np.zeros((C, S, n_cells, 6))
    tables = np.zeros((C, n_cells, 25))
    for k, (j, a) in enumerate(cells):
        L = inp.Ls[j][items]
        family = data.excluded_family(j)
        family_idx.append([data.sources.index(src) for src in family])
        if cfg.self_exclusion:
            for src in family:  # by family: a judge never rates replies of its own (or a member's) family
                incl[k, data.sources.index(src)] = False
        h, l = H[:, :, a], L[:, :, a]
        m = np.isfinite(h) & np.isfinite(l)
        h0, l0 = np.where(m, h, 0.0), np.where(m, l, 0.0)
        stat6[:, :, k] = np.stack([m.astype(float), h0, l0, h0 * h0, l0 * l0, h0 * l0], axis=-1)
        mi = m & incl[k][None, :]
        pairs_used[j] += mi.sum(axis=0)
        # 5 × 5 table per conversation of the included pairs. κ and α need categories: a real-valued
        # rating (a mean or median ensemble, several human raters averaged) is binned half up (3.5 → 4).
        hi = np.clip(half_up(h0).astype(int), 1, 5) - 1
        li = np.clip(half_up(l0).astype(int), 1, 5) - 1
        code = hi * 5 + li
        for s in range(S):
            if incl[k, s]:
                np.add.at(tables[:, k], (np.flatnonzero(mi[:, s]), code[mi[:, s], s]), 1.0)
    resp6 = np.einsum("cskf,ks->ckf", stat6, incl.astype(float))  # (C, cells, 6) response-level
    M = np.concatenate([resp6.reshape(C, -1), stat6[..., :3].reshape(C, -1), tables.reshape(C, -1)], axis=1)
    W = np.asarray(cluster_draw_counts(C, cfg.n_boot, seed), float)  # (B, C)
    R = W @ M  # (B, ·): every statistic from the same replicates
    B = cfg.n_boot
    off1 = n_cells * 6
    off2 = off1 + S * n_cells * 3
    R6 = R[:, :off1].reshape(B, n_cells, 6)
    Rs3 = R[:, off1:off2].reshape(B, S, n_cells, 3)
    Rt = R[:, off2:].reshape(B, n_cells, 5, 5)

    rc1, ra1, *_ = _icc_from_totals(R6)  # (B, cells)
    mom = _moments_from_totals(R6)
    with np.errstate(invalid="ignore", divide="ignore"):
        rkq = np.asarray(cohen_kappa_from_table(Rt, "quadratic"), float)
        ralpha = np.asarray(kripp_alpha_ordinal_from_counts(Rt), float)
    with np.errstate(invalid="ignore", divide="ignore"):
        src_bias = (Rs3[..., 2] - Rs3[..., 1]) / Rs3[..., 0]  # (B, S, cells)
        src_h = Rs3[..., 1] / Rs3[..., 0]
        src_l = Rs3[..., 2] / Rs3[..., 0]

    c1_lo, c1_hi = _pct(rc1)
    a1_lo, a1_hi = _pct(ra1)
    b_lo, b_hi = _pct(mom["bias"])
    ccc_lo, ccc_hi = _pct(mom["ccc"])
    kq_lo, kq_hi = _pct(rkq)
    al_lo, al_hi = _pct(ralpha)

    total_tables = tables.sum(axis=0).reshape(n_cells, 5, 5)
    src_tot = stat6[..., :3].sum(axis=0)  # (S, cells, 3)
    rows: list[dict[str, Any]] = []
    ci_resp = f"cluster_bootstrap_percentile(conversations, B={B})"
    labels_reported = np.full(n_cells, -1)
    pairs: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for k, (j, a) in enumerate(cells):
        attr = attrs[a]
        L = inp.Ls[j][items][:, :, a]
        h_all = H[:, :, a]
        m = np.isfinite(h_all) & np.isfinite(L) & incl[k][None, :]
        h, l = h_all[m], L[m]
        pairs[(j, attr)] = (h, l)
        base = {"judge": j, "attribute": attr, "group": GROUPS.get(attr), "mode": "default",
                "excluded_source": ("+".join(data.excluded_family(j)) or None) if cfg.self_exclusion else None}
        # --- response level (primary)
        r: dict[str, Any] = dict(base, level="response", ci_method=ci_resp)
        r["n_sources"] = int((m.any(axis=0)).sum())
        r.update(pooled_pair_stats(h, l))
        # Bland–Altman bias CI is replaced by the cluster-bootstrap one (pairs within a conversation are
        # not independent); the limits of agreement stay.
        r.update(bias_lo=float(b_lo[k]), bias_hi=float(b_hi[k]))
        if h.size >= 2:
            Y = np.column_stack([h, l])
            with np.errstate(invalid="ignore", divide="ignore"):
                ms_r, ms_c, ms_e = (float(x) for x in anova_two_way(Y))
                r.update(icc_c1=float(icc_c1(Y)), icc_a1=float(icc_a1(Y)), ms_r=ms_r, ms_c=ms_c, ms_e=ms_e)
                lo3, hi3 = icc_analytic_ci(Y, "ICC3")
                lo2, hi2 = icc_analytic_ci(Y, "ICC2")
            r.update(c1_lo_analytic=float(lo3), c1_hi_analytic=float(hi3),
                     a1_lo_analytic=float(lo2), a1_hi_analytic=float(hi2))
            hi_i = half_up(h).astype(int)
            li_i = half_up(l).astype(int)
            r["kappa_quadratic"] = cohen_kappa(hi_i, li_i, weights="quadratic", labels=SCALE)
            r["kappa_linear"] = cohen_kappa(hi_i, li_i, weights="linear", labels=SCALE)
            r["kripp_alpha_ordinal"] = float(kripp_alpha_ordinal_from_counts(total_tables[k]))
        r.update(c1_lo=float(c1_lo[k]), c1_hi=float(c1_hi[k]), a1_lo=float(a1_lo[k]), a1_hi=float(a1_hi[k]),
                 n_boot_valid_c1=int(np.isfinite(rc1[:, k]).sum()),
                 n_boot_valid_a1=int(np.isfinite(ra1[:, k]).sum()),
                 c1_width=float(c1_hi[k] - c1_lo[k]),
                 ccc_lo=float(ccc_lo[k]), ccc_hi=float(ccc_hi[k]),
                 kappa_quadratic_lo=float(kq_lo[k]), kappa_quadratic_hi=float(kq_hi[k]),
                 kripp_alpha_ordinal_lo=float(al_lo[k]), kripp_alpha_ordinal_hi=float(al_hi[k]))
        if r.get("icc_a1") is not None and np.isfinite(r["icc_a1"]):
            r["koo_li_band"] = koo_li_band(r["icc_a1"])
        r["trust_label"] = trust_label(r["a1_lo"], cfg.thresholds)
        labels_reported[k] = trust_codes(np.array([r["a1_lo"]]), cfg.thresholds)[0]
        bias, blo, bhi = r.get("bias"), r["bias_lo"], r["bias_hi"]
        if bias is not None and np.isfinite(blo) and np.isfinite(bhi):
            r["calibrate"] = bool((blo > 0 or bhi < 0) and abs(bias) >= cfg.thresholds["calibrate_abs_bias"])
        # Self-preference: mean bias on the sources of the judge's own family (or of its members' families)
        # minus the mean bias on the other sources.
        fam = [s for s in family_idx[k] if src_tot[s, k, 0] > 0]
        if fam:
            others = [s for s in range(S) if s not in family_idx[k]]
            with np.errstate(invalid="ignore", divide="ignore"):
                pt_b = (src_tot[:, k, 2] - src_tot[:, k, 1]) / src_tot[:, k, 0]
                rep = (np.nanmean(src_bias[:, fam, k], axis=1)
                       - np.nanmean(src_bias[:, others, k], axis=1))
            sp_lo, sp_hi = _pct(rep[:, None])
            r.update(self_preference=float(np.nanmean(pt_b[fam]) - np.nanmean(pt_b[others])),
                     self_preference_lo=float(sp_lo[0]), self_preference_hi=float(sp_hi[0]))
        rows.append(r)
        # --- model level (secondary, "leaderboard agreement")
        mr: dict[str, Any] = dict(base, level="model", ci_method=ci_resp)
        keep_s = [s for s in range(S) if incl[k, s] and src_tot[s, k, 0] > 0]
        mr["n_sources"] = len(keep_s)
        mr["n_pairs"] = int(src_tot[keep_s, k, 0].sum()) if keep_s else 0
        if len(keep_s) >= 2:
            Hm = src_tot[keep_s, k, 1] / src_tot[keep_s, k, 0]
            Lm = src_tot[keep_s, k, 2] / src_tot[keep_s, k, 0]
            Y = np.column_stack([Hm, Lm])
            with np.errstate(invalid="ignore", divide="ignore"):
                ms_r, ms_c, ms_e = (float(x) for x in anova_two_way(Y))
                mr.update(icc_c1=float(icc_c1(Y)), icc_a1=float(icc_a1(Y)), ms_r=ms_r, ms_c=ms_c, ms_e=ms_e)
                lo3, hi3 = icc_analytic_ci(Y, "ICC3")
                lo2, hi2 = icc_analytic_ci(Y, "ICC2")
                Yb = np.stack([src_h[:, keep_s, k], src_l[:, keep_s, k]], axis=-1)  # (B, n, 2)
                bc = np.asarray(icc_c1(Yb), float)
                ba = np.asarray(icc_a1(Yb), float)
            bl, bh = _pct(np.column_stack([bc, ba]))
            mbias = src_bias[:, keep_s, k].mean(axis=1)
            mb_lo, mb_hi = _pct(mbias[:, None])
            mr.update(c1_lo_analytic=float(lo3), c1_hi_analytic=float(hi3), a1_lo_analytic=float(lo2),
                      a1_hi_analytic=float(hi2), c1_lo=float(bl[0]), c1_hi=float(bh[0]), a1_lo=float(bl[1]),
                      a1_hi=float(bh[1]), n_boot_valid_c1=int(np.isfinite(bc).sum()),
                      n_boot_valid_a1=int(np.isfinite(ba).sum()), c1_width=float(bh[0] - bl[0]),
                      human_mean=float(Hm.mean()), llm_mean=float(Lm.mean()),
                      model_means_human=float(Hm.mean()), model_means_llm=float(Lm.mean()),
                      model_means_bias=float((Lm - Hm).mean()), bias=float((Lm - Hm).mean()),
                      bias_lo=float(mb_lo[0]), bias_hi=float(mb_hi[0]))
            if np.isfinite(mr["icc_a1"]):
                mr["koo_li_band"] = koo_li_band(mr["icc_a1"])
            names = [data.sources[s] for s in keep_s]
            with np.errstate(invalid="ignore", divide="ignore"):
                mr["spearman_rho"] = float(sps.spearmanr(Hm, Lm).statistic)
                mr["kendall_tau"] = float(sps.kendalltau(Hm, Lm).statistic)
                no = [i for i, nm in enumerate(names) if nm != "original"]
                if len(no) >= 2:
                    mr["spearman_rho_no_original"] = float(sps.spearmanr(Hm[no], Lm[no]).statistic)
                    mr["kendall_tau_no_original"] = float(sps.kendalltau(Hm[no], Lm[no]).statistic)
        rows.append(mr)

    # Label stability of the trust label (docs/align.md#default-mode item 7).
    if stability_seeds is None:
        stability_seeds = range(cfg.stability_seeds)
    seeds = list(stability_seeds)
    if seeds:
        R6flat = resp6.reshape(C, -1)
        codes = np.full((len(seeds), n_cells), -1, dtype=np.int8)
        for si, s in enumerate(seeds):
            Ws = np.asarray(cluster_draw_counts(C, B, int(s)), float)
            _, a_s, *_ = _icc_from_totals((Ws @ R6flat).reshape(B, n_cells, 6))
            lo_s, _ = _pct(a_s)
            codes[si] = trust_codes(lo_s, cfg.thresholds)

        summ = stability_summary(codes, labels_reported, TRUST_LABELS)
        resp_rows = [r for r in rows if r["level"] == "response"]
        for r, st in zip(resp_rows, summ, strict=True):
            r.update(st)
    return {"rows": rows, "pairs": pairs, "pairs_used": pairs_used, "misaligned": inp.misaligned,
            "n_conversations": int(C), "n_excluded_misaligned": int((~inp.item_keep).sum()),
            "config": cfg.to_json(), "stability_unstable_below": STABILITY_UNSTABLE_BELOW}
