"""The data layer: registry contents, lookup order, checksums, downloads, `trustmh data` CLI.

Offline: `download.http_get` is replaced in every test (an autouse fixture makes any unexpected network
use fail); one test serves files from a loopback http.server on 127.0.0.1 to exercise the real fetcher.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bounded_http import Bounds
from fixture_paths import REPO
from trustmh.cli.data import main as data_main
from trustmh.core import TrustmhError
from trustmh.data import DATASETS, DataFile, Dataset, data_dir, download, registry, resolve

REQUIRED = [
    "usmle_mental", "emobench_eu", "confaide", "cpsycoune", "esconv_processed", "esconv", "elephant", "cssrs",
    "trustmh", "trustmh_ethics", "trustmh_privacy", "crisis", "mentalalign", "mentalbench",
    "d4", "swmh", "psyqa", "pas",
]
GATED = {"d4", "swmh", "psyqa", "pas"}
# Publisher repositories @ commits, as pinned in docs/pillars/index.md#sub-tasks.
PINNED = {
    "usmle_mental": "KaguraRuri/Psy-Eval/173c6f454001f3494ea1f4f74d83cef65840add0/",
    "emobench_eu": "Sahandfer/EmoBench/3b4f84312541f8469e909965e1fff3691ef85c62/",
    "confaide": "skywalker023/confAIde/3174c63e689226189675a740b7bf9053f10bae50/",
    "cpsycoune": "CAS-SIAT-XinHai/CPsyCoun/1954f2e2d01d3b0f568e1673a525a6d3d9a34c03/",
    "trustmh": "Qiyuan0130/TrustMH_Bench/94d65dbd125bfc5df64f0530f35fe0f568a13eb7/",
    "trustmh_ethics": "Qiyuan0130/TrustMH_Bench/94d65dbd125bfc5df64f0530f35fe0f568a13eb7/",
    "trustmh_privacy": "Qiyuan0130/TrustMH_Bench/94d65dbd125bfc5df64f0530f35fe0f568a13eb7/",
    "esconv": "thu-coai/Emotional-Support-Conversation/f262d062ad74cb39b17ea476facc81568ddcba24/",
    "elephant": "myracheng/elephant/83263944cffdfd8caa48f8da2436642fd4e681bc/",
    "crisis": "ellisalicante/LLMs-Mental-Health-Crisis/f4a70c1fd4ea6f7e09d50721065db4a4039e9fac/",
}


def _shared_data() -> Path:
    value = os.environ.get("TRUSTMH_DATA_DIR") or str(REPO.parent / "shared" / "data")
    p = Path(value)
    return (p if p.is_absolute() else REPO / p).resolve()


SHARED = _shared_data()
needs_shared = pytest.mark.skipif(not (SHARED / "MANIFEST.sha256").is_file(), reason="shared/data not present")


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def read_manifest() -> dict[str, str]:
    out = {}
    for line in (SHARED / "MANIFEST.sha256").read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, rel = line.split(None, 1)
            out[rel.strip().removeprefix("./")] = digest
    return out


class FakeNet:
    """Serves registered URLs from a dict of bytes; records every request."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.calls: list[str] = []

    def __call__(self, url: str) -> Iterator[bytes]:
        self.calls.append(url)
        if url not in self.bodies:
            raise OSError(f"404 (fake) {url}")
        body = self.bodies[url]
        yield body[: len(body) // 2]  # two chunks, so streaming is exercised
        yield body[len(body) // 2 :]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNet:
    """Fresh cache, no offline flag, real data dir, and no real network unless a test opts in."""
    monkeypatch.setenv("TRUSTMH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(SHARED))
    monkeypatch.delenv("TRUSTMH_OFFLINE", raising=False)
    net = FakeNet()
    monkeypatch.setattr(download, "http_get", net)
    return net


def add_dataset(monkeypatch: pytest.MonkeyPatch, files: list[DataFile], name: str = "synthetic") -> Dataset:
    ds = Dataset(name=name, title="synthetic test set", licence="CC0", source="https://example.invalid",
                 files=tuple(files), notes="test only")
    monkeypatch.setitem(registry.DATASETS, name, ds)
    return ds


def no_part_files(root: Path) -> bool:
    return not any(p.name.endswith(".part") for p in root.rglob("*")) if root.exists() else True


# --- registry contents -------------------------------------------------------------------------------------


def test_every_spec_dataset_is_registered_with_metadata() -> None:
    for name in REQUIRED:
        ds = DATASETS[name]
        assert ds.name == name, name
        assert ds.title, name
        assert ds.licence, name
        assert ds.source, name
        assert ds.notes, name
        assert ds.gated == (name in GATED), name
        if ds.gated:
            assert not ds.files
            assert ds.access
            assert (ds.user_option.startswith("-O ") or "TRUSTMH_DATA_DIR" in ds.user_option)
        else:
            assert ds.files, name
    for name, prefix in PINNED.items():
        urls = DATASETS[name].urls
        assert urls, name
        assert all(u.startswith("https://raw.githubusercontent.com/" + prefix) for u in urls), name
    assert DATASETS["crisis"].licence == "none stated"
    assert "PsyQA" in DATASETS["trustmh"].notes
    assert "NC" in DATASETS["esconv"].licence
    ethics_urls = DATASETS["trustmh_ethics"].urls
    assert ethics_urls
    assert all(u.endswith("TrustMH_Bench/DimGroup2/Ethics.zip") for u in ethics_urls)
    assert all(u.endswith("privacy.zip") for u in DATASETS["trustmh_privacy"].urls)
    # Trust on first use: no hash known in advance, but downloadable.
    for name, rel in [("esconv", "external/ESConv/ESConv.json"), ("elephant", "external/ELEPHANT/datasets/OEQ.csv"),
                      ("elephant", "external/ELEPHANT/datasets/AITA.csv")]:
        df = DATASETS[name].file(rel)
        assert df is not None, rel
        assert df.tofu, rel
    # The crisis files' sha256 at the pinned commit are registered in advance (not trust on first use).
    assert all(f.sha256 and not f.tofu and f.relpath.startswith("external/LLMs-Mental-Health-Crisis/data/")
               for f in DATASETS["crisis"].files)
    # MentalBench-100k: the zip at the publisher's commit, known by its git blob id; sha256 pinned on first use.
    (mb,) = DATASETS["mentalbench"].files
    assert mb.git_blob == "e1d5cdb70ecdec9856efac384bc5746eccb8db81"
    assert mb.tofu
    assert mb.url == ("https://raw.githubusercontent.com/abeerbadawi/MentalBench-Align/"
                      "03cfc4be2b7c181232652af304dc96d9bbcc5f8a/MentalBench-100k/MentalBench-100k.zip")
    # All registered URLs are the publishers' (no third-party mirrors).
    for ds in DATASETS.values():
        for u in ds.urls:
            assert u.startswith("https://raw.githubusercontent.com/"), u
            assert re.search(r"/[0-9a-f]{40}/", u), u


def pins_not_here() -> dict[str, str]:
    path = SHARED / "PINS-not-here.sha256"
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        if line.strip() and not line.startswith("#"):
            digest, rel = line.split()[:2]
            out[rel] = digest
    return out


@needs_shared
def test_registry_hashes_match_manifest_and_cover_it() -> None:
    manifest = read_manifest()
    registered = {f.relpath: f for ds in DATASETS.values() for f in ds.files}
    for rel, digest in manifest.items():
        assert rel in registered, f"{rel} is in MANIFEST.sha256 but not registered"
        assert registered[rel].sha256 == digest, rel
    for rel, f in registered.items():
        if (SHARED / rel).is_file():
            assert rel in manifest, rel
            assert f.sha256 == manifest[rel], rel
        elif f.sha256 is not None and f.git_blob is None:
            # files that are not in the reference data: their hash comes from PINS-not-here.sha256
            assert pins_not_here().get(rel) == f.sha256, f"{rel}: has a hash but is not in the reference data"


# --- resolve order -----------------------------------------------------------------------------------------


def test_resolve_order_user_path_data_dir_cache_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        isolated: FakeNet) -> None:
    body = b"synthetic,row\n1,2\n"
    url = "https://raw.githubusercontent.com/example/repo/" + "0" * 40 + "/a.csv"
    add_dataset(monkeypatch, [DataFile("external/Syn/a.csv", sha(body), url)])
    isolated.bodies[url] = body
    ddir, cache = tmp_path / "dd", tmp_path / "cache"
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(ddir))

    # 4. nothing local -> download into the cache
    got = resolve("synthetic", "external/Syn/a.csv")
    assert got == cache / "external/Syn/a.csv"
    assert got.read_bytes() == body
    assert len(isolated.calls) == 1
    # 3. cache hit -> no new download
    assert resolve("synthetic", "external/Syn/a.csv") == got
    assert len(isolated.calls) == 1
    # 2. data dir beats cache
    (ddir / "external/Syn").mkdir(parents=True)
    (ddir / "external/Syn/a.csv").write_bytes(body)
    assert resolve("synthetic", "external/Syn/a.csv") == ddir / "external/Syn/a.csv"
    # 1. user path beats everything, even for a different file
    mine = tmp_path / "mine.csv"
    mine.write_text("x\n")
    assert resolve("synthetic", "external/Syn/a.csv", user_path=mine) == mine
    assert len(isolated.calls) == 1


@needs_shared
def test_resolve_real_file_from_data_dir_and_folder() -> None:
    got = resolve("usmle_mental", "external/USMLE-Mental/USMLE-mental.jsonl")
    assert got == SHARED / "external/USMLE-Mental/USMLE-mental.jsonl"
    folder = resolve("trustmh_ethics", "trustmh/TrustMH_Bench/DimGroup2/Ethics/outputs")
    assert folder == SHARED / "trustmh/TrustMH_Bench/DimGroup2/Ethics/outputs"
    assert folder.is_dir()
    assert data_dir() == SHARED


def test_unknown_dataset_or_relpath_is_a_clear_error() -> None:
    with pytest.raises(TrustmhError, match="unknown dataset 'nope'"):
        resolve("nope", "x")
    with pytest.raises(TrustmhError, match="not a registered file"):
        resolve("usmle_mental", "external/USMLE-Mental/other.jsonl")
    with pytest.raises(TrustmhError, match="relative"):
        resolve("usmle_mental", "../etc/passwd")


# --- checksums ---------------------------------------------------------------------------------------------


@needs_shared
def test_corrupt_file_in_data_dir_names_file_and_both_hashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rel = "trustmh/dataset/PsyHarm.csv"
    data = bytearray((SHARED / rel).read_bytes())
    data[len(data) // 2] ^= 0x01  # one byte changed
    bad = tmp_path / "dd" / rel
    bad.parent.mkdir(parents=True)
    bad.write_bytes(bytes(data))
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "dd"))
    expected = read_manifest()[rel]
    with pytest.raises(TrustmhError) as ei:
        resolve("trustmh", rel)
    msg = str(ei.value)
    assert str(bad) in msg
    assert expected in msg
    assert sha(bytes(data)) in msg


