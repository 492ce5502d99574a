"""The shape of the package (issue 20): no import cycle, no arrow up the floors beyond two named ones,
function-level imports of trustmh's own code only where a comment says they keep start-up fast, no citation
of documents that are not in the repository, and runtime dependencies that are what src/ imports.

The graph is read with `ast` from src/trustmh/**/*.py, imports under `if TYPE_CHECKING:` left out (they never
run) except for cycles: a loop through a type-only import is still two modules that cannot be read apart. `from X import Y` counts as an import of X.Y when X.Y is a module, else of X; `import a.b` counts as an
import of a.b. The parent packages Python initialises on the way are not counted: they are a package's own
business, and a package `__init__` that re-exports its submodules would otherwise close a loop with each.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from fixture_paths import REPO

SRC = REPO / "src"
PACKAGE = SRC / "trustmh"

# Floors, bottom up (docs: the package layout). A module imports only its own floor or lower ones.
# Each entry names one of trustmh's modules (a stale name fails `test_every_floor_entry_is_a_module`); a
# package's entry covers its submodules, except the root `trustmh`, which is only its own `__init__`, so every
# top-level module is placed by name. The first floors are the ground floor, module by module as they import
# one another (`test_the_ground_floor_is_listed_module_by_module`).
FLOORS: list[tuple[str, ...]] = [
    ("trustmh", "trustmh.json_clean", "trustmh.exit_codes", "trustmh.flag_values", "trustmh.redaction",
     "trustmh.safe_text"),
    ("trustmh.core",),
    ("trustmh.digest", "trustmh.invalid", "trustmh.prompts", "trustmh.sampling", "trustmh.storage"),
    ("trustmh.data",),
    ("trustmh.models", "trustmh.prices", "trustmh.starter"),
    ("trustmh.discounts", "trustmh.inspect_batchers", "trustmh.prompt_cache"),
    ("trustmh.inspect_compat",),
    ("trustmh.stats",),
    ("trustmh.judges",),
    ("trustmh.scoring", "trustmh.multiturn"),
    ("trustmh.steps", "trustmh.offline"),
    ("trustmh.pillars",),
    ("trustmh.catalogue", "trustmh.options"),
    ("trustmh.results",),
    ("trustmh.gate",),
    ("trustmh.report",),
    ("trustmh.run", "trustmh._registry"),
    ("trustmh.align", "trustmh.certify", "trustmh.dossier"),
    ("trustmh.cli",),
]
# The floors that make up the ground floor of the package layout (docs/contributing.md): plain helpers,
# storage, data, models and the Inspect adapter, below the statistics.
GROUND_FLOORS = 7

# The arrows allowed to run up the floors (at most two), as (importer, imported).
UPWARD_ALLOWED: set[tuple[str, str]] = set()

# A function-level import of trustmh's own code must say that it keeps start-up fast: the import statement,
# or the comment lines directly above it (or above the block of imports it stands in), contain "start-up"
# or "startup".
# Exceptions, as (importer, imported): none.
UNCOMMENTED_LAZY_ALLOWED: set[tuple[str, str]] = set()

STARTUP_WORDS = ("start-up", "startup")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    in_function: bool
    commented: bool  # the statement or the comment lines directly above it say it keeps start-up fast


def _module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


MODULES = _module_names()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _owning_module(name: str) -> str | None:
    """The longest prefix of a dotted name that is one of trustmh's modules."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports_of(name: str, type_only: bool = False, source: str | None = None) -> list[Import]:
    """The imports of module `name` that run; with `type_only`, those under `if TYPE_CHECKING:` instead.
    `source`: what the module is read as (default: its file), so a check can be shown a planted import."""
    path = MODULES[name]
    source = path.read_text(encoding="utf-8") if source is None else source
    lines = source.splitlines()
    package = name if _is_package(name) else name.rpartition(".")[0]
    found: list[Import] = []

    def commented(node: ast.stmt) -> bool:
        first = node.lineno - 1
        # the comment may stand above a block of consecutive imports: it covers each of them
        while first > 0 and lines[first - 1].lstrip().startswith(("#", "from ", "import ")):
            first -= 1
        nearby = lines[first:node.end_lineno or node.lineno]
        return any(word in line.lower() for line in nearby for word in STARTUP_WORDS)

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        out = []
        for alias in node.names:
            full = f"{base}.{alias.name}"
            out.append(full if full in MODULES else base)
        return out

    def visit(node: ast.AST, in_function: bool, checking: bool = False) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit_stmt(stmt, in_function, checking=True)
                for stmt in child.orelse:
                    visit_stmt(stmt, in_function)
                continue
            visit_stmt(child, in_function, checking)

    def visit_stmt(node: ast.AST, in_function: bool, checking: bool = False) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if checking != type_only:
                return
            for target in targets(node):
                owner = _owning_module(target) if target.startswith("trustmh") else None
                if owner and owner != name:
                    found.append(Import(name, owner, node.lineno, in_function, commented(node)))
            return
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        visit(node, inside, checking)

    visit(_parsed(source), False)
    return found


