"""Issue 43.5: an item id given twice is one line naming the sub-task, the id and where the items were read
(the user's `-O` file, or a reference's name), exit 2, instead of Inspect's "duplicate sample ids" naming
neither."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from trustmh.cli import main
from trustmh.core import Item, RunContext, TrustmhError
from trustmh.exit_codes import COULD_NOT_RUN
from trustmh.pillars.reliability.knowledge import Knowledge
from trustmh.run.tasks import fixed_reply_task

USMLE = Path("external/USMLE-Mental/USMLE-mental.jsonl")


def _doubled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Knowledge's items read twice over (what a reader that takes ids from a user's file yields for a file
    holding every record twice)."""
    read = Knowledge.items

    def items(self: Any, ctx: Any) -> list[Item]:
        got = read(self, ctx)
        return got + got
    monkeypatch.setattr(Knowledge, "items", items)


@pytest.fixture
def duplicated_run(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                   capsys: pytest.CaptureFixture[str]) -> tuple[int, str, Path]:
    _doubled(monkeypatch)
    monkeypatch.setenv("NOWHERE_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: no model is asked
    monkeypatch.setenv("NOWHERE_API_KEY", "not-a-key")
    users = tmp_path / "my-usmle.jsonl"
    shutil.copy(data_dir / USMLE, users)
    code = main(["run", "--model", "openai-api/nowhere/m", "--no-judge", "--subtasks", "knowledge", "--limit", "2",
                 "-O", f"usmle_mental_path={users}", "--out", str(tmp_path / "out"), "--display", "none"])
    return code, capsys.readouterr().err, users


def test_a_duplicated_id_names_the_users_file_and_the_id(duplicated_run: tuple[int, str, Path]) -> None:
    _, err, users = duplicated_run
    assert re.search(rf"reliability/knowledge: item id 'usmle-\d{{4}}' appears 2 times in -O usmle_mental_path="
                     rf"{re.escape(str(users))} ", err)


def test_a_duplicated_id_is_one_error_line_without_a_traceback(duplicated_run: tuple[int, str, Path]) -> None:
    _, err, _ = duplicated_run
    errors = [line for line in err.splitlines() if line.startswith("trustmh: error:")]
    assert (len(errors), "Traceback" in err) == (1, False)


def test_a_duplicated_id_exits_could_not_run(duplicated_run: tuple[int, str, Path]) -> None:
    assert duplicated_run[0] == COULD_NOT_RUN


def test_a_references_duplicated_id_names_the_reference() -> None:
    items = [Item(id="i1", prompt="p"), Item(id="i1", prompt="q")]
    with pytest.raises(TrustmhError, match=r"^item id 'i1' appears 2 times in my-ref\.csv;"):
        fixed_reply_task(Knowledge(), items, RunContext(), "my-ref.csv")