def test_hash_is_computed_once_per_file_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = b"hello\n"
    add_dataset(monkeypatch, [DataFile("s/a.txt", sha(body))])
    (tmp_path / "dd/s").mkdir(parents=True)
    (tmp_path / "dd/s/a.txt").write_bytes(body)
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "dd"))
    calls: list[Path] = []
    real = registry.sha256_file
    monkeypatch.setattr(registry, "sha256_file", lambda p: calls.append(p) or real(p))
    for _ in range(3):
        resolve("synthetic", "s/a.txt")
    assert len(calls) == 1
    # An edit is noticed (size/mtime change) and caught.
    (tmp_path / "dd/s/a.txt").write_bytes(b"hello, edited\n")
    with pytest.raises(TrustmhError, match="checksum mismatch"):
        resolve("synthetic", "s/a.txt")


# --- missing, offline, gated ------------------------------------------------------------------------------


def test_missing_file_offline_is_a_clear_error_without_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              isolated: FakeNet) -> None:
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    with pytest.raises(TrustmhError, match="TRUSTMH_OFFLINE=1"):
        resolve("usmle_mental", "external/USMLE-Mental/USMLE-mental.jsonl")
    assert isolated.calls == []


def test_missing_file_download_failure_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       isolated: FakeNet) -> None:
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    with pytest.raises(TrustmhError, match="download of .*USMLE-mental.jsonl failed"):
        resolve("usmle_mental", "external/USMLE-Mental/USMLE-mental.jsonl")
    assert len(isolated.calls) == 1
    assert no_part_files(tmp_path / "cache")
    # A file with no registered download says where to put it and which option to pass.
    with pytest.raises(TrustmhError, match="-O cssrs_path=PATH"):
        resolve("cssrs", "external/C-SSRS/500_Reddit_users_posts_labels.csv")
    assert len(isolated.calls) == 1


