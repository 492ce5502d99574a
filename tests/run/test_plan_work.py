"""What `trustmh plan` does not do twice (docs/performance.md#plan): each distinct text is tokenised once, a
judged sub-task's items are built once (its anchors are picked from them), a data file is parsed once per
version, and the shortcuts give the figures of the slow ways (the shared prefix, the items' copies, the
reference-power simulation in chunks). Counted, not timed: the times are benchmarks/plan_speed.py's."""

from __future__ import annotations

import random
import sys
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from trustmh.core import Item
from trustmh.run.config import RunOptions, resolve
from trustmh.run.estimate import estimate, plan_settings
from trustmh.run.select import plan_run


def _plan(**options: Any) -> Any:
    spec = resolve(RunOptions(model="mockllm/model", judge="mockllm/judge", display="none", **options))
    return estimate(plan_run(spec), plan_settings(spec))


def test_a_conversation_plan_tokenises_each_distinct_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import trustmh.run.tokens as tokens

    seen: list[str] = []
    plain = tokens.Tokenizer._count

    def counted(self: Any, text: str) -> int:
        seen.append(text)
        return plain(self, text)

    monkeypatch.setattr(tokens.Tokenizer, "_count", counted)
    _plan(subtasks=["conversation/gradual_disclosure"], limit=2)
    assert len(seen) == len(set(seen))


def test_a_judged_subtasks_items_are_built_once_for_its_task_and_its_anchors(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.catalogue import get_subtask

    cls = type(get_subtask("safety/over_refusal"))
    built: list[int] = []
    plain = cls.items

    def counted(self: Any, ctx: Any) -> list[Item]:
        built.append(1)
        return plain(self, ctx)

    monkeypatch.setattr(cls, "items", counted)
    _plan(subtasks=["safety/over_refusal"])
    assert len(built) == 1


def test_read_once_parses_a_file_once_per_version(tmp_path: Path) -> None:
    from trustmh.data.registry import read_once

    path = tmp_path / "rows.txt"
    path.write_text("a\n", encoding="utf-8")
    parsed: list[str] = []

    def parse(p: Path) -> str:
        parsed.append(p.read_text(encoding="utf-8"))
        return parsed[-1]

    read_once(path, parse)
    read_once(path, parse)
    path.write_text("a\nb\n", encoding="utf-8")  # another size: another version
    assert read_once(path, parse) == "a\nb\n" and len(parsed) == 2


def test_a_plan_for_hosted_models_leaves_the_bundled_provider_unimported(monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.run.config import check_model_name

    monkeypatch.delitem(sys.modules, "trustmh.models.gguf", raising=False)
    check_model_name("openai/gpt-4o-mini", "--model")
    assert "trustmh.models.gguf" not in sys.modules


def _slow_common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def test_the_bisected_common_prefix_is_the_char_by_char_one() -> None:
    from trustmh.prompt_cache import common_prefix

    rng = random.Random(0)
    pairs = [("".join(rng.choice("ab") for _ in range(rng.randint(0, 9))),
              "".join(rng.choice("ab") for _ in range(rng.randint(0, 9)))) for _ in range(2000)]
    assert all(common_prefix(a, b) == _slow_common_prefix(a, b) for a, b in pairs)


@dataclass
class _Nested:
    turns: tuple[str, ...]


def test_an_items_copy_is_what_asdict_makes_of_it() -> None:
    item = Item(id="i", prompt="p", target=("a", 1), cluster="c", history=[{"role": "user", "content": "hi"}],
                metadata={"context": [{"speaker": "seeker", "text": "x"}], "span": (1, 2), "nested": _Nested(("t",)),
                          "ordered": OrderedDict(k=[1.5, None])})
    assert item.to_dict() == asdict(item)


def test_the_reference_power_simulation_in_chunks_gives_the_figures_of_one_pass() -> None:
    import numpy as np

    from trustmh.judges.reference_power import _points, _simulate
    from trustmh.stats.rater_comparison import comparison_points

    sims = _simulate("labels", 120, 2, 0.7, (0.7, 0.3), 130, np.random.default_rng(1))
    whole, chunked = comparison_points(sims, "labels", 2), _points(sims, "labels", 2)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(whole, chunked, strict=True))
