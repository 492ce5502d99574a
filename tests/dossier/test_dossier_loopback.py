"""The dossier end to end on a loopback product (`trustmh run --model http/...`, then `trustmh dossier` under
two packs, then `trustmh verify`): a product whose replies echo its system prompt and an API key (the run's own
bearer token and a key-shaped one it holds elsewhere) gets a dossier that holds neither in any file, and
verifies; one reply changed by hand fails verify, named."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from chatbot_server import SYSTEM_PROMPT, TOKEN, ChatbotServer
from trustmh.cli import main

OTHER_KEY = "sk-ant-api03-Qw7Er8Ty9Ui0Op1As2Df3Gh4"


def echoing(history: list[dict[str, str]], system: str) -> str:
    return f"I'm an AI, not a person; call or text 988. (Set up as: {system} Key {TOKEN}; backup key {OTHER_KEY}.)"


@pytest.fixture(scope="module")
def dossier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("loopback")
    mp = pytest.MonkeyPatch()
    mp.setenv("ACME_AUTH", TOKEN)
    try:
        with ChatbotServer(respond=echoing, max_requests=600, max_seconds=600) as server:
            endpoint = server.endpoint_file(root / "acme.toml")
            assert main(["run", "--model", "http/acme", "--endpoint", str(endpoint), "--subtasks",
                         "ai_disclosure,crisis_referral", "--no-judge", "--out", str(root / "run"), "--display",
                         "none", "--limit", "8", "--n-boot", "200", "--max-connections", "2"]) == 0
        (root / "prompt.txt").write_text(SYSTEM_PROMPT + "\n", encoding="utf-8")
        assert main(["dossier", str(root / "run"), "--policy", "ca-sb243", "--policy", "ny-gbl-art47", "--out",
                     str(root / "dossier"), "--private", str(root / "prompt.txt"), "--on-leak", "redact"]) == 0
    finally:
        mp.undo()
    return root / "dossier"


@pytest.mark.slow
def test_no_file_of_the_dossier_holds_the_prompt_or_a_key(dossier: Path) -> None:
    blobs = [p.read_bytes() for p in dossier.rglob("*") if p.is_file()]
    with tarfile.open(dossier.with_name("dossier.tar.gz")) as tar:
        blobs += [tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()]  # type: ignore[union-attr]
    assert [b[:60] for b in blobs if any(s.encode() in b for s in (SYSTEM_PROMPT, TOKEN, OTHER_KEY))] == []


@pytest.mark.slow
def test_both_packs_have_their_clause_verdicts(dossier: Path) -> None:
    gates = [json.loads((dossier / "gates" / f"gate-{n}.json").read_text()) for n in ("ca-sb243", "ny-gbl-art47")]
    assert all(g["clauses"] for g in gates)


@pytest.mark.slow
def test_provenance_has_the_model_that_answered(dossier: Path) -> None:
    assert json.loads((dossier / "provenance.json").read_text())["run"]["models_answered"] == {"acme": 16}


@pytest.mark.slow
def test_the_dossier_verifies(dossier: Path) -> None:
    assert main(["verify", str(dossier)]) == 0


@pytest.mark.slow
def test_one_reply_changed_by_hand_fails_verify(dossier: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = Path(shutil.copytree(dossier, tmp_path / "copy"))
    lines = (folder / "items.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[-1])
    row["response"] = "reworded"
    lines[-1] = json.dumps(row, ensure_ascii=False, sort_keys=True)
    (folder / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["verify", str(folder)])
    assert (code, f"item {row['subtask']} {row['item_id']} epoch 1: changed" in capsys.readouterr().err) == (1, True)
