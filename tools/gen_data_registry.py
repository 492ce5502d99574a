"""Generate `src/trustmh/data/registry.json` (run once by hand; the output is committed).

    .venv/bin/python tools/gen_data_registry.py [--manifest ../shared/data/MANIFEST.sha256]

The sha256 of every file present in the reference data comes from its MANIFEST.sha256; the sources, pinned
commits and licences come from `shared/spec/PILLARS.md` (conventions table, §3.x, §4), `MENTALBENCH.md` §1
and `shared/data/README.md`. The package never reads the manifest at run time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "trustmh" / "data" / "registry.json"


def raw(repo: str, commit: str, path: str) -> str:
    # Paths such as "CPsyCounE/Emotion&Stress/1.json" or "Family Relationship/1.json" must be percent-encoded.
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{quote(path, safe='/')}"


PSY_EVAL = ("KaguraRuri/Psy-Eval", "173c6f454001f3494ea1f4f74d83cef65840add0")
EMOBENCH = ("Sahandfer/EmoBench", "3b4f84312541f8469e909965e1fff3691ef85c62")
CONFAIDE = ("skywalker023/confAIde", "3174c63e689226189675a740b7bf9053f10bae50")
CPSYCOUN = ("CAS-SIAT-XinHai/CPsyCoun", "1954f2e2d01d3b0f568e1673a525a6d3d9a34c03")
TRUSTMH = ("Qiyuan0130/TrustMH_Bench", "94d65dbd125bfc5df64f0530f35fe0f568a13eb7")
ESCONV = ("thu-coai/Emotional-Support-Conversation", "f262d062ad74cb39b17ea476facc81568ddcba24")
ELEPHANT = ("myracheng/elephant", "83263944cffdfd8caa48f8da2436642fd4e681bc")
CRISIS = ("ellisalicante/LLMs-Mental-Health-Crisis", "f4a70c1fd4ea6f7e09d50721065db4a4039e9fac")
# Publisher files read in place for clinical/siri2 and fairness/stigma (not in the reference data): path in the
# repository, sha256 and git blob id at the pinned commit (from a local copy of the repository at that commit),
# optional, note.
SIRI2 = ("MattMatt27/mental-health-benchmark-tutorial", "ea89f477a779492c7d8bf4b7e97f2fdba6976c87")
SIRI2_FILES = [
    ('instrument/siri2_items.json', "2916836216df3633579043c44f689f601548ee335a3f95b225ec406e1275c044",
     "ca86d5b33d5898c6d88b134d1ca0839f86573988", False, 'the SIRI-2 items (Neimeyer & Bonnelle 1997, copyrighted): read at run time, never redistributed'),
    ('instrument/siri2_expert_scores.csv', "be986b872a9ca16c1a8accaa19aa2ed2eb1393b3df44c2068a1821a16312ecbb",
     "35afa76c00de535c23b0097147c041ce64f83aa6", False, "expert suicidologists' mean and SD per reply (48 rows, item 14 absent)"),
    ('experiment-results/model_scores_by_condition.csv', "cf9bada6f99b6f478b8e54d11bbfc10be95723e2de1eec0da3252a6bba0ddaa9",
     "2a4fccbbdfde5eb7ce0e709a105178f9bd48491c", True, 'released per-item mean ratings (rescore --format siri2)'),
    ('experiment-results/siri2_total_scores.csv', "dad65803ed29bac6168a72614430c7260ecb25537105a74c8d04d6ccf28afb62",
     "d18ec3cd96a6e1c587fc38acaa0022e164e29634", True, 'released SIRI-2 totals (rescore --format siri2 compares with them)'),
    ('LICENSE', "ea85548e87684e4f1de94366a8e03341206f1400c96bdec54060f2a003724e3c",
     "e7970ae2c543bda4d488625f7a53966065bd783a", True, None),
]
MOORE = ("jlcmoore/llms-as-therapists", "743e5c2d6ceb156f9114ff405786151628aac84e")
MOORE_FILES = [
    ('data/questions.jsonl', "8288a6c7a3a5ba36dd877cd98621ca71a216efc2cccf5cae41ef37b4a773d74b",
     "5064c205f7b1d51952ee9b5baad34a64fb56e460", False, 'despite its name, the 72 vignettes (condition x race x gender x education)'),
    ('data/vignettes.jsonl', "d7f4da1d51fde5eb190006fb94077001666379052141fcf3b98690bc0bf8bb7c",
     "cf5648fc4234fe401741f50d79d429b88454b5c6", False, 'despite its name, the 14 questions with their options'),
    ('external_data/human_data_2018.csv', "59cbf7804215f99812d7a7023c58584a28ba8de0ebb6bd08c1851ce892f0aa2a",
     "531c23dfe04f480c91c284610838bd7f3cbf0adc", False, 'GSS 2018 public, percent per question and condition'),
    ('results/stigma/all_combined.csv', "fcdd2eb60bcb720b59fa3562defa4b48ca0a26cee97dc1e2a30f8e233a1beda7",
     "af43ccdda9ff070c99585e2e4ac7809354c712cf", True, 'released coded answers (rescore --format moore-stigma)'),
    ('LICENSE.md', "25761efdf8ce63e69826178f3fb250daf6f6585fd7667e670f053c755dcd2d79",
     "7779c3d2286a1afc49899625fd5b3bf4fb9ca120", True, None),
]
# Not pinned in the specs: commits at which the stored index of GitHub holds these paths.
MENTALALIGN_XLSX = ("abeerbadawi/MentalBench-Align", "2d4f8df3ad90c8e31c05a9937185d292db7254b9")
MENTALALIGN_EARLY = ("abeerbadawi/MentalBench-Align", "b4a55cadf1e61b8073866867807e0ebac2eacd6d")

LICENCE_FILE_NOTE = "licence text as found in the reference copy; read it at the source repository"

CPSY_TOPICS = [
    "Career", "Education", "Emotion&Stress", "Family Relationship", "Love&Marriage",
    "Mental Disease", "Self-growth", "Sex", "Social Relationship",
]

# (path, sha256, git blob id) at CRISIS's commit: not in the reference data
CRISIS_SAMPLED = ("data/llm_evaluator/sampled/sampled_lowest_scores_n200.json",
                  "6033be24d90369d417d31a20b153ee11a156bfa74c693ec616a0aba44818444d",
                  "4b82568faf9aa73f2165880fb8a55ae089038532")
# (repo, commit, path, git blob id): the zip is a plain git blob (not LFS) at that commit
MENTALBENCH_100K = ("abeerbadawi/MentalBench-Align", "03cfc4be2b7c181232652af304dc96d9bbcc5f8a",
                    "MentalBench-100k/MentalBench-100k.zip", "e1d5cdb70ecdec9856efac384bc5746eccb8db81")
CRISIS_PATHS = [
    "data/llm_label/gpt-4o-mini-labeled-sampled_dataset_n_2046_nPerD168_seed0-merged-labels.json",
    "data/human_label/human-labeled-sampled_dataset_n206_s42-merged_labels.json",
    "data/processed/sampled_dataset_n_200_merged_n50-noSeed_156-s42.json",
    "data/processed/sampled_dataset_n_2046_nPerD168_seed0.json",
    "data/human_label/H1_labeled_n206_s42.json",
    "data/human_label/H2_labeled_n206_s42.json",
    "data/human_label/H3_labeled_n206_s42.json",
    "data/human_label/H4_labelled_n206_s42.json",
    "data/human_label/H1_scores_n206_s42.json",
    "data/human_label/H2_scores_n206_s42.json",
    "data/llm_evaluator/protocol.csv",
]


def load_manifest(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        digest, rel = line.split(None, 1)
        out[rel.strip().removeprefix("./")] = digest
    return out


def load_pins_not_here(path: Path) -> dict[str, str]:
    """relpath -> sha256 of PINS-not-here.sha256 (`sha256  relpath  (repo@commit)`, `#` comments)."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, rel = line.split()[:2]
            out[rel] = digest
    return out


