"""Flags every published result carries so a reader cannot mistake a fragile number for a solid one."""

from __future__ import annotations

from trustmh.core import SMALL_N, SubtaskResult


def test_small_n_is_flagged_in_results_json() -> None:
    tiny = SubtaskResult(value=0.5, ci=(0.1, 0.9), n=2, n_invalid=0, direction="higher").to_json()
    assert tiny["small_n"] is True
    assert any("fewer than 30" in n for n in tiny["notes"])
    enough = SubtaskResult(value=0.5, ci=(0.4, 0.6), n=SMALL_N, n_invalid=0, direction="higher").to_json()
    assert enough["small_n"] is False
    assert enough["notes"] == []
    # a value that was not computed is not "small": it has no value at all
    nc = SubtaskResult.not_computed("no judge configured", "higher", n=3).to_json()
    assert nc["small_n"] is False
    assert nc["value"] is None


def test_files_are_written_with_the_users_umask(tmp_path) -> None:  # noqa: ANN001
    import os
    import stat

    from trustmh.storage import write_text_atomic

    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "report.html", "<p>ok</p>")
        os.umask(0o077)
        write_text_atomic(tmp_path / "private.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