@pytest.mark.parametrize("name", sorted(GATED))
def test_gated_dataset_needs_a_user_path(name: str, tmp_path: Path) -> None:
    ds = DATASETS[name]
    with pytest.raises(TrustmhError) as ei:
        resolve(name, "anything.csv")
    msg = str(ei.value)
    assert "gated" in msg
    assert ds.user_option in msg
    assert ds.access
    assert ds.access in msg
    mine = tmp_path / "mine.csv"
    mine.write_text("text,label\n")
    assert resolve(name, "anything.csv", user_path=mine) == mine
    with pytest.raises(TrustmhError, match="does not exist"):
        resolve(name, "anything.csv", user_path=tmp_path / "absent.csv")


# --- downloads ---------------------------------------------------------------------------------------------


def test_checksum_failure_leaves_nothing_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     isolated: FakeNet) -> None:
    url = "https://raw.githubusercontent.com/example/repo/" + "1" * 40 + "/b.json"
    add_dataset(monkeypatch, [DataFile("external/Syn/b.json", sha(b"the real bytes"), url)])
    isolated.bodies[url] = b"tampered bytes!"
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    with pytest.raises(TrustmhError) as ei:
        resolve("synthetic", "external/Syn/b.json")
    assert sha(b"the real bytes") in str(ei.value)
    assert sha(b"tampered bytes!") in str(ei.value)
    final = tmp_path / "cache/external/Syn/b.json"
    assert not final.exists()
    assert no_part_files(tmp_path / "cache")