@cache
def _all_imports(type_only: bool = False) -> tuple[Import, ...]:
    """Every import of src that runs (with `type_only`, those under `if TYPE_CHECKING:`). Walked on first use,
    not at import: every xdist worker collects this file, and the walk cost each of them 4 s before a test ran."""
    return tuple(imp for name in MODULES for imp in _imports_of(name, type_only=type_only))


def _covers(entry: str, name: str) -> bool:
    """Whether a floor entry places module `name`: the module itself, or (a package other than the root) any of
    its submodules."""
    return name == entry or (entry != "trustmh" and name.startswith(entry + "."))


def _floor(name: str) -> int:
    best, floor = -1, -1
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if _covers(prefix, name) and len(prefix) > best:
                best, floor = len(prefix), level
    return floor


def _upward(imports: list[Import]) -> set[tuple[str, str]]:
    """The (importer, imported) pairs that run up the floors."""
    return {(imp.importer, imp.imported) for imp in imports if _floor(imp.imported) > _floor(imp.importer)}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(MODULES):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def _a_loop(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """One loop through a strongly connected component, to name in a failure."""
    members = set(component)
    start = component[0]
    parents = {start: ""}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(edges[node] & members):
            if child == start:
                loop = [node]
                while parents[loop[-1]]:
                    loop.append(parents[loop[-1]])
                return [*reversed(loop), start]
            if child not in parents:
                parents[child] = node
                queue.append(child)
    return component


def test_every_module_has_a_floor() -> None:
    assert not [name for name in MODULES if _floor(name) < 0]


def test_the_import_graph_has_no_cycle() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in _all_imports():
        edges[imp.importer].add(imp.imported)
    loops = [" -> ".join(_a_loop(c, edges)) for c in _cycles(edges)]
    assert not loops, "import cycles:\n" + "\n".join(loops)


def test_the_import_graph_has_no_cycle_counting_type_only_imports() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in [*_all_imports(), *_all_imports(type_only=True)]:
        edges[imp.importer].add(imp.imported)
    loops = [" -> ".join(_a_loop(c, edges)) for c in _cycles(edges)]
    assert not loops, "import cycles through type-only imports:\n" + "\n".join(loops)


def _stale_entries(floors: list[tuple[str, ...]]) -> list[str]:
    """Floor entries that name no module of the package (a module since removed or renamed)."""
    return [entry for floor in floors for entry in floor if entry not in MODULES]


def test_every_floor_entry_is_a_module() -> None:
    assert _stale_entries(FLOORS) == []


def test_a_stale_floor_entry_is_found() -> None:
    assert _stale_entries([("trustmh", "trustmh.errors"), *FLOORS[1:]]) == ["trustmh.errors"]


def test_each_module_is_named_on_one_floor() -> None:
    named = [entry for floor in FLOORS for entry in floor]
    assert sorted({entry for entry in named if named.count(entry) > 1}) == []


def test_the_ground_floor_is_listed_module_by_module() -> None:
    """Every top-level module of the ground floor has its own entry, on the lowest floor its imports allow:
    one floor above the highest of what it imports (so a floor is what the code says, not a lump)."""
    ground = {_package(name) for name in MODULES if 0 <= _floor(name) < GROUND_FLOORS}
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in _all_imports():
        a, b = _package(imp.importer), _package(imp.imported)
        if a in ground and b in ground and a != b:
            edges[a].add(b)
    misplaced = {}
    for box in sorted(ground):
        lowest = 1 + max((_floor(b) for b in edges[box]), default=-1)
        if _floor(box) != lowest:
            misplaced[box] = (_floor(box), lowest)
    assert misplaced == {}, f"ground-floor modules not on the floor their imports give (listed, derived): {misplaced}"


def test_no_module_imports_a_higher_floor() -> None:
    assert len(UPWARD_ALLOWED) <= 2
    upward = _upward(_all_imports())
    unexpected = sorted(upward - UPWARD_ALLOWED)
    assert not unexpected, "imports up the floors:\n" + "\n".join(f"{a} -> {b}" for a, b in unexpected)
    stale = sorted(UPWARD_ALLOWED - upward)
    assert not stale, f"listed as allowed but no longer there (remove them): {stale}"


def _package(name: str) -> str:
    """The box a module is drawn in: its top-level package or module under trustmh (`trustmh.judges`)."""
    return ".".join(name.split(".")[:2])


# The structure drawing: one box per top-level package on the floor of its name, one arrow per package that
# imports another (type-only imports included). An arrow up is a package some of whose modules import from a
# higher floor; the drawing shows none.
DRAWING_ARROWS_UP_MAX = 0


def test_the_structure_drawing_has_no_arrow_up() -> None:
    every = [*_all_imports(), *_all_imports(type_only=True)]
    up = sorted({(_package(imp.importer), _package(imp.imported)) for imp in every
                 if _floor(_package(imp.imported)) > _floor(_package(imp.importer))})
    assert len(up) <= DRAWING_ARROWS_UP_MAX, "arrows up in the structure drawing:\n" + "\n".join(
        f"{a} -> {b}" for a, b in up)


def test_the_run_names_no_pillar() -> None:
    """run/ is generic: what a pillar needs from a run it declares on its sub-tasks (hooks, roles, rules)."""
    named = sorted({(imp.importer, imp.imported) for imp in _all_imports()
                    if imp.importer.startswith("trustmh.run.") and imp.imported.startswith("trustmh.pillars")})
    assert not named, "run/ imports pillars:\n" + "\n".join(f"{a} -> {b}" for a, b in named)


# The run is read stage by stage: a file that outgrows this holds more than one stage (docs/contributing.md).
RUN_FILE_MAX_LINES = 400


def test_each_stage_of_the_run_fits_one_file() -> None:
    long = {path.name: n for path in sorted((SRC / "trustmh" / "run").glob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > RUN_FILE_MAX_LINES}
    assert not long, f"run/ files over {RUN_FILE_MAX_LINES} lines: {long}"


# A module is read as one idea: one that outgrows this holds more than one (docs/contributing.md).
SRC_FILE_MAX_LINES = 500


def test_no_file_in_src_holds_more_than_one_idea() -> None:
    long = {str(path.relative_to(SRC)): n for path in sorted(PACKAGE.rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > SRC_FILE_MAX_LINES}
    assert not long, f"src/ files over {SRC_FILE_MAX_LINES} lines: {long}"


def test_function_level_imports_say_they_keep_start_up_fast() -> None:
    lazy = [imp for imp in _all_imports() if imp.in_function and not imp.commented]
    unexpected = sorted({(imp.importer, imp.imported, imp.line) for imp in lazy
                         if (imp.importer, imp.imported) not in UNCOMMENTED_LAZY_ALLOWED})
    assert not unexpected, ("function-level imports of trustmh's own code without a start-up comment:\n"
                            + "\n".join(f"{MODULES[a].relative_to(REPO)}:{line}: imports {b}"
                                        for a, b, line in unexpected))
    stale = sorted(UNCOMMENTED_LAZY_ALLOWED - {(imp.importer, imp.imported) for imp in lazy})
    assert not stale, f"listed as allowed but no longer there (remove them): {stale}"


def test_no_file_in_src_names_documents_outside_the_repository() -> None:
    named = [f"{path.relative_to(REPO)}: {doc}"
             for path in sorted(SRC.rglob("*")) if path.is_file() and path.suffix != ".pyc"
             for doc in ("PILLARS.md", "MENTALBENCH.md")
             if doc in path.read_bytes().decode("utf-8", errors="replace")]
    assert not named, named


def _third_party_imports() -> set[str]:
    """Top-level names of the distributions' modules that src/ imports (anywhere, even inside functions)."""
    names: set[str] = set()
    for source in SOURCES.values():
        for node in ast.walk(_parsed(source)):
            if isinstance(node, ast.Import):
                names |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.partition(".")[0])
    return {n for n in names if n != "trustmh" and n not in sys.stdlib_module_names}


def _requirement_name(spec: str) -> str:
    return re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0].lower().replace("_", "-")


# Imported by src/ but arriving through another dependency (found when this test was written; the lead decides
# whether to declare them): anyio and fsspec come with inspect-ai, markupsafe with jinja2.
TRANSITIVE_ALLOWED = {"anyio", "fsspec", "markupsafe"}
# Declared but never imported by src/, and why.
UNIMPORTED_ALLOWED = {
    "openai": "Inspect's openai and openai-api providers import it",
}


@pytest.mark.slow  # reads every import in src/ and every installed distribution's metadata: 3.9 s of CPU
def test_runtime_dependencies_are_what_src_imports() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {_requirement_name(s) for s in project["dependencies"]}
    extras = {_requirement_name(s) for name, specs in project["optional-dependencies"].items() if name != "dev"
              for s in specs}
    dists = packages_distributions()
    imported: dict[str, set[str]] = {}
    for module in _third_party_imports():
        for dist in dists.get(module, [module]):
            imported.setdefault(dist.lower().replace("_", "-"), set()).add(module)
    undeclared = sorted(m for d, ms in imported.items() if d not in runtime | extras for m in ms
                        if m not in TRANSITIVE_ALLOWED)
    assert not undeclared, f"src/ imports modules of undeclared distributions: {undeclared}"
    unused = sorted(runtime - set(imported) - set(UNIMPORTED_ALLOWED))
    assert not unused, f"runtime dependencies src/ never imports (move them to an extra or to dev): {unused}"


SOURCES: dict[str, str] = {name: path.read_text(encoding="utf-8") for name, path in MODULES.items()}


@cache
def _parsed(source: str) -> ast.Module:
    """A module's syntax tree, parsed once for all the walks below (they only read it)."""
    return ast.parse(source)


@pytest.fixture(scope="module", autouse=True)
def _sources_parsed() -> None:
    """Every module of src parsed once, up front: a setup the walks share (charged to itself under the fast
    lane's CPU rule, not to whichever walk runs first)."""
    for source in SOURCES.values():
        _parsed(source)
    _all_imports()
    _all_imports(type_only=True)


def _modules_using(names: set[str], module: str, sources: dict[str, str] = SOURCES) -> set[str]:
    """The modules of `sources` that import any of `names` from `module` or use them as `module.name`."""
    found = set()
    for name, source in sources.items():
        for node in ast.walk(_parsed(source)):
            imported = isinstance(node, ast.ImportFrom) and node.module == module and not node.level and any(
                alias.name in names for alias in node.names)
            used = isinstance(node, ast.Attribute) and node.attr in names and ast.unparse(node.value) == module
            if imported or used:
                found.add(name)
    return found


EVAL_CALLS = {"eval", "eval_set", "eval_async", "eval_retry"}
# The one module that sends generate requests (the model under test's, a judge's, the patient's), one attempt
# each; every loop around them is a step of the run (`trustmh.steps`).
GENERATE_SENDER = "trustmh.run.calls"
# Modules that read a model's `generate` without sending a request of their own, and why.
GENERATE_RELAYS = {
    "trustmh.inspect_compat": "wraps each provider's generate (safe_replies): it relays the request Inspect sends",
}


@cache
def _generate_uses(source: str) -> list[int]:
    """Lines of `source` that send a generate request or take hold of a way to: a call or a read of any
    `.generate` (a model's, a provider's), a call of a function parameter named `generate` or annotated
    `Generate` (an Inspect solver's), an import of Inspect's `generate` solver. A `def generate` (a provider
    answering one) and an assignment to `.generate` are neither."""
    tree = _parsed(source)
    lines = []
    solver_generates = {arg.arg for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                        if arg.arg == "generate" or (arg.annotation is not None
                                                     and ast.unparse(arg.annotation).endswith("Generate"))}
    for node in ast.walk(tree):
        model_generate = isinstance(node, ast.Attribute) and node.attr == "generate" and isinstance(node.ctx, ast.Load)
        solver_generate = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
            node.func.id in solver_generates)
        generate_solver = isinstance(node, ast.ImportFrom) and (node.module or "").startswith("inspect_ai") and any(
            alias.name == "generate" for alias in node.names)
        if model_generate or solver_generate or generate_solver:
            lines.append(node.lineno)
    return sorted(lines)