def build(manifest: dict[str, str], pins: dict[str, str] | None = None) -> list[dict]:
    pins = pins or {}
    used: set[str] = set()

    def f(relpath: str, url: str | None = None, *, optional: bool = False, archive: dict | None = None,
          member: str | None = None, known: bool = True, note: str | None = None, sha256: str | None = None,
          git_blob: str | None = None) -> dict:
        """One file; `known` = its sha256 must come from the manifest; `sha256` = known from elsewhere (a file
        not in the reference data: PINS-not-here.sha256); `git_blob` = its git blob id at the pinned commit."""
        sha = manifest.get(relpath)
        if known and sha is None:
            raise SystemExit(f"{relpath}: expected in the manifest")
        if sha is not None:
            used.add(relpath)
        elif sha256 is not None:
            sha = sha256
        entry: dict = {"relpath": relpath, "sha256": sha, "url": url}
        if git_blob is not None:
            entry["git_blob"] = git_blob
        if archive is not None:
            entry["archive_url"] = archive["url"]
            entry["member"] = member
        if optional:
            entry["optional"] = True
        if note:
            entry["note"] = note
        return entry

    def under(prefix: str) -> list[str]:
        return sorted(r for r in manifest if r.startswith(prefix))

    def licence(relpath: str) -> dict:
        return f(relpath, None, optional=True, note=LICENCE_FILE_NOTE)

    ds: list[dict] = []

    # --- Reliability -------------------------------------------------------------------------------------
    ds.append({
        "name": "usmle_mental", "option": "usmle_mental_path", "title": "USMLE-Mental (PsyEval) + Crisis Response QA",
        "licence": "MIT", "source": f"https://github.com/{PSY_EVAL[0]}",
        "notes": "MedQA-derived MCQs. The download path of Crisis_Response_QA.jsonl (datasets/) is taken from "
                 "shared/data/README.md and not otherwise confirmed; the checksum guards it.",
        "files": [
            f("external/USMLE-Mental/USMLE-mental.jsonl", raw(*PSY_EVAL, "datasets/USMLE-mental.jsonl")),
            f("external/USMLE-Mental/Crisis_Response_QA.jsonl", raw(*PSY_EVAL, "datasets/Crisis_Response_QA.jsonl"),
              optional=True),
            licence("external/USMLE-Mental/LICENSE"),
        ],
    })
    ds.append({
        "name": "emobench_eu", "option": "emobench_eu_path", "title": "EmoBench Emotional Understanding (EU) and Application (EA)",
        "licence": "MIT", "source": f"https://github.com/{EMOBENCH[0]}",
        "notes": "EA.jsonl is registered but unused.",
        "files": [
            f("external/EmoBench-EU/EU.jsonl", raw(*EMOBENCH, "data/EU.jsonl")),
            f("external/EmoBench-EU/EA.jsonl", raw(*EMOBENCH, "data/EA.jsonl"), optional=True),
            licence("external/EmoBench-EU/LICENSE"),
        ],
    })
    ds.append({
        "name": "esconv_processed", "option": "esconv_processed_path", "title": "ESConv processed dev/test splits with strategy labels (TSV)",
        "licence": "CC BY-NC 4.0", "source": f"https://github.com/{ESCONV[0]}",
        "notes": "Non-commercial, research use only. Offline/test fallback for reliability/emotional_support "
                 "(results record dataset_variant: processed_test_split).",
        "files": [
            f("external/ESConv/devWithStrategy_short.tsv", raw(*ESCONV, "codes/dataset/devWithStrategy_short.tsv")),
            f("external/ESConv/testWithStrategy_short.tsv", raw(*ESCONV, "codes/dataset/testWithStrategy_short.tsv")),
            licence("external/ESConv/LICENSE"),
        ],
    })
    ds.append({
        "name": "esconv", "option": "esconv_path", "title": "ESConv full dialogues (ESConv.json, 1,300 dialogues)",
        "licence": "CC BY-NC 4.0", "source": f"https://github.com/{ESCONV[0]}",
        "notes": "Non-commercial, academic use only. Download only; no sha256 is known in advance: the hash is "
                 "pinned at the first verified download (trust on first use, stored in the cache's pins.json) "
                 "and every later read or download is checked against it.",
        "files": [f("external/ESConv/ESConv.json", raw(*ESCONV, "ESConv.json"), known=False)],
    })
    ds.append({
        "name": "cpsycoune", "option": "cpsycoune_path", "title": "CPsyCounE: 45 Chinese counselling dialogues (9 topics x 5)",
        "licence": "CC BY-SA 4.0", "source": f"https://github.com/{CPSYCOUN[0]}",
        "notes": "The repository says CC BY 4.0, the dataset card CC BY-SA 4.0: treated as share-alike.",
        "files": [
            f(f"external/CPsyCounE/{t}/{n}.json", raw(*CPSYCOUN, f"CPsyCounE/{t}/{n}.json"))
            for t in CPSY_TOPICS for n in range(1, 6)
        ] + [licence("external/CPsyCounE/LICENSE")],
    })

    # --- Crisis --------------------------------------------------------------------------------------------
    ds.append({
        "name": "crisis", "title": "LLMs-Mental-Health-Crisis (Between Help and Harm): crisis labels and ratings",
        "licence": "none stated", "source": f"https://github.com/{CRISIS[0]}",
        "notes": "The repository has no licence file: downloaded at run time for local use only, never "
                 "redistributed. sha256 of each file at the pinned commit registered in advance. The test split's "
                 "gold labels are gpt-4o-mini pseudo-labels.",
        "files": [f(f"external/LLMs-Mental-Health-Crisis/{p}", raw(*CRISIS, p), known=False,
                    optional=p.endswith("protocol.csv"), sha256=pins.get(f"external/LLMs-Mental-Health-Crisis/{p}"))
                  for p in CRISIS_PATHS]
                 + [f(f"external/LLMs-Mental-Health-Crisis/{CRISIS_SAMPLED[0]}", raw(*CRISIS, CRISIS_SAMPLED[0]),
                      known=False, optional=True, sha256=CRISIS_SAMPLED[1], git_blob=CRISIS_SAMPLED[2],
                      note="the 206 answers the humans rated (reference copy for H1/H2); sha256 from a local copy "
                           "at the pinned commit, git blob id from the repository's tree")],
    })
    ds.append({
        "name": "cssrs", "title": "C-SSRS Reddit: 500 users with 5-level suicide-risk labels (Gaur et al. 2019)",
        "licence": "CC BY 4.0 (per the Zenodo record's metadata; to be confirmed)",
        "source": "https://zenodo.org/records/2667859",
        "notes": "DOI 10.5281/zenodo.2667859. Sensitive content. The local file is a third-party copy (md5 "
                 "0bbdba19150c6568f10973171eba31ce); the download path stays disabled until it has been "
                 "confirmed against the Zenodo record: put the file under TRUSTMH_DATA_DIR or pass its path.",
        "option": "cssrs_path",
        "files": [f("external/C-SSRS/500_Reddit_users_posts_labels.csv", None)],
    })

    # --- TrustMH-Bench's own sets ----------------------------------------------------------------------------
    ds.append({
        "name": "trustmh", "title": "TrustMH-Bench dataset/: PsyHarm, JailbreakMH, PsyLeak (+control), ESConv_fair",
        "licence": "MIT", "source": f"https://github.com/{TRUSTMH[0]}",
        "notes": "PsyLeak redistributes translated PsyQA text, whose own terms are restrictive (signed "
                 "agreement): never bundled, do not redistribute further. ESConv_fair holds raw ESConv "
                 "dialogues (CC BY-NC 4.0).",
        "files": [
            f(f"trustmh/dataset/{n}", raw(*TRUSTMH, f"dataset/{n}"))
            for n in ("PsyHarm.csv", "JailbreakMH.csv", "PsyLeak.txt", "PsyLeak_control.txt", "ESConv_fair.json")
        ] + [licence("trustmh/LICENSE")],
    })
    ethics_zip = {"url": raw(*TRUSTMH, "TrustMH_Bench/DimGroup2/Ethics.zip")}
    ds.append({
        "name": "trustmh_ethics", "option": "trustmh_ethics_path", "title": "TrustMH-Bench Ethics: EthicMH.csv and the original's outputs (12 models)",
        "licence": "MIT (EthicMH itself: HF UVSKKR/Ethical-Reasoning-in-Mental-Health-v1, licence not stated)",
        "source": f"https://github.com/{TRUSTMH[0]}",
        "notes": "The download fetches TrustMH_Bench/DimGroup2/Ethics.zip and unpacks Ethics/{data,outputs}/...; "
                 "the zip's own hash is pinned on first download, each member is checked against its sha256.",
        "archive": ethics_zip["url"],
        "files": [
            f(r, None, archive=ethics_zip, member=r.removeprefix("trustmh/TrustMH_Bench/DimGroup2/"))
            for r in under("trustmh/TrustMH_Bench/DimGroup2/Ethics/")
        ],
    })
    privacy_zip = {"url": raw(*TRUSTMH, "TrustMH_Bench/DimGroup1/General-model/privacy.zip")}
    ds.append({
        "name": "trustmh_privacy",
        "title": "TrustMH-Bench Privacy: ConfAIde tiers 1-3 as used, with the original's outputs (6 models)",
        "licence": "MIT", "source": f"https://github.com/{TRUSTMH[0]}",
        "notes": "The download fetches TrustMH_Bench/DimGroup1/General-model/privacy.zip and unpacks "
                 "privacy/task{1,2,3}/...; the zip's own hash is pinned on first download, each member is "
                 "checked against its sha256. Tier-3 files are PsyLeak (translated PsyQA): do not redistribute.",
        "archive": privacy_zip["url"],
        "files": [
            f(r, None, archive=privacy_zip, member=r.removeprefix("trustmh/TrustMH_Bench/DimGroup1/General-model/"))
            for r in under("trustmh/TrustMH_Bench/DimGroup1/General-model/privacy/")
        ],
    })
    ds.append({
        "name": "trustmh_images", "title": "TrustMH-Bench figures (framework, rank table, radar, perturbation)",
        "licence": "MIT", "source": f"https://github.com/{TRUSTMH[0]}",
        "notes": "Reference only; never an input.",
        "files": [f(r, raw(*TRUSTMH, r.removeprefix("trustmh/")), optional=True) for r in under("trustmh/images/")],
    })
    ds.append({
        "name": "confaide", "title": "ConfAIde privacy benchmark, tiers 1-4 with labels",
        "licence": "MIT", "source": f"https://github.com/{CONFAIDE[0]}",
        "notes": "Tiers 1, 2a, 2b are byte-identical to the copies inside trustmh_privacy.",
        "files": [
            f(r, raw(*CONFAIDE, "benchmark/" + r.rsplit("/", 1)[1]))
            for r in under("external/ConfAIde/") if not r.endswith("LICENSE")
        ] + [licence("external/ConfAIde/LICENSE")],
    })

    # --- Anti-sycophancy -----------------------------------------------------------------------------------
    ds.append({
        "name": "elephant", "title": "ELEPHANT social-sycophancy sets: OEQ and AITA",
        "licence": "CC0 1.0", "source": f"https://github.com/{ELEPHANT[0]}",
        "notes": "The 10-row samples are local test copies only (no download). The full datasets/OEQ.csv "
                 "(3,027 rows) and datasets/AITA.csv are download only; no sha256 known in advance: pinned at "
                 "the first verified download (trust on first use).",
        "files": [
            f("external/ELEPHANT/OEQ_sample.csv", None),
            f("external/ELEPHANT/AITA_sample.csv", None),
            f("external/ELEPHANT/datasets/OEQ.csv", raw(*ELEPHANT, "datasets/OEQ.csv"), known=False),
            f("external/ELEPHANT/datasets/AITA.csv", raw(*ELEPHANT, "datasets/AITA.csv"), known=False),
            licence("external/ELEPHANT/LICENSE"),
        ],
    })

    # --- MentalBench / MentalAlign ------------------------------------------------------------------------
    ds.append({
        "name": "mentalalign", "title": "MentalAlign-70k: expert and LLM-judge ratings (5 workbooks)",
        "licence": "MIT", "source": "https://github.com/abeerbadawi/MentalBench-Align",
        "notes": "Commit not pinned by the specs: the download uses a commit at which the repository holds "
                 "MentalAlign-70k/; the sha256 of each workbook guards it.",
        "files": [
            f(r, raw(*MENTALALIGN_XLSX, "MentalAlign-70k/" + r.removeprefix("mentalalign/")))
            for r in under("mentalalign/") if r.endswith(".xlsx")
        ],
    })
    ds.append({
        "name": "mentalalign_early_results", "title": "MentalBench-Align early summary tables (legacy)",
        "licence": "MIT", "source": "https://github.com/abeerbadawi/MentalBench-Align",
        "notes": "Legacy summaries from an earlier version (repository history, results/); never an input.",
        "files": [
            f(r, raw(*MENTALALIGN_EARLY, "results/" + r.removeprefix("mentalalign/early_results/")), optional=True)
            for r in under("mentalalign/early_results/")
        ],
    })
    ds.append({
        "name": "mentalbench", "title": "MentalBench-100k (abeerbadawi/MentalBench-Align: 10,000 contexts x 10 responses)",
        "licence": "MIT (per the GitHub repository)",
        "source": "https://github.com/abeerbadawi/MentalBench-Align",
        "revision": MENTALBENCH_100K[1],
        "option": "mentalbench_path",
        "notes": "Pinned at the publisher's GitHub commit 03cfc4be; the zip is verified by its git blob id "
                 "(registered) and its sha256 is pinned at the first verified download (trust on first use). The "
                 "CSV is read out of the zip (the single .csv member). Columns: docs/dataset_description.md of "
                 "the repository.",
        "files": [f("external/MentalBench-Align/MentalBench-100k.zip", raw(*MENTALBENCH_100K[:3]), known=False,
                    git_blob=MENTALBENCH_100K[3])],
    })

    # --- Clinical judgment and stigma: publishers' repositories read in place ------------------------------------
    for (repo, commit), files, entry in (
            (SIRI2, SIRI2_FILES, {"name": "siri2", "title": 'SIRI-2 items and expert scores, with released model results (mental-health-benchmark-tutorial)',
                                  "licence": "MIT (repository); the SIRI-2 items are Neimeyer & Bonnelle's copyrighted instrument",
                                  "option": "siri2_dir", "notes": "Pinned at commit ea89f477a779492c7d8bf4b7e97f2fdba6976c87. The items are read at run time from the publisher's file or a folder you supply (-O siri2_dir=DIR laid out like the repository); trustmh never ships or rewrites them."}),
            (MOORE, MOORE_FILES, {"name": "moore", "title": 'Moore et al. (FAccT 2025), llms-as-therapists: stigma vignettes, questions, released coded answers and GSS 2018 rates; interjections with their verification questions and the appropriateness of LLM, commercial-bot and human-therapist replies',
                                  "licence": "MIT", "option": "moore_dir", "notes": "Pinned at commit 743e5c2d6ceb156f9114ff405786151628aac84e. Moore et al., FAccT 2025; vignettes after the General Social Survey's vignette studies. Read at run time (-O moore_dir=DIR laid out like the repository, or TRUSTMH_DATA_DIR, or a pinned download)."})):
        base = "external/" + repo.split("/")[1]
        ds.append({**entry, "source": f"https://github.com/{repo}",
                   "files": [f(f"{base}/{rel}", raw(repo, commit, rel), known=False, sha256=sha, git_blob=blob,
                               optional=optional, note=note) for rel, sha, blob, optional, note in files]})

    # --- Gated: user path only ------------------------------------------------------------------------------
    ds.append({
        "name": "d4", "title": "D4: Chinese depression-diagnosis dialogues (~1,339)", "gated": True,
        "licence": "signed data-use agreement", "source": "https://x-lance.github.io/D4/",
        "access": "request access (signed data-use agreement) at https://x-lance.github.io/D4/",
        "option": "d4_path", "notes": "Gated: read only from a path the user supplies.", "files": [],
    })
    ds.append({
        "name": "swmh", "title": "SWMH: Reddit mental-health posts (54,412; 5 subreddits)", "gated": True,
        "licence": "gated, research use only (accept the terms on Hugging Face)",
        "source": "https://huggingface.co/datasets/AIMH/SWMH",
        "access": "accept the terms at https://huggingface.co/datasets/AIMH/SWMH and download it yourself",
        "option": "swmh_path", "notes": "Gated: read only from a path the user supplies.", "files": [],
    })
    ds.append({
        "name": "psyqa", "title": "PsyQA: Chinese psychological QA", "gated": True,
        "licence": "restrictive; signed data-use agreement", "source": "https://github.com/thu-coai/PsyQA",
        "access": "request access (signed data-use agreement) as described at https://github.com/thu-coai/PsyQA",
        # no sub-task reads PsyQA itself (PsyLeak is built from it): no `-O` key, the data folder instead
        "notes": "Gated: read only from a path the user supplies. PsyLeak (trustmh) is built from translated "
                 "PsyQA text.", "files": [],
    })
    ds.append({
        "name": "pas", "title": "PAS: problematic action statements (ELEPHANT; Cheng et al. 2025)", "gated": True,
        "licence": "terms unverified (OSF)", "source": "https://osf.io/smvw7/",
        "access": "download it from the OSF project https://osf.io/smvw7/ after reading its terms",
        "option": "pas_path", "notes": "User path only: a CSV with a statement column (default `prompt`).",
        "files": [],
    })

    for d in ds:
        d.setdefault("gated", False)
    leftover = sorted(set(manifest) - used)
    if leftover:
        raise SystemExit("manifest files not registered: " + ", ".join(leftover))
    return ds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--manifest", type=Path, default=ROOT.parent / "shared" / "data" / "MANIFEST.sha256")
    args = ap.parse_args()
    pins_path = args.manifest.parent / "PINS-not-here.sha256"
    pins = load_pins_not_here(pins_path) if pins_path.is_file() else {}
    datasets = build(load_manifest(args.manifest), pins)
    OUT.write_text(json.dumps({"format": 1, "datasets": datasets}, indent=1, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    n = sum(len(d["files"]) for d in datasets)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(datasets)} datasets, {n} files")


if __name__ == "__main__":
    main()
