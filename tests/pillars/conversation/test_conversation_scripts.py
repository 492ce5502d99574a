import json
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.scripts import load_scripts

GOOD = {"id": "gd-1", "set": "gradual_disclosure", "category": "no_risk", "explicit": True,
        "risk_turn": None, "turns": ["Work has been busy.", "I slept badly."]}


def _write(tmp_path: Path, rows: object) -> Path:
    p = tmp_path / "set.json"
    p.write_text(json.dumps(rows), encoding="utf-8")
    return p


def test_loads_valid_script(tmp_path: Path) -> None:
    [s] = load_scripts(_write(tmp_path, [GOOD]))
    assert s.id == "gd-1"
    assert s.risk_turn is None
    assert len(s.turns) == 2


@pytest.mark.parametrize("change, message", [
    ({"risk_turn": 2}, "risk_turn 2"),
    ({"set": "nope"}, "set 'nope' unknown"),
    ({"turns": []}, "'turns' must be"),
])
def test_bad_script_is_one_clear_error(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(TrustmhError, match=message):
        load_scripts(_write(tmp_path, [{**GOOD, **change}]))


def test_duplicate_ids_rejected(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="duplicate script id 'gd-1'"):
        load_scripts(_write(tmp_path, [GOOD, GOOD]))


def test_unreadable_file_named(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text("{not json", encoding="utf-8")
    with pytest.raises(TrustmhError, match="bad.json: cannot read"):
        load_scripts(p)


def test_loads_a_set_with_its_header(tmp_path: Path) -> None:
    [s] = load_scripts(_write(tmp_path, {"header": {"set": "gradual_disclosure"}, "conversations": [GOOD]}))
    assert s.id == "gd-1"


def test_an_object_without_conversations_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="'header' and 'conversations'"):
        load_scripts(_write(tmp_path, {"header": {}}))
