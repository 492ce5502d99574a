"""The key scrubber's fast check: which `.eval` logs need the full read-and-rewrite."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from trustmh.run import secrets as secrets_mod
from trustmh.run.secrets import eval_log_mentions, redact, scrub_eval_log, secret_values

KEY = "sk-test-0123456789abcdef"


def _eval_zip(path: Path, members: dict[str, str], compression: int | str = zipfile.ZIP_DEFLATED) -> Path:
    assert isinstance(compression, int)
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def _zstd() -> int:
    import inspect_ai.log  # noqa: F401  (registers zstd with zipfile, as Inspect writes its logs)

    return int(zipfile.ZIP_ZSTANDARD)  # type: ignore[attr-defined]


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED, "zstd"])
def test_a_key_in_any_member_is_found(tmp_path: Path, compression: int | str) -> None:
    compression = _zstd() if compression == "zstd" else compression
    clean = {"header.json": '{"eval": {"model": "openai/x"}}', "samples/1_epoch_1.json": '{"output": "hi"}'}
    assert not eval_log_mentions(_eval_zip(tmp_path / "a.eval", clean, compression), [KEY])
    leaked = clean | {"samples/2_epoch_1.json": f'{{"error": "401 for key {KEY}"}}'}
    assert eval_log_mentions(_eval_zip(tmp_path / "b.eval", leaked, compression), [KEY])


def test_a_key_written_json_escaped_is_found(tmp_path: Path) -> None:
    odd = 'pass"word\\0123'
    text = '{"error": "pass\\"word\\\\0123"}'  # how a JSON writer stores it
    assert odd not in text
    assert eval_log_mentions(_eval_zip(tmp_path / "c.eval", {"m.json": text}), [odd])
    accented = "clé-secrète-0123"
    assert eval_log_mentions(_eval_zip(tmp_path / "d.eval", {"m.json": '{"e": "cl\\u00e9-secr\\u00e8te-0123"}'}),
                             [accented])


def test_an_unreadable_log_takes_the_full_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.eval"
    bad.write_bytes(b"not a zip")
    assert eval_log_mentions(bad, [KEY])


def test_a_clean_log_is_neither_parsed_nor_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect_ai.log

    def must_not_parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the full read is only for logs that hold a key")

    monkeypatch.setattr(inspect_ai.log, "read_eval_log", must_not_parse)
    path = _eval_zip(tmp_path / "clean.eval", {"header.json": '{"status": "success"}'})
    before = path.read_bytes()
    assert scrub_eval_log(path, [KEY]) is False
    assert path.read_bytes() == before


@pytest.mark.slow
def test_a_real_inspect_log_is_read_in_a_fresh_process(tmp_path: Path) -> None:
    """Inspect writes zstd members, which Python < 3.14's zipfile reads only once Inspect has patched it."""
    import subprocess
    import sys

    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, get_model

    model = get_model("mockllm/model", custom_outputs=[ModelOutput.from_content("mockllm/model", f"echo {KEY}")])
    log = eval(Task(dataset=[Sample(input="hi", target="x")]), model=model, log_dir=str(tmp_path),
               display="none")[0]
    code = ("import sys; from pathlib import Path; from trustmh.run.secrets import eval_log_mentions; "
            "print(eval_log_mentions(Path(sys.argv[1]), [sys.argv[2]]), eval_log_mentions(Path(sys.argv[1]), "
            "['sk-absent-0123456789']))")
    done = subprocess.run([sys.executable, "-c", code, log.location, KEY], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False"]


def test_secret_values_and_redact() -> None:
    env = {"OPENAI_API_KEY": KEY, "LOOP_API_KEY": KEY + "-longer", "SHORT_KEY": "abc", "PATH": "/usr/bin"}
    found = secret_values(env)
    assert found == [KEY + "-longer", KEY], "longest first, short values ignored, non-secret names ignored"
    assert redact(f"a {KEY}-longer b {KEY}", found) == f"a {secrets_mod.REDACTED} b {secrets_mod.REDACTED}"


def test_a_log_at_a_url_is_checked_in_place(tmp_path: Path) -> None:
    import fsspec

    from trustmh.storage import Url

    fs = fsspec.filesystem("memory")
    local = _eval_zip(tmp_path / "a.eval", {"m.json": f'{{"error": "{KEY}"}}'})
    fs.pipe_file("/secrets-test/a.eval", local.read_bytes())
    fs.pipe_file("/secrets-test/b.eval", _eval_zip(tmp_path / "b.eval", {"m.json": "{}"}).read_bytes())
    assert eval_log_mentions(Url("memory://secrets-test/a.eval"), [KEY])
    assert not eval_log_mentions(Url("memory://secrets-test/b.eval"), [KEY])