def test_unregistered_url_is_refused(tmp_path: Path, isolated: FakeNet) -> None:
    with pytest.raises(TrustmhError, match="not a registered publisher URL"):
        download.download("https://example.com/x.csv", tmp_path / "x.csv", None)
    assert isolated.calls == []


def test_trust_on_first_use_pins_the_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          isolated: FakeNet) -> None:
    url = "https://raw.githubusercontent.com/example/repo/" + "2" * 40 + "/full.json"
    add_dataset(monkeypatch, [DataFile("external/Syn/full.json", None, url)])
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    isolated.bodies[url] = b'{"v": 1}'
    got = resolve("synthetic", "external/Syn/full.json")
    assert download.load_pins()["external/Syn/full.json"] == sha(b'{"v": 1}')
    # The publisher's file changes: a fresh download no longer matches the pin.
    got.unlink()
    isolated.bodies[url] = b'{"v": 2}'
    with pytest.raises(TrustmhError, match="pinned at first download"):
        resolve("synthetic", "external/Syn/full.json")
    assert not got.exists()
    assert no_part_files(tmp_path / "cache")
    # A cached copy edited after pinning is caught too.
    isolated.bodies[url] = b'{"v": 1}'
    resolve("synthetic", "external/Syn/full.json").write_bytes(b'{"v": 3}')
    with pytest.raises(TrustmhError, match="checksum mismatch"):
        resolve("synthetic", "external/Syn/full.json")


def _zip_of(folder: Path, arc_root: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, f"{arc_root}/{p.relative_to(folder).as_posix()}")
    return buf.getvalue()


@needs_shared
def test_zip_member_download_of_real_ethics_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   isolated: FakeNet) -> None:
    # Served zip built from the reference copy, laid out like the publisher's Ethics.zip (Ethics/...).
    (url,) = DATASETS["trustmh_ethics"].urls
    isolated.bodies[url] = _zip_of(SHARED / "trustmh/TrustMH_Bench/DimGroup2/Ethics", "Ethics")
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    rel = "trustmh/TrustMH_Bench/DimGroup2/Ethics/data/EthicMH.csv"
    got = resolve("trustmh_ethics", rel)
    assert got == tmp_path / "cache" / rel
    assert sha(got.read_bytes()) == read_manifest()[rel]
    # The zip is fetched once and reused for the other members.
    folder = resolve("trustmh_ethics", "trustmh/TrustMH_Bench/DimGroup2/Ethics/outputs")
    assert len(list(folder.glob("*.json"))) == 12
    assert isolated.calls == [url]
    assert download.load_pins()["archive:" + url] == sha(isolated.bodies[url])


def test_zip_member_with_wrong_hash_is_not_extracted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     isolated: FakeNet) -> None:
    url = "https://raw.githubusercontent.com/example/repo/" + "3" * 40 + "/pack.zip"
    add_dataset(monkeypatch, [
        DataFile("syn/pack/ok.txt", sha(b"ok\n"), archive_url=url, member="pack/ok.txt"),
        DataFile("syn/pack/bad.txt", sha(b"expected\n"), archive_url=url, member="pack/bad.txt"),
    ])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("pack/ok.txt", b"ok\n")
        zf.writestr("pack/bad.txt", b"something else\n")
    isolated.bodies[url] = buf.getvalue()
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    assert resolve("synthetic", "syn/pack/ok.txt").read_bytes() == b"ok\n"
    with pytest.raises(TrustmhError, match="checksum mismatch"):
        resolve("synthetic", "syn/pack/bad.txt")
    assert not (tmp_path / "cache/syn/pack/bad.txt").exists()
    assert no_part_files(tmp_path / "cache")