def _generate_senders(sources: dict[str, str]) -> set[str]:
    return {name for name, source in sources.items() if _generate_uses(source)}


def test_inspect_is_called_from_one_module() -> None:
    """Every evaluation (runs, certifications, rescoring) goes through the run's one Inspect call, with its roles,
    bounds, response cache and batch mode."""
    assert _modules_using(EVAL_CALLS, "inspect_ai") == {"trustmh.run.inspect_eval"}


def test_generate_requests_are_sent_from_one_module() -> None:
    """No module but the one call site sends a generate request: the model under test, the judges and the
    patient are each asked one attempt at a time by `run.calls`, whose callers (the solvers and scorers, through
    the run's steps) hold the loops."""
    assert _generate_senders(SOURCES) - set(GENERATE_RELAYS) == {GENERATE_SENDER}


def test_the_generate_relays_are_still_there() -> None:
    assert {name for name in GENERATE_RELAYS if _generate_uses(SOURCES[name])} == set(GENERATE_RELAYS)


# Planted faults: each check above must fail on the fault it is there to catch (shown a small synthetic module
# set or source, never by editing src).
PLANTED_JUDGE_LOOP = """
async def ask_my_judge(model, prompt):
    return (await model.generate(prompt)).completion
"""
PLANTED_SOLVER = """
from inspect_ai.solver import Generate, TaskState

async def solve(state: TaskState, generate: Generate) -> TaskState:
    return await generate(state)
"""


