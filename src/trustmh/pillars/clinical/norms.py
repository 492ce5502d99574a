"""Published SIRI-2 totals of human groups (and of three chat tools), with their sources.

Figures only (group, mean total, and SD and n where the source gives them), as compiled in the
mental-health-benchmark-tutorial repository (MIT) from McBain et al. (2025, Table 1) and the papers below; the
group labels are trustmh's. They were not re-checked against each paper: read them as the literature's
figures, each traceable through its citation. Lower is closer to the expert panel.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPILED_FROM = ("figures compiled in MattMatt27/mental-health-benchmark-tutorial (src/siri2_scoring.py, MIT) "
                 "from McBain et al. (2025) Table 1 and the papers cited; not re-checked against each paper")

CITATIONS = {
    "Neimeyer & Bonnelle 1997": "Neimeyer, R. A., & Bonnelle, K. (1997). The Suicide Intervention Response "
                                "Inventory: A revision and validation. Death Studies, 21(1), 59-81.",
    "Morriss et al. 1999": "Morriss, R., et al. (1999). Journal of Affective Disorders, 52(1-3), 77-83.",
    "Brown & Range 2005": "Brown, S. D., & Range, L. M. (2005). Death Studies, 29(3), 207-216.",
    "Simpson et al. 2007": "Simpson, G., Franke, C., & Gillett, L. (2007). Crisis, 28(1), 35-43.",
    "Palmieri et al. 2008": "Palmieri, G., et al. (2008). Archives of Suicide Research, 12(3), 232-237.",
    "Scheerder et al. 2010": "Scheerder, G., et al. (2010). Suicide and Life-Threatening Behavior, 40(2), "
                             "115-124.",
    "Fujisawa et al. 2013": "Fujisawa, D., et al. (2013). Academic Psychiatry, 37(6), 402-407.",
    "Mackelprang et al. 2014": "Mackelprang, J. L., et al. (2014). Training and Education in Professional "
                               "Psychology, 8(2), 136-142.",
    "Shannonhouse et al. 2017a": "Shannonhouse, L., et al. (2017). Journal of Counseling & Development, 95(1), "
                                 "3-13.",
    "Shannonhouse et al. 2017b": "Shannonhouse, L., et al. (2017). Journal of American College Health, 65(7), "
                                 "450-456.",
    "Kawashima et al. 2020": "Kawashima, Y., et al. (2020). Psychiatry and Clinical Neurosciences, 74(6), "
                             "362-370.",
    "Skruibis et al. 2021": "Skruibis, P., et al. (2021). Death Studies, 45(7), 578-582.",
    "Rimkevičienė et al. 2022": "Rimkevičienė, J., et al. (2022). Death Studies, 46(8), 2018-2024.",
    "McBain et al. 2025": "McBain, R. K., et al. (2025). Competency of large language models in evaluating "
                          "appropriate responses to suicidal ideation. Journal of Medical Internet Research, 27, "
                          "e67891.",
}


@dataclass(frozen=True)
class NormGroup:
    group: str
    total: float
    source: str  # a key of CITATIONS
    sd: float | None = None
    n: int | None = None
    kind: str = "human"  # "human" | "chat tool" (a chat product rated by McBain et al.)

    def to_json(self) -> dict[str, object]:
        return {"group": self.group, "total": self.total, "sd": self.sd, "n": self.n, "kind": self.kind,
                "source": self.source, "citation": CITATIONS[self.source]}


NORMS: tuple[NormGroup, ...] = (
    NormGroup("Introductory psychology students", 70.36, "Neimeyer & Bonnelle 1997"),
    NormGroup("Master's-level counsellors, before training", 54.7, "Neimeyer & Bonnelle 1997"),
    NormGroup("Master's-level counsellors, after training", 41.0, "Neimeyer & Bonnelle 1997"),
    NormGroup("Front-line health workers, before training", 56.8, "Morriss et al. 1999"),
    NormGroup("Front-line health workers, after training", 46.4, "Morriss et al. 1999"),
    NormGroup("Undergraduates", 100.09, "Brown & Range 2005", sd=24.19, n=277),
    NormGroup("Rehabilitation and disability staff, after training", 55.3, "Simpson et al. 2007", sd=21.5, n=30),
    NormGroup("Psychiatrists (Italy)", 55.7, "Palmieri et al. 2008", sd=15.7, n=38),
    NormGroup("Emergency physicians (Italy)", 63.9, "Palmieri et al. 2008", sd=15.1, n=30),
    NormGroup("Emergency nurses (Italy)", 70.6, "Palmieri et al. 2008", sd=22.8, n=30),
    NormGroup("Psychiatric nurses (Italy)", 71.3, "Palmieri et al. 2008", sd=20.6, n=34),
    NormGroup("General practitioners (Italy)", 91.1, "Palmieri et al. 2008", sd=24.1, n=50),
    NormGroup("Medical students (Italy)", 101.1, "Palmieri et al. 2008", sd=20.5, n=50),
    NormGroup("Community mental-health staff", 47.4, "Scheerder et al. 2010"),
    NormGroup("Crisis-line volunteers", 47.5, "Scheerder et al. 2010"),
    NormGroup("General practitioners (Belgium)", 51.1, "Scheerder et al. 2010"),
    NormGroup("Hospital nurses", 54.4, "Scheerder et al. 2010"),
    NormGroup("Second-year medical residents", 68.2, "Fujisawa et al. 2013"),
    NormGroup("Clinical psychology doctoral students", 45.4, "Mackelprang et al. 2014"),
    NormGroup("School staff (K-12), before training", 52.9, "Shannonhouse et al. 2017a"),
    NormGroup("School staff (K-12), after training", 49.9, "Shannonhouse et al. 2017a"),
    NormGroup("College staff, before training", 52.9, "Shannonhouse et al. 2017b"),
    NormGroup("College staff, after training", 50.1, "Shannonhouse et al. 2017b"),
    NormGroup("Clinical psychologists (Japan)", 48.8, "Kawashima et al. 2020"),
    NormGroup("Nurses (Japan)", 61.3, "Kawashima et al. 2020"),
    NormGroup("Social workers (Japan)", 62.3, "Kawashima et al. 2020"),
    NormGroup("Helpline volunteers (Lithuania), before training", 75.84, "Skruibis et al. 2021", sd=21.31, n=90),
    NormGroup("Helpline volunteers (Lithuania), after training", 55.04, "Skruibis et al. 2021", sd=13.02, n=90),
    NormGroup("ASIST trainees (Lithuania), before training", 69.3, "Rimkevičienė et al. 2022", sd=26.57, n=248),
    NormGroup("ASIST trainees (Lithuania), after training", 68.32, "Rimkevičienė et al. 2022", sd=25.77, n=248),
    NormGroup("Gemini 1.5 Pro (chat tool)", 54.52, "McBain et al. 2025", kind="chat tool"),
    NormGroup("ChatGPT-4o (chat tool)", 45.71, "McBain et al. 2025", kind="chat tool"),
    NormGroup("Claude 3.5 Sonnet (chat tool)", 36.65, "McBain et al. 2025", kind="chat tool"),
)


def norms_json() -> list[dict[str, object]]:
    return [g.to_json() for g in sorted(NORMS, key=lambda g: g.total)]