def test_real_fetcher_over_loopback_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The genuine urllib path, against a server on 127.0.0.1 that lives only for this test.
    monkeypatch.undo()  # restore the real download.http_get (and the environment) ...
    monkeypatch.setenv("TRUSTMH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.delenv("TRUSTMH_OFFLINE", raising=False)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    served = tmp_path / "served"
    served.mkdir()
    body = b"a,b\n1,2\n" * 1000
    (served / "c.csv").write_bytes(body)

    class Served(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(served), **kwargs)

    # one download makes one GET; a retry or a second fetch would break the bound and fail the test
    with Bounds("file server", max_requests=1, max_seconds=30) as server:
        server.serve(Served)
        url = f"http://127.0.0.1:{server.port}/c.csv"
        monkeypatch.setattr(download, "TIMEOUT_S", 5)
        add_dataset(monkeypatch, [DataFile("syn/c.csv", sha(body), url)])
        got = resolve("synthetic", "syn/c.csv")
    assert got.read_bytes() == body


# --- CLI -------------------------------------------------------------------------------------------------


@needs_shared
def test_cli_verify_real_data_passes(capsys: pytest.CaptureFixture[str]) -> None:
    rc = data_main(["verify"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    m = re.search(r"verify: (\d+) ok, (\d+) mismatched", out.out)
    n_present = sum(1 for rel in read_manifest() if (SHARED / rel).is_file())
    assert m
    assert int(m.group(1)) == n_present
    assert m.group(2) == "0"


@needs_shared
def test_cli_verify_reports_mismatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    rel = "external/ConfAIde/tier_1.txt"
    (tmp_path / "dd" / rel).parent.mkdir(parents=True)
    shutil.copyfile(SHARED / rel, tmp_path / "dd" / rel)
    with open(tmp_path / "dd" / rel, "ab") as fh:
        fh.write(b"x")
    rc = data_main(["--data-dir", str(tmp_path / "dd"), "verify", "confaide"])
    err = capsys.readouterr().err
    assert rc == 1
    assert rel in err
    assert read_manifest()[rel] in err
    assert sha((tmp_path / "dd" / rel).read_bytes()) in err
    assert os.environ["TRUSTMH_DATA_DIR"] == str(SHARED)  # --data-dir applies to that command only


def test_cli_list_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert data_main(["list"]) == 0
    out = capsys.readouterr().out
    for name in REQUIRED:
        assert re.search(rf"^{name}\s", out, re.M), name
    if (SHARED / "external/USMLE-Mental/USMLE-mental.jsonl").is_file():
        assert re.search(r"^usmle_mental\s.*data dir", out, re.M)
    assert re.search(r"^d4\s.*user path only", out, re.M)


def test_cli_fetch_downloads_missing_and_explains_gated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        isolated: FakeNet, capsys: pytest.CaptureFixture[str]) -> None:
    url = "https://raw.githubusercontent.com/example/repo/" + "4" * 40 + "/f.txt"
    add_dataset(monkeypatch, [DataFile("syn/f.txt", sha(b"f\n"), url)])
    isolated.bodies[url] = b"f\n"
    assert data_main(["fetch", "synthetic"]) == 0
    assert (tmp_path / "cache/syn/f.txt").read_bytes() == b"f\n"
    assert data_main(["fetch", "synthetic"]) == 0
    assert isolated.calls == [url]  # present: not fetched again
    capsys.readouterr()
    assert data_main(["fetch", "d4"]) == 1
    assert "-O d4_path=PATH" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["fetch"], ["fetch", "nope"], ["verify", "nope"], ["bogus"],
                                  ["fetch", "--all", "trustmh"]])
def test_cli_bad_input_exits_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert data_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("trustmh data: error:")
    assert "\n" not in err