def test_a_planted_second_generate_call_is_found() -> None:
    planted = {**SOURCES, "trustmh.pillars.rogue": PLANTED_JUDGE_LOOP}
    assert _generate_senders(planted) - set(GENERATE_RELAYS) == {GENERATE_SENDER, "trustmh.pillars.rogue"}


def test_a_planted_solver_generate_is_found() -> None:
    assert _generate_uses(PLANTED_SOLVER) == [5]


def test_a_planted_alias_of_generate_is_found() -> None:
    assert _generate_uses("def ask(model):\n    send = model.generate\n    return send\n") == [2]


def test_a_provider_answering_generate_is_not_a_sender() -> None:
    assert _generate_uses("class Api:\n    async def generate(self, messages):\n        return messages\n") == []


def test_a_planted_eval_call_is_found() -> None:
    planted = {"trustmh.run.inspect_eval": SOURCES["trustmh.run.inspect_eval"],
               "trustmh.gate.rogue": "from inspect_ai import eval\n"}
    assert _modules_using(EVAL_CALLS, "inspect_ai", planted) == {"trustmh.run.inspect_eval", "trustmh.gate.rogue"}


def test_a_planted_upward_import_in_the_ground_floor_is_found() -> None:
    """The knot issue 48 untied, planted back: storage importing the Inspect adapter, which stands above the
    models."""
    planted = _imports_of("trustmh.storage", source="from trustmh.inspect_compat import trace_dir\n")
    assert _upward(planted) == {("trustmh.storage", "trustmh.inspect_compat")}


def test_a_planted_ground_floor_loop_is_found() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in [*_all_imports(), *_imports_of("trustmh.storage", source="import trustmh.data.download\n")]:
        edges[imp.importer].add(imp.imported)
    assert [c for c in _cycles(edges) if "trustmh.storage" in c] != []


def test_a_run_context_is_made_in_one_place() -> None:
    """`RunSpec.context()` makes every RunContext (a spec given whole, `run/direct.py`, for the callers without a
    command line): no module builds one itself."""
    builders = {name for name, source in SOURCES.items() for node in ast.walk(_parsed(source))
                if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "RunContext"}
    assert builders == {"trustmh.run.config"}
