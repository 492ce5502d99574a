"""Test configuration: offline data from ../shared/data, never the network."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# stalls fail their test, no test-started process outlives the session (tests/support/stalls_and_leaks.py);
# pytester runs the planted stall and the planted leak that prove it (tests/test_stalls_and_leaks.py)
pytest_plugins = ["stalls_and_leaks", "pytester"]

REPO = Path(__file__).resolve().parents[1]
_DEFAULT_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("TRUSTMH_DATA_DIR", str(_DEFAULT_DATA))
os.environ["TRUSTMH_DATA_DIR"] = str(Path(os.environ["TRUSTMH_DATA_DIR"]).resolve())
os.environ.setdefault("TRUSTMH_OFFLINE", "1")
# the publishers' copies a test reads are the ones it names (a folder set in the shell would change every lookup)
os.environ.pop("TRUSTMH_PUBLISHERS_DIR", None)
# Inspect must never try to reach a real provider or display a TUI from tests.
os.environ.setdefault("INSPECT_DISPLAY", "none")
# The bundled model's Q4_0 copy (trustmh.models.gguf_q4_0) is made once for the whole session, not once per
# test's own cache folder.
if "TRUSTMH_MODELS_DIR" not in os.environ:
    os.environ["TRUSTMH_MODELS_DIR"] = tempfile.mkdtemp(prefix="trustmh-models-")
    atexit.register(shutil.rmtree, os.environ["TRUSTMH_MODELS_DIR"], ignore_errors=True)
# Judge certificates default to the current directory's trustmh-certificates/ (issue 53.5): the session keeps its own,
# never the checkout's nor the user's.
if "TRUSTMH_CERTIFICATES_DIR" not in os.environ:
    os.environ["TRUSTMH_CERTIFICATES_DIR"] = tempfile.mkdtemp(prefix="trustmh-certificates-")
    atexit.register(shutil.rmtree, os.environ["TRUSTMH_CERTIFICATES_DIR"], ignore_errors=True)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.environ["TRUSTMH_DATA_DIR"])
    if not path.is_dir():
        pytest.fail(f"TRUSTMH_DATA_DIR={path} does not exist; tests need ../shared/data")
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRUSTMH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))



def pytest_configure(config: pytest.Config) -> None:
    # the fast lane's rules, each a plugin of its own (tests/support/lanes.py, docs/contributing.md#tests)
    import lanes

    config.pluginmanager.register(lanes.CpuRule(), "trustmh-cpu-rule")
    config.pluginmanager.register(lanes.UnitLane(), "trustmh-unit-lane")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # A worker holds about 650,000 long-lived objects once the suite is collected (Inspect's and pydantic's
    # models, the test modules), which the cyclic collector scanned again and again: frozen out of its
    # generations and run less often, it spent 6 s instead of 13 s of the 100 s of CPU that
    # tests/pillars/conversation and tests/judges take (3 December 2026); the product keeps Python's defaults
    gc.freeze()
    gc.set_threshold(20_000, 50, 50)
