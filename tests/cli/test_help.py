"""Help written for users (issue 42): every command's `--help`, walked from `trustmh --help` down, exits 0,
says what each option does and speaks no developer words; `rescore` names its formats and `--from`; `judge
certify --help`'s `--batch` speaks of the judge (its references: tests/judges/test_certify_references.py), and
the help starts without loading Inspect."""

from __future__ import annotations

import contextlib
import io
import re
import resource
import subprocess
import sys

import pytest

from fixture_paths import REPO
from trustmh.cli import build_parser, main
from trustmh.cli.rescore_args import FORMATS

# Words of the code, not of the user: what the parser or a module docstring would leak into help.
DEVELOPER_WORDS = ("dispatch", "parser", "docstring", "module", "namespace", "argv", "kwargs", "dest=",
                   "trustmherror", "traceback", "stub")


def _help(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main([*argv, "--help"])
        except SystemExit as stop:
            code = int(stop.code or 0)
    return code, out.getvalue()


def _commands(argv: list[str], text: str) -> list[list[str]]:
    """The sub-commands a help's usage offers (`{run,plan,...} ...`), as argument lists."""
    usage = text.split("\n\n", 1)[0]
    match = re.search(r"\{([\w,-]+)\}\s+\.\.\.", usage)
    return [[*argv, name] for name in match.group(1).split(",")] if match else []


@pytest.fixture(scope="module")
def helps() -> dict[str, tuple[int, str]]:
    """`trustmh --help` and every command's, sub-commands included: {command line: (exit code, help)}."""
    seen: dict[str, tuple[int, str]] = {}
    todo: list[list[str]] = [[]]
    while todo:
        argv = todo.pop(0)
        code, text = _help(argv)
        seen[" ".join(["trustmh", *argv])] = (code, text)
        todo += _commands(argv, text)
    return seen


def test_the_walk_reaches_the_nested_commands(helps: dict[str, tuple[int, str]]) -> None:
    assert {"trustmh judge certify", "trustmh review import", "trustmh data fetch", "trustmh sets check"} <= set(helps)


def test_every_top_level_command_is_walked(helps: dict[str, tuple[int, str]]) -> None:
    top = next(a for a in build_parser()._actions if a.dest == "command")
    assert {f"trustmh {name}" for name in top.choices} <= set(helps)  # type: ignore[union-attr]


def test_every_help_exits_0(helps: dict[str, tuple[int, str]]) -> None:
    assert {cmd: code for cmd, (code, _) in helps.items() if code != 0} == {}


def test_no_help_speaks_developer_words(helps: dict[str, tuple[int, str]]) -> None:
    found = {cmd: [w for w in DEVELOPER_WORDS if w in text.lower()] for cmd, (_, text) in helps.items()}
    assert {cmd: words for cmd, words in found.items() if words} == {}


def test_no_usage_shows_an_internal_name(helps: dict[str, tuple[int, str]]) -> None:
    # a positional shown by its variable name (run_dir) or an option by its upper-cased one (--n-boot N_BOOT)
    bad = {}
    for cmd, (_, text) in helps.items():
        usage = text.split("\n\n", 1)[0]
        names = re.findall(r"(?<![\w$-])[a-z]+_[a-z_]+\b", usage)
        names += [m for opt, m in re.findall(r"--([\w-]+) \[?([A-Z][A-Z_]*)", usage)
                  if "_" in m and m == opt.upper().replace("-", "_")]
        if names:
            bad[cmd] = names
    assert bad == {}


def _undescribed(text: str) -> list[str]:
    """The options and arguments of a help that say nothing of what they do."""
    lines = text.splitlines()
    missing = []
    section = ""
    for i, line in enumerate(lines):
        if line and not line.startswith(" "):
            section = line
            continue
        if section not in ("options:", "positional arguments:") or not re.match(r"  [^\s{]", line):
            continue  # (a sub-command list `{a,b}` is described line by line below it)
        if re.search(r"\S {2,}\S", line[2:]):
            continue  # the description on the same line
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if not re.match(r" {6,}\S", following):
            missing.append(line.strip())
    return missing


def test_every_option_says_what_it_does(helps: dict[str, tuple[int, str]]) -> None:
    missing = {cmd: _undescribed(text) for cmd, (_, text) in helps.items()}
    assert {cmd: m for cmd, m in missing.items() if m} == {}


def test_the_undescribed_check_finds_a_bare_option() -> None:
    assert _undescribed("options:\n  --seed SEED\n  --out DIR   where\n") == ["--seed SEED"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_rescore_help_names_each_format(fmt: str, helps: dict[str, tuple[int, str]]) -> None:
    assert re.search(rf"^  {re.escape(fmt)} +\S", helps["trustmh rescore"][1], re.MULTILINE)


def test_rescore_help_says_what_from_names(helps: dict[str, tuple[int, str]]) -> None:
    assert re.search(r"^  --from PATH +\S", helps["trustmh rescore"][1], re.MULTILINE)


def test_rescore_formats_are_the_parsers_choices() -> None:
    rescore = next(a for a in build_parser()._actions if a.dest == "command").choices["rescore"]  # type: ignore[index]
    fmt = next(a for a in rescore._actions if a.dest == "fmt")
    assert list(fmt.choices) == list(FORMATS)  # type: ignore[arg-type]


def test_reproducing_page_documents_every_rescore_format() -> None:
    page = (REPO / "docs" / "reproducing.md").read_text(encoding="utf-8")
    table = re.findall(r"^\| `(\w[\w-]*)` \|", page.split("## ", 1)[0], re.MULTILINE)
    assert sorted(table) == sorted(FORMATS)


def _batch_help(text: str) -> str:
    block = text.split("  --batch [N]", 1)[1].split("\n  -", 1)[0]
    return " ".join(block.split())


def test_certify_batch_help_speaks_of_the_judge(helps: dict[str, tuple[int, str]]) -> None:
    assert "the judge's calls" in _batch_help(helps["trustmh judge certify"][1])


def test_certify_batch_help_names_no_model_under_test(helps: dict[str, tuple[int, str]]) -> None:
    assert "model under test" not in _batch_help(helps["trustmh judge certify"][1])


@pytest.mark.parametrize("kind", ["length", "position", "authority", "self-preference", "placebos"])
def test_probe_help_names_each_probe_kind_and_what_it_detects(kind: str, helps: dict[str, tuple[int, str]]) -> None:
    assert f"  {kind}: detects " in helps["trustmh judge probe"][1]


def test_run_batch_help_still_names_the_model_under_test(helps: dict[str, tuple[int, str]]) -> None:
    assert "model under test" in _batch_help(helps["trustmh run"][1])


# What `judge certify --help` must not load: Inspect and scipy took it to about 5 s of CPU (issue 42).
HEAVY = ("inspect_ai", "scipy", "pandas")
PROBE = ("import sys\nfrom trustmh.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
         "print('loaded:' + ','.join(m for m in {heavy!r} if m in sys.modules))")


@pytest.mark.parametrize("argv", [["--help"], ["judge", "certify", "--help"], ["rescore", "--help"]])
def test_help_loads_neither_inspect_nor_scipy(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True,
                          text=True, timeout=120, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "loaded:"


def test_certify_help_takes_little_cpu() -> None:
    # CPU time, not wall time: the shared test machine's load stretches the wall clock, not the work. Measured
    # (issue 42): about 4.7 s before the deferred imports, 0.6 s after; the bound is generous.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "trustmh.cli", "judge", "certify", "--help"], capture_output=True,
                   timeout=120, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 2.5
