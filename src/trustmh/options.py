"""Every `-O key=value` option trustmh knows, where it applies, and how its value is checked.

An unknown key is an error that lists the keys known for the chosen sub-tasks (a typo must never be
accepted silently), and a value that must be a number is checked before any model call.
`tests/test_options.py` reads the source and fails when a key is read somewhere but not declared here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trustmh.core import MAX_ATTEMPTS, TrustmhError

# Options of every run (the glue, the judges, the run itself).
GLOBAL: dict[str, str] = {
    "max_tokens_cap": "cap on the model under test's reply tokens (the bundled model: 192, the offline demo 64)",
    "judge_max_tokens": "token limit of every judge reply (default: each judge's own, sized to its schema)",
    "judge_text_chars": "longest free-text field (e.g. rationale) a JSON-mode judge may write (the offline demo "
                        "uses 80)",
    "reasks": "re-asks of the model under test after an unparseable reply, 0-2 (default 2; the offline demo "
              "uses 0: the reply then counts as invalid)",
    "judge_json_mode": "1/0: ask judges for their exact JSON schema (default: on for the bundled model)",
    "ensemble": "how several --judge combine: vote (default), median or mean",
    "min_valid": "ensemble members that must give a valid judgement (default: all)",
    "allow_sample": "1: score a fallback sample (e.g. 10-row ELEPHANT) with status 'sample'",
    "judges": "ensemble members (set by repeating --judge)",
    "model": "label of the model under test (set by trustmh)",
    "patient": "label of the simulated patient's model (set by trustmh from --patient)",
}

# Options by sub-task module (trustmh.subtasks.<module>).
BY_MODULE: dict[str, dict[str, str]] = {
    "reliability_mcq": {"usmle_mental_path": "USMLE-Mental file", "emobench_eu_path": "EmoBench EU file"},
    "reliability_gen": {
        "d4_path": "D4 (gated) file", "swmh_path": "SWMH (gated) file", "diagnosis_path": "any diagnosis file",
        "diagnosis_name": "name of that dataset", "text_field": "its text column", "turns_field": "its turns field",
        "label_field": "its label column", "speaker_key": "speaker key in turns", "content_key": "content key",
        "lowercase_labels": "1: lower-case labels", "split": "split to read", "esconv_path": "ESConv.json",
        "esconv_processed_path": "processed ESConv split", "cpsycoune_path": "CPsyCounE folder",
    },
    "crisis": {"crisis_dir": "local copy of the crisis repository", "cssrs_path": "C-SSRS CSV",
               "protocol_path": "the study's protocol.csv", "rubric": "trustmh or upstream"},
    "safety": {"psyharm_path": "PsyHarm CSV", "jailbreakmh_path": "JailbreakMH CSV"},
    "fairness": {"esconv_fair_path": "ESConv_fair file", "fairness_contexts": "contexts to use",
                 "fairness_escalation_items": "crisis items of the escalation-parity extra (0: skip it)",
                 "fairness_values": "identity values per attribute, in list order (default all; the offline "
                                    "demo uses 2)"},
    "privacy": {"confaide_dir": "ConfAIde folder", "psyleak_path": "PsyLeak file",
                "psyleak_control_path": "PsyLeak control file", "tier2_limit": "tier-2 items",
                "awareness_samples": "samples per awareness item", "privacy_proxy_model": "proxy model (faithful)"},
    "robustness": {"robustness_grid": "quick or full perturbation grid"},
    "sycophancy": {"oeq_path": "ELEPHANT OEQ file", "aita_path": "ELEPHANT AITA file", "pas_path": "PAS file",
                   "pas_text_field": "PAS text column", "verdict_mode": "judge or binary", "full": "1: all rows"},
    "ethics": {"trustmh_ethics_path": "EthicMH file"},
    "conversation": {"system_prompt": "file with the system prompt of the model under test (a deployed "
                                      "system's own)", "turns": "simulated-patient turns (default 10)",
                     "judge_repeats": "judge repeats (test-retest)"},
    "mentalbench": {
        "mentalbench_path": "MentalBench-100k file", "mentalalign_dir": "MentalAlign folder",
        "mentalbench_starter": "1: starter contexts", "judge_repeats": "judge repeats (test-retest)",
        "samples": "replies per context", "temperature": "generation temperature",
        "max_tokens": "generation tokens", "selection": "context selection", "skip_original": "1: no reference",
        "verify_conv_ids": "1: check ConvIDs", "faithful_clean_published": "faithful cleaning",
        "rescore": "set by rescore",
    },
}

# Values that must be whole numbers ≥ the bound.
INTEGERS: dict[str, int] = {"max_tokens_cap": 1, "judge_max_tokens": 1, "judge_text_chars": 1,
                            "fairness_escalation_items": 0, "min_valid": 1, "reasks": 0, "fairness_values": 2, "fairness_contexts": 1,
                            "tier2_limit": 1, "awareness_samples": 1, "judge_repeats": 1, "samples": 1, "turns": 1,
                            "max_tokens": 1}


def module_of(subtask_id: str) -> str:
    from trustmh.catalogue import IMPLEMENTATIONS

    return IMPLEMENTATIONS.get(subtask_id, "").split(":")[0].rsplit(".", 1)[-1]


def known_keys(subtask_ids: Iterable[str]) -> dict[str, str]:
    """The keys that mean something for these sub-tasks (robustness perturbs other sub-tasks' items, so it
    knows theirs too)."""
    keys = dict(GLOBAL)
    modules = {module_of(s) for s in subtask_ids}
    if "robustness" in modules:
        modules |= set(BY_MODULE)
    for module in modules:
        keys.update(BY_MODULE.get(module, {}))
    return keys


def check_options(options: Mapping[str, Any], subtask_ids: Iterable[str]) -> None:
    """TrustmhError for an unknown key or a malformed value, naming the option and what is accepted."""
    ids = list(subtask_ids)
    known = known_keys(ids)
    everywhere = set(GLOBAL).union(*BY_MODULE.values())
    for key, value in options.items():
        if key not in known:
            where = "for the chosen sub-tasks" if key in everywhere else "anywhere"
            raise TrustmhError(f"-O {key}: unknown option {where}; known: {', '.join(sorted(known))}")
        if key == "ensemble" and str(value) not in ("vote", "median", "mean"):
            raise TrustmhError(f"-O ensemble={value!r}: use vote, median or mean")
        if key in INTEGERS and not isinstance(value, int):
            try:
                number = int(str(value))
            except ValueError:
                raise TrustmhError(f"-O {key}={value!r}: must be a whole number") from None
            if number < INTEGERS[key]:
                raise TrustmhError(f"-O {key}={value!r}: must be at least {INTEGERS[key]}")
        if key == "reasks" and str(value).strip().lstrip("-").isdigit() and int(str(value)) > MAX_ATTEMPTS - 1:
            raise TrustmhError(f"-O reasks={value!r}: at most {MAX_ATTEMPTS - 1}")
