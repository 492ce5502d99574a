"""The release dossier and `trustmh verify` (docs/dossier.md) on a synthetic run of a product gated under two
packs: the dossier holds both verdicts per clause, the failing conversations, provenance and a manifest;
verify passes it as written and names a changed reply, a changed threshold, a missing file and a changed
figure; a product that echoes its system prompt and a key gets a dossier holding neither (redacted), or none
(refused with one line naming the file and the field)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from dossier_run import ECHOED_KEY, SYSTEM_PROMPT, write_synthetic_run
from trustmh.cli import main
from trustmh.gate.clauses import load_pack

PACKS = ("ca-sb243", "ny-gbl-art47")
# the judge asked for, and the dated model its provider answered with on each record's two calls
JUDGE_REPORTED = {"openai-api/acme/judge-latest": {"judge-2026-11-20": 2}}


@pytest.fixture(scope="module")
def dossier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dossier")
    run = write_synthetic_run(root / "run", judge_reported=JUDGE_REPORTED)
    out = root / "dossier"
    assert main(["dossier", str(run), "--policy", PACKS[0], "--policy", PACKS[1], "--out", str(out)]) == 0
    return out


def _copy(dossier: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(dossier, tmp_path / "copy"))


def test_summary_holds_every_clause_of_both_packs(dossier: Path) -> None:
    summary = (dossier / "summary.md").read_text(encoding="utf-8")
    clause_ids = {c.id for name in PACKS for c in load_pack(name).clauses}
    assert [c for c in clause_ids if f"| {c} |" not in summary] == []


def test_each_pack_has_its_own_gate_with_clause_verdicts(dossier: Path) -> None:
    gates = {name: json.loads((dossier / "gates" / f"gate-{name}.json").read_text()) for name in PACKS}
    assert {name: len(g["clauses"]) for name, g in gates.items()} == {name: len(load_pack(name).clauses) for name in PACKS}


def test_failing_conversations_are_listed_with_the_deciding_reply(dossier: Path) -> None:
    failing = (dossier / "failing.md").read_text(encoding="utf-8")
    # the three conversations whose product claimed to be a therapist, with that reply
    assert all(f"### ai-{i:03d} " in failing for i in range(3)) and "licensed therapist" in failing


def test_passing_conversations_are_not_listed_as_failing(dossier: Path) -> None:
    assert "### ai-005 " not in (dossier / "failing.md").read_text(encoding="utf-8")


def test_provenance_has_the_model_asked_and_the_model_that_answered(dossier: Path) -> None:
    run = json.loads((dossier / "provenance.json").read_text())["run"]
    assert (run["model_asked"], run["models_answered"]) == ("http/lakeside", {"lakeside-2026-11": 24})


def test_provenance_has_the_judge_asked_and_the_name_it_answered_as_counted_over_calls(dossier: Path) -> None:
    run = json.loads((dossier / "provenance.json").read_text())["run"]
    assert run["judges_answered"] == {"openai-api/acme/judge-latest": {"judge-2026-11-20": 48}}


def test_summary_shows_the_judges_answering_name(dossier: Path) -> None:
    assert "openai-api/acme/judge-latest → judge-2026-11-20 (48)" in (dossier / "summary.md").read_text(encoding="utf-8")


def test_provenance_counts_the_judges_answering_name_per_subtask(dossier: Path) -> None:
    by_subtask = json.loads((dossier / "provenance.json").read_text())["run"]["judges_answered_by_subtask"]
    assert by_subtask["conversation/crisis_referral"] == {"openai-api/acme/judge-latest": {"judge-2026-11-20": 24}}


def test_a_judged_clauses_evidence_names_the_judges_answering_name() -> None:
    from trustmh.dossier.pages import evidence

    row = {"judged": True, "subtask": "crisis/escalation", "judge": {"model": "openai-api/acme/judge-latest"}}
    prov = {"run": {"judges_answered_by_subtask": {"crisis/escalation": JUDGE_REPORTED}}}
    assert evidence(row, prov) == ("judge openai-api/acme/judge-latest, no certificate; answered as "
                                   "openai-api/acme/judge-latest → judge-2026-11-20 (2) (calls)")


def test_verify_names_a_judges_answering_name_changed_with_its_digest(dossier: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """provenance.json rewritten to another judge name, and the manifest with it: the items count it again."""
    from trustmh.dossier.build import manifest_json

    folder = _copy(dossier, tmp_path)
    prov = json.loads((folder / "provenance.json").read_text())
    prov["run"]["judges_answered"] = {"openai-api/acme/judge-latest": {"judge-2026-05-01": 48}}
    (folder / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n", encoding="utf-8")
    files = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in folder.rglob("*") if p.is_file()}
    (folder / "manifest.json").write_text(manifest_json(files), encoding="utf-8")
    code = main(["verify", str(folder)])
    assert (code, "provenance.json: run.judges_answered:" in capsys.readouterr().err) == (1, True)


def test_endpoint_is_described_without_its_credentials(dossier: Path) -> None:
    assert json.loads((dossier / "provenance.json").read_text())["run"]["product_endpoint"] == "https://chat.example/api"


def test_manifest_lists_every_file(dossier: Path) -> None:
    listed = set(json.loads((dossier / "manifest.json").read_text())["files"])
    on_disk = {p.relative_to(dossier).as_posix() for p in dossier.rglob("*") if p.is_file()} - {"manifest.json"}
    assert listed == on_disk


def test_summary_page_escapes_product_text(tmp_path: Path) -> None:
    from trustmh.dossier.pages import esc

    assert esc("<script>x</script>") == "&lt;script&gt;x&lt;/script&gt;"


def test_verify_passes_the_dossier_as_written(dossier: Path) -> None:
    assert main(["verify", str(dossier)]) == 0


def test_verify_passes_the_archive(dossier: Path) -> None:
    assert main(["verify", str(dossier.with_name(dossier.name + ".tar.gz"))]) == 0


def _reworded_reply(folder: Path) -> None:
    lines = (folder / "items.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["metadata"]["turns"][1]["content"] = "reworded by hand"
    lines[0] = json.dumps(row, ensure_ascii=False, sort_keys=True)
    (folder / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_verify_names_the_item_whose_reply_changed(dossier: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(dossier, tmp_path)
    _reworded_reply(folder)
    code = main(["verify", str(folder)])
    assert (code, "items.jsonl: item conversation/ai_disclosure ai-000 epoch 1: changed" in capsys.readouterr().err) == (1, True)


def test_verify_names_a_changed_policy_threshold(dossier: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(dossier, tmp_path)
    policy = folder / "policies" / "ca-sb243.toml"
    policy.write_text(policy.read_text(encoding="utf-8").replace("max = 0.10", "max = 0.60", 1), encoding="utf-8")
    code = main(["verify", str(folder)])
    err = capsys.readouterr().err
    assert (code, "policies/ca-sb243.toml: changed" in err, "recomputed from policies/ca-sb243.toml" in err) == (1, True, True)


def test_verify_names_a_missing_file(dossier: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(dossier, tmp_path)
    (folder / "failing.md").unlink()
    code = main(["verify", str(folder)])
    assert (code, "failing.md: missing" in capsys.readouterr().err) == (1, True)


def test_verify_recomputes_a_figure_changed_with_its_digest(dossier: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A hand who also rewrites the manifest is still caught: the figure is recomputed from the items."""
    from trustmh.dossier.build import manifest_json

    folder = _copy(dossier, tmp_path)
    results = json.loads((folder / "results.json").read_text())
    results["subtasks"]["conversation/ai_disclosure"]["value"] = 0.99
    (folder / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    files = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in folder.rglob("*") if p.is_file()}
    (folder / "manifest.json").write_text(manifest_json(files), encoding="utf-8")
    code = main(["verify", str(folder)])
    assert (code, "subtasks.conversation/ai_disclosure.value: 0.99 recorded, 0.75 recomputed" in capsys.readouterr().err) == (1, True)


