"""The contributor guides are true when followed literally: each names, in its "files you touch" table, every
file a newcomer had to touch when the guide was tried (the lists below, from those trials on 2026-11-27), and
every file it names is where it says (a path with a `<placeholder>` names a folder that exists)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]

# (page, anchor of the guide's section) -> the files the trial touched
GUIDES: dict[tuple[str, str], tuple[str, ...]] = {
    ("docs/adding-a-subtask.md", "files"): (
        "src/trustmh/pillars/<pillar>/<name>.py", "src/trustmh/pillars/<pillar>/__init__.py",
        "src/trustmh/pillars/<pillar>/starter/<name>.jsonl", "tests/pillars/<pillar>/test_<name>.py",
        "docs/pillars/<pillar>.md", "docs/pillars/index.md", "README.md", "tests/golden/demo_results.json",
        "tests/golden/canned_results.json"),
    ("docs/gate.md", "adding-a-pack"): ("src/trustmh/gate/policies/<name>.toml", "docs/gate.md"),
    ("docs/conversations.md", "adding-a-set"): (
        "src/trustmh/pillars/conversation/designs/__init__.py", "src/trustmh/pillars/conversation/designs/probes.py",
        "src/trustmh/pillars/conversation/sets/<name>.json", "src/trustmh/pillars/conversation/<name>.py",
        "docs/conversations.md"),
    ("docs/contributing.md", "adding-a-provider-quirk"): (
        "src/trustmh/models/providers.py", "tests/models/test_providers.py", "docs/cost.md"),
}
TABLE_ROW = re.compile(r"^\| `([^`]+)` \|", re.MULTILINE)


def section(page: str, anchor: str) -> str:
    """The text of a page's section, from its heading with `{#anchor}` to the next heading as high or higher."""
    # headings only: a `# comment` line inside a fenced code block is not one
    text = re.sub(r"^```.*?^```", "", (REPO / page).read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    heading = re.search(rf"^(#+) .*\{{#{re.escape(anchor)}\}}\s*$", text, re.MULTILINE)
    assert heading is not None, f"{page}: no heading with {{#{anchor}}}"
    level = len(heading.group(1))
    rest = text[heading.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest[:end.start()] if end else rest


def named_files(page: str, anchor: str) -> list[str]:
    return TABLE_ROW.findall(section(page, anchor))


def unnamed(page: str, anchor: str, touched: tuple[str, ...]) -> list[str]:
    """The files a trial touched that the guide does not name."""
    return sorted(set(touched) - set(named_files(page, anchor)))


def where_it_should_be(path: str) -> Path:
    """The path itself, or for a path with a placeholder the folder above its first placeholder."""
    fixed = path.split("<", 1)[0]
    return REPO / (fixed if fixed == path else fixed.rpartition("/")[0])


@pytest.mark.parametrize(("page", "anchor"), list(GUIDES), ids=lambda v: v)
def test_the_guide_names_every_file_its_trial_touched(page: str, anchor: str) -> None:
    assert unnamed(page, anchor, GUIDES[page, anchor]) == []


@pytest.mark.parametrize(("page", "anchor"), list(GUIDES), ids=lambda v: v)
def test_every_file_the_guide_names_is_where_it_says(page: str, anchor: str) -> None:
    assert [p for p in named_files(page, anchor) if not where_it_should_be(p).exists()] == []


GUIDE = """## Adding a thing {#adding}

```python
# a comment in a code block, not a heading
```

| file | what changes |
|---|---|
| `README.md` | the count |

## The next section {#next}

| `docs/index.md` | not the guide's |
"""


def test_a_guide_that_leaves_out_a_touched_file_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert unnamed("guide.md", "adding", ("README.md", "docs/index.md")) == ["docs/index.md"]