def test_cli_fetch_offline_is_refused(monkeypatch: pytest.MonkeyPatch, isolated: FakeNet,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    assert data_main(["fetch", "esconv"]) == 2
    assert "TRUSTMH_OFFLINE" in capsys.readouterr().err
    assert isolated.calls == []


# --- MentalBench-100k: a zip at a pinned commit, known by its git blob id ----------------------------------

MB_COLUMNS = ["context", "response", "Claude-3.5-Haiku", "deepseek-llama", "deepseek-qwen", "Gemini", "gpt-4o",
              "gpt-4omini", "Llama-3.1", "Qwen-2.5", "Qwen-3"]  # the repository's docs/dataset_description.md


def mentalbench_zip() -> bytes:
    """A small zip of MentalBench-100k's layout: one CSV with the documented columns, two synthetic rows."""
    lines = [",".join(MB_COLUMNS)] + [",".join(f'"synthetic {c} {i}"' for c in MB_COLUMNS) for i in (1, 2)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("MentalBench-100k.csv", "\n".join(lines) + "\n")
    return buf.getvalue()


def git_hash_object(data: bytes) -> str:
    # written out here, independently of registry.git_blob_id
    return hashlib.sha1(b"blob " + str(len(data)).encode() + b"\x00" + data).hexdigest()


def test_git_blob_id_known_values(tmp_path: Path) -> None:
    assert registry.git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob
    assert registry.git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    f = tmp_path / "x.bin"
    f.write_bytes(bytes(range(256)) * 5000)  # several read chunks
    assert registry.git_blob_id_file(f) == git_hash_object(f.read_bytes())


def serve_mentalbench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, isolated: FakeNet, *,
                      registered: bytes, served: bytes) -> None:
    """Registers MentalBench's real URL with the git blob id of `registered`, serves `served` there and
    points the data folder at an empty one, so that resolving it must download."""
    from trustmh.pillars.mentalbench.data import MENTALBENCH_REL

    real = DATASETS["mentalbench"].file(MENTALBENCH_REL)
    assert real is not None
    assert real.url is not None
    add_dataset(monkeypatch, [DataFile(MENTALBENCH_REL, None, real.url, git_blob=git_hash_object(registered))],
                name="mentalbench")
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    isolated.bodies[real.url] = served


def test_mentalbench_zip_verified_by_blob_id_and_sha256_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             isolated: FakeNet) -> None:
    from trustmh.pillars.mentalbench.data import MENTALBENCH_REL, load_mentalbench

    body = mentalbench_zip()
    serve_mentalbench(monkeypatch, tmp_path, isolated, registered=body, served=body)
    got = resolve("mentalbench", MENTALBENCH_REL)
    assert got.read_bytes() == body
    assert download.load_pins()[MENTALBENCH_REL] == sha(body)  # trust on first use, after the blob check
    data = load_mentalbench(got)  # the CSV read out of the zip
    assert [r.context for r in data.rows] == ["synthetic context 1", "synthetic context 2"]
    assert len(data.sources) == 10


def test_mentalbench_zip_one_changed_byte_fails_the_blob_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             isolated: FakeNet) -> None:
    from trustmh.pillars.mentalbench.data import MENTALBENCH_REL

    body = mentalbench_zip()
    flipped = bytearray(body)
    flipped[len(flipped) // 2] ^= 0x01
    serve_mentalbench(monkeypatch, tmp_path, isolated, registered=body, served=bytes(flipped))
    with pytest.raises(TrustmhError, match="expected git blob id") as ei:
        resolve("mentalbench", MENTALBENCH_REL)
    assert git_hash_object(bytes(flipped)) in str(ei.value)
    assert not (tmp_path / "cache" / MENTALBENCH_REL).exists()
    assert no_part_files(tmp_path / "cache")
    assert MENTALBENCH_REL not in download.load_pins()  # nothing pinned from a failed check


def test_registered_mentalbench_entry_checks_the_publishers_blob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                isolated: FakeNet) -> None:
    from trustmh.pillars.mentalbench.data import MENTALBENCH_REL

    real = DATASETS["mentalbench"].file(MENTALBENCH_REL)
    assert real is not None
    assert real.url is not None
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "empty"))
    isolated.bodies[real.url] = mentalbench_zip()  # not the publisher's bytes
    with pytest.raises(TrustmhError, match="e1d5cdb70ecdec9856efac384bc5746eccb8db81"):
        resolve("mentalbench", MENTALBENCH_REL)
    # a user's copy in the data folder is checked against the blob id too
    ddir = tmp_path / "dd"
    (ddir / MENTALBENCH_REL).parent.mkdir(parents=True)
    (ddir / MENTALBENCH_REL).write_bytes(mentalbench_zip())
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(ddir))
    with pytest.raises(TrustmhError, match="expected git blob id e1d5cdb7"):
        resolve("mentalbench", MENTALBENCH_REL)