@pytest.fixture(scope="module")
def echo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("echo")
    (root / "prompt.txt").write_text(SYSTEM_PROMPT + "\n", encoding="utf-8")
    return write_synthetic_run(root / "run", echo=True)


def test_echoed_prompt_and_key_refuse_the_dossier_in_one_line(echo_run: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "refused"
    code = main(["dossier", str(echo_run), "--policy", "ca-sb243", "--out", str(out),
                 "--private", str(echo_run.parent / "prompt.txt")])
    err = capsys.readouterr().err.strip().splitlines()
    assert (code, len(err), out.exists(), "items.jsonl: record" in err[0]) == (2, 1, False, True)


def test_redacted_dossier_holds_neither_prompt_nor_key_in_any_file(echo_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "redacted"
    assert main(["dossier", str(echo_run), "--policy", "ca-sb243", "--policy", "ny-gbl-art47", "--out", str(out),
                 "--private", str(echo_run.parent / "prompt.txt"), "--on-leak", "redact"]) == 0
    texts = [p.read_bytes() for p in out.rglob("*") if p.is_file()]
    texts.append(gzip.decompress(out.with_name("redacted.tar.gz").read_bytes()))
    found = [t for t in texts if SYSTEM_PROMPT.encode() in t or ECHOED_KEY.encode() in t or b"staff rota" in t]
    assert found == []


def test_redacted_dossier_verifies(echo_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "redacted"
    main(["dossier", str(echo_run), "--policy", "ca-sb243", "--out", str(out),
          "--private", str(echo_run.parent / "prompt.txt"), "--on-leak", "redact"])
    assert main(["verify", str(out)]) == 0


def test_a_key_shaped_string_is_found_without_being_given(echo_run: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """No --private and no variable holds the key: its shape alone refuses the dossier."""
    code = main(["dossier", str(echo_run), "--policy", "ca-sb243", "--out", str(tmp_path / "x")])
    assert (code, "holds an authorization header" in capsys.readouterr().err) == (2, True)


def _publisher_row() -> dict:
    return {"subtask": "crisis/crisis_identification", "item_id": "x1", "response": "a publisher's post",
            "metadata": {"prompt": "a publisher's post", "turns": [{"role": "patient", "content": "a publisher's post"}]}}


def test_a_publishers_text_is_left_out_by_default() -> None:
    from trustmh.dossier.build import LEFT_OUT, leave_out_dataset_text

    row = _publisher_row()
    leave_out_dataset_text([row], False, {"suite": "trustmh", "datasets": {"crisis": {"crisis.csv": "0" * 64}}})
    assert (row["response"], row["metadata"]["prompt"], row["metadata"]["turns"][0]["content"]) == (LEFT_OUT,) * 3


def test_including_a_publishers_text_needs_a_licence_that_allows_it() -> None:
    from trustmh.core import TrustmhError
    from trustmh.dossier.build import leave_out_dataset_text

    with pytest.raises(TrustmhError, match="data set crisis .*licence 'none stated'"):
        leave_out_dataset_text([_publisher_row()], True, {"suite": "trustmh", "datasets": {"crisis": {"crisis.csv": "0" * 64}}})


def test_a_starter_run_holds_no_publishers_text() -> None:
    from trustmh.dossier.build import leave_out_dataset_text

    row = _publisher_row()
    leave_out_dataset_text([row], False, {"suite": "starter", "datasets": {}})
    assert row["response"] == "a publisher's post"


def test_verify_of_no_dossier_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["verify", str(tmp_path / "none")])
    assert (code, len(capsys.readouterr().err.strip().splitlines())) == (2, 1)


def test_a_run_without_items_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_synthetic_run(tmp_path / "run", n=3, failing=1)
    (run / "items.jsonl").unlink()
    code = main(["dossier", str(run), "--policy", "ca-sb243", "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip().splitlines()
    assert (code, len(err), "no items.jsonl" in err[0]) == (2, 1, True)


def test_a_licence_that_does_not_state_the_texts_terms_is_not_open() -> None:
    from trustmh.dossier.build import republishable

    assert not republishable("MIT (EthicMH itself: licence not stated)")


def test_an_open_licence_allows_republishing() -> None:
    from trustmh.dossier.build import republishable

    assert republishable("CC BY 4.0")


def test_credentials_in_a_url_are_found() -> None:
    from trustmh.dossier.leaks import Private, text_hits

    assert text_hits("https://ops:hunter2@chat.example/api", Private.of([], [])) == ["credentials in a URL"]
