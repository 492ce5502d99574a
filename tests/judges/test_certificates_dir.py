"""Issue 53.5: judge certificates live in the project's folder by default (`./trustmh-certificates`, found the same
way by every command), never in a folder shared by every project of the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustmh.judges import certificates


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(certificates.ENV_DIR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(certificates, "_FORMER_SAID", [])
    return tmp_path


def test_the_default_is_the_current_directorys_folder(project: Path) -> None:
    assert certificates.certificates_dir(None) == project.resolve() / "trustmh-certificates"


def test_certificates_left_in_the_former_shared_folder_are_named_once(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    former = project / "home" / ".cache" / "trustmh" / "certificates"
    former.mkdir(parents=True)
    (former / "abc.json").write_text("{}")
    certificates.certificates_dir(None)
    certificates.certificates_dir(None)
    assert capsys.readouterr().err.count(f"no longer from {former}; to use those, pass --certificates") == 1


def test_the_environment_variable_still_chooses(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(certificates.ENV_DIR, str(project / "elsewhere"))
    assert certificates.certificates_dir(None) == project / "elsewhere"
