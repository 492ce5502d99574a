"""`trustmh gate`'s exit codes come from the one table (docs/exit-codes.md): a verdict (0 pass, 1 fail,
3 insufficient evidence) is never confused with a gate that could not run (2); each policy keeps its own
outputs, so gating one run twice under two policies leaves both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trustmh import exit_codes
from trustmh.cli import main

POLICY = ('min_n = 1\nrequire_validated_judge = false\n[[check]]\nid = "over"\nsubtask = "safety/over_refusal"\n'
          'min = 0.5\n')


def _run_dir(tmp_path: Path, value: float, ci: list[float], n: int = 100) -> Path:
    out = tmp_path / f"run-{value}-{n}"
    out.mkdir()
    results = {"model": "m", "mode": "default", "suite": "trustmh",
               "subtasks": {"safety/over_refusal": {"status": "ok", "value": value, "ci": ci, "n": n,
                                                       "direction": "higher_is_better"}}}
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return out


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def test_a_passing_run_exits_0(tmp_path: Path, policy: Path) -> None:
    assert main(["gate", str(_run_dir(tmp_path, 0.9, [0.8, 0.95])), "--policy", str(policy)]) == exit_codes.PASS


def test_a_failing_run_exits_1(tmp_path: Path, policy: Path) -> None:
    assert main(["gate", str(_run_dir(tmp_path, 0.1, [0.05, 0.2])), "--policy", str(policy)]) == exit_codes.FAIL


def test_an_undecided_run_exits_3(tmp_path: Path, policy: Path) -> None:
    # the interval straddles the limit: the evidence cannot decide
    assert main(["gate", str(_run_dir(tmp_path, 0.5, [0.2, 0.8])), "--policy", str(policy)]) == 3


def test_a_missing_run_directory_could_not_run(tmp_path: Path, policy: Path) -> None:
    assert main(["gate", str(tmp_path / "nowhere"), "--policy", str(policy)]) == exit_codes.COULD_NOT_RUN


def test_an_unknown_policy_could_not_run(tmp_path: Path) -> None:
    assert main(["gate", str(_run_dir(tmp_path, 0.9, [0.8, 0.95])), "--policy", "no-such-pack"]) == 2


def test_an_unreadable_results_file_could_not_run(tmp_path: Path, policy: Path) -> None:
    out = tmp_path / "broken"
    out.mkdir()
    (out / "results.json").write_text("{not json", encoding="utf-8")
    assert main(["gate", str(out), "--policy", str(policy)]) == exit_codes.COULD_NOT_RUN


def test_could_not_run_and_insufficient_differ() -> None:
    assert exit_codes.COULD_NOT_RUN != exit_codes.INSUFFICIENT


def test_every_code_in_the_table_is_distinct() -> None:
    codes = [code for code, _ in exit_codes.TABLE.values()]
    assert len(set(codes)) == len(codes)


def test_two_policies_on_one_run_leave_both_outputs(tmp_path: Path, policy: Path) -> None:
    out = _run_dir(tmp_path, 0.9, [0.8, 0.95])
    main(["gate", str(out), "--policy", str(policy)])
    main(["gate", str(out), "--policy", "ny-gbl-art47"])
    assert {p.name for p in out.iterdir()} >= {"gate-mine.json", "summary-mine.md", "gate-ny-gbl-art47.json",
                                                 "summary-ny-gbl-art47.md"}


def test_the_default_policy_keeps_gate_json(tmp_path: Path) -> None:
    out = _run_dir(tmp_path, 0.9, [0.8, 0.95])
    main(["gate", str(out)])
    assert (out / "gate.json").is_file()


def test_the_gate_help_lists_the_packs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    assert "ny-gbl-art47" in capsys.readouterr().out


def test_list_names_the_packs(capsys: pytest.CaptureFixture[str]) -> None:
    main(["list"])
    assert "wa-hb2225" in capsys.readouterr().out


def test_the_docs_table_has_every_code() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    missing = [code for code, _ in exit_codes.TABLE.values() if f"| {code} |" not in page]
    assert missing == []
