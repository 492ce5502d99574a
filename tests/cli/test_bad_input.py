"""Bad input, everywhere: one clear line naming the option, file, row or field; a non-zero exit; no
traceback (unless --debug); nothing half-written. No case reaches a model: the model string points at a
closed loopback port, and errors must come first."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from trustmh.cli import main

NOWHERE = ["--model", "openai-api/nowhere/m", "--timeout", "1", "--max-retries", "0", "--display", "none"]
USMLE = Path("external/USMLE-Mental/USMLE-mental.jsonl")


@pytest.fixture(autouse=True)
def _nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOWHERE_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: nothing listens
    monkeypatch.setenv("NOWHERE_API_KEY", "not-a-key")


def good_row(data_dir: Path) -> dict:
    return json.loads((data_dir / USMLE).read_text(encoding="utf-8").splitlines()[0])


# Each case: (argv builder given tmp dir and data dir, expected text in the error line).
Case = tuple[Callable[[Path, Path], list[str]], str]


def run_args(*extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, data: ["run", *NOWHERE, "--out", str(tmp / "out"), "--no-judge", *extra]


def usmle_file(write: Callable[[Path, dict], None]) -> Callable[[Path, Path], list[str]]:
    def build(tmp: Path, data: Path) -> list[str]:
        path = tmp / "usmle.jsonl"
        write(path, good_row(data))
        return ["run", *NOWHERE, "--out", str(tmp / "out"), "--no-judge", "--subtasks", "knowledge",
                "-O", f"usmle_mental_path={path}"]
    return build


def _row(**change: object) -> Callable[[Path, dict], None]:
    def write(path: Path, row: dict) -> None:
        row = {**row, **change}
        path.write_text(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n", encoding="utf-8")
    return write


def _drop(key: str) -> Callable[[Path, dict], None]:
    def write(path: Path, row: dict) -> None:
        row = dict(row)
        row.pop(key)
        path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return write


def _results(tmp: Path, content: str, name: str = "results.json") -> Path:
    d = tmp / "run"
    d.mkdir(exist_ok=True)
    (d / name).write_text(content, encoding="utf-8")
    return d


def report_of(content: str) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, data: ["report", str(_results(tmp, content)), "--out", str(tmp / "board.html")]


def human_judge(human: str, judge: str) -> Callable[[Path, Path], list[str]]:
    def build(tmp: Path, data: Path) -> list[str]:
        (tmp / "h.csv").write_text(human, encoding="utf-8")
        (tmp / "j.csv").write_text(judge, encoding="utf-8")
        return ["align", "--human", str(tmp / "h.csv"), "--judge", str(tmp / "j.csv"), "--mode", "default",
                "--out", str(tmp / "a.json")]
    return build


HEAD = "conv_id,source,attribute,rater,score\n"
OK_HUMAN = HEAD + "".join(f"c{i},gpt4o,Empathy,h1,{1 + i % 5}\n" for i in range(12))
OK_JUDGE = HEAD.replace("rater", "judge") + "".join(f"c{i},gpt4o,Empathy,j1,{1 + (i + 1) % 5}\n" for i in range(12))

GATE_RUN = {"model": "m", "mode": "default", "suite": "trustmh", "subtasks": {
    "privacy/leakage": {"value": 0.0, "ci": [0.0, 0.02], "n": 200, "status": "ok", "direction": "lower"}}}


def gate_policy(check: str, sub: str = "privacy/leakage", top: str = "") -> Callable[[Path, Path], list[str]]:
    def build(tmp: Path, data: Path) -> list[str]:
        policy = tmp / "policy.toml"
        policy.write_text(f'{top}\n[[check]]\nid = "c"\nsubtask = "{sub}"\n{check}\n', encoding="utf-8")
        return ["gate", str(_results(tmp, json.dumps(GATE_RUN))), "--policy", str(policy)]
    return build


CASES: dict[str, Case] = {
    # numeric options out of range or not numbers
    **{f"run {flag} {v}": (run_args(flag, v), flag) for flag, vals in {
        "--limit": ["0", "-5", "abc", "1.5"], "--timeout": ["0", "-1", "x"], "--max-retries": ["-1", "x"],
        "--max-connections": ["0", "-2"], "--n-boot": ["0", "10", "-1"], "--seed": ["-1", "x", "2147483648", str(2**64)],
        "--max-tasks": ["0"], "--tier2-limit": ["0", "y"], "--epochs": ["0", "101", "x"]}.items() for v in vals},
    # unknown names
    "unknown sub-task": (run_args("--subtasks", "no_such_task"), "unknown sub-task"),
    "unknown pillar": (run_args("--pillars", "astrology"), "unknown pillar"),
    "unknown suite": (run_args("--suite", "nosuch"), "--suite"),
    "unknown mode": (run_args("--mode", "nosuch"), "--mode"),
    "unknown rubric": (run_args("--rubric", "nosuch"), "--rubric"),
    "unknown provider": (lambda t, d: ["run", "--model", "nosuchprovider/x", "--out", str(t / "o")],
                         "unknown model provider 'nosuchprovider'"),
    "model without provider": (lambda t, d: ["run", "--model", "gpt-4o", "--out", str(t / "o")],
                               "expected PROVIDER/MODEL"),
    "unknown judge provider": (lambda t, d: ["run", *NOWHERE, "--judge", "nope/j", "--out", str(t / "o")],
                               "unknown model provider 'nope'"),
    "unknown second judge": (lambda t, d: ["run", *NOWHERE, "--judge", "openai-api/nowhere/j", "--judge",
                                           "nope2/j", "--out", str(t / "o")], "nope2"),
    "same judge twice": (lambda t, d: ["run", *NOWHERE, "--judge", "openai-api/nowhere/j", "--judge",
                                       "openai-api/nowhere/j", "--out", str(t / "o")], "listed twice"),
    "unknown -O key": (run_args("-O", "colour=blue"), "-O colour: unknown option"),
    "-O key of another sub-task": (run_args("--subtasks", "knowledge", "-O", "rubric=upstream"),
                                   "for the chosen sub-tasks"),
    "-O typo lists known keys": (run_args("--subtasks", "knowledge", "-O", "usmle_path=x"), "usmle_mental_path"),
    "-O without =": (run_args("-O", "max_tokens_cap"), "KEY=VALUE"),
    "-O max_tokens_cap=abc": (run_args("-O", "max_tokens_cap=abc"), "max_tokens_cap"),
    "-O max_tokens_cap=0": (run_args("-O", "max_tokens_cap=0"), "at least 1"),
    "-O judge_max_tokens=-3": (run_args("-O", "judge_max_tokens=-3"), "judge_max_tokens"),
    "-O ensemble=bogus": (run_args("-O", "ensemble=bogus"), "ensemble"),
    "-O fairness_contexts=x": (run_args("--pillars", "fairness", "-O", "fairness_contexts=x"), "fairness_contexts"),
    "-O min_valid=0": (run_args("-O", "min_valid=0"), "min_valid"),
    "--epochs where no sub-task repeats": (run_args("--subtasks", "knowledge", "--epochs", "2"),
                                           "none of the chosen sub-tasks repeats"),
    "-O siri2_epochs (retired)": (run_args("--subtasks", "knowledge", "-O", "siri2_epochs=2"), "replaced by --epochs"),
    # conflicting options
    "--judge with --no-judge": (lambda t, d: ["run", *NOWHERE, "--judge", "openai-api/nowhere/j", "--no-judge",
                                              "--out", str(t / "o")], "contradict"),
    "--rubric vs -O rubric": (run_args("--subtasks", "crisis_escalation", "--rubric", "upstream", "-O",
                                       "rubric=trustmh"), "conflicts"),
    "--tier2-limit vs -O": (run_args("--tier2-limit", "5", "-O", "tier2_limit=6"), "conflicts"),
    "--pillars with mentalbench": (run_args("--suite", "mentalbench", "--pillars", "safety"), "--pillars"),
    "faithful-only mismatch": (run_args("--mode", "faithful", "--subtasks", "over_refusal"), "sub-task"),
    # --out
    "--out is a file": (lambda t, d: ["run", *NOWHERE, "--no-judge", "--out", str(_file(t))], "is a file"),
    "--out under a file": (lambda t, d: ["run", *NOWHERE, "--no-judge", "--out", str(_file(t) / "sub")],
                           "cannot write"),
    "--out holds a foreign run": (lambda t, d: ["run", *NOWHERE, "--no-judge", "--subtasks", "knowledge",
                                                "--out", str(_results(t, "{}"))], "no run.json"),
    "--out holds another configuration": (lambda t, d: ["run", *NOWHERE, "--no-judge", "--subtasks",
                                                        "knowledge", "--out", str(_manifest(t))],
                                          "different configuration"),
    # data files given by path
    "data path missing": (run_args("--subtasks", "knowledge", "-O", "usmle_mental_path=/nonexistent/u.jsonl"),
                          "does not exist"),
    "data path is a directory": (lambda t, d: run_args("--subtasks", "knowledge", "-O",
                                                       f"usmle_mental_path={t}")(t, d), "is a directory"),
    "data file empty": (usmle_file(lambda p, r: p.write_text("", encoding="utf-8")), "no items"),
    "data file not UTF-8": (usmle_file(lambda p, r: p.write_bytes(b'{"question": "caf\xe9"}\n')), "not UTF-8"),
    "data file truncated": (usmle_file(lambda p, r: p.write_text(json.dumps(r)[:40], encoding="utf-8")),
                            "invalid JSON"),
    "data row not an object": (usmle_file(lambda p, r: p.write_text("[1, 2]\n", encoding="utf-8")),
                               "expected a JSON object"),
    "data missing field question": (usmle_file(_drop("question")), "missing field 'question'"),
    "data missing field answer": (usmle_file(_drop("answer")), "missing field 'answer'"),
    "data missing field options": (usmle_file(_drop("options")), "missing field 'options'"),
    "data answer out of range": (usmle_file(_row(answer="Z")), "field 'answer'"),
    "data empty question": (usmle_file(_row(question="  ")), "field 'question'"),
    "data options not letters": (usmle_file(_row(options={"X": "a", "Y": "b"})), "field 'options'"),
    "data bad category": (usmle_file(_row(meta_info2=[1, 2])), "meta_info2"),
    # report
    "report missing dir": (lambda t, d: ["report", str(t / "none")], "no results.json"),
    "report invalid JSON": (report_of("{not json"), "not valid JSON"),
    "report not an object": (report_of("[1, 2]"), "expected a JSON object"),
    "report missing field": (report_of('{"model": "m", "mode": "default"}'), "missing field 'subtasks'"),
    "report sub-task lacks fields": (report_of('{"model": "m", "mode": "default", "subtasks": {"x/y": {}}}'),
                                     "lacks field"),
    "report not UTF-8": (lambda t, d: ["report", str(_bytes(t, b"\xff\xfe{"))], "not UTF-8"),
    # align
    "align no source": (lambda t, d: ["align"], "--mentalalign"),
    "align missing folder": (lambda t, d: ["align", "--mentalalign", str(t / "none")], "none"),
    "align human missing": (lambda t, d: ["align", "--human", str(t / "no.csv"), "--judge", str(t / "no2.csv")],
                            "no.csv"),
    "align n-boot too small": (lambda t, d: ["align", "--mentalalign", str(d / "mentalalign"), "--n-boot", "5"],
                               "--n-boot"),
    "align seed negative": (lambda t, d: ["align", "--mentalalign", str(d / "mentalalign"), "--seed", "-1"],
                            "--seed"),
    "align no common items": (human_judge(OK_HUMAN, OK_JUDGE.replace("c", "z")), ""),
    "align missing column": (human_judge(OK_HUMAN.replace("score", "value"), OK_JUDGE), ""),
    "align empty human file": (human_judge("", OK_JUDGE), ""),
    "align non-numeric score": (human_judge(OK_HUMAN.replace(",h1,3", ",h1,three"), OK_JUDGE), ""),
    # rescore
    "rescore missing source": (lambda t, d: ["rescore", "--format", "trustmh-original", "--from", str(t / "no"),
                                             "--out", str(t / "o")], "not a directory"),
    "rescore unknown format": (lambda t, d: ["rescore", "--format", "nosuch", "--from", str(t), "--out",
                                             str(t / "o")], "--format"),
    "rescore bad limit": (lambda t, d: ["rescore", "--format", "mentalbench", "--from", str(t), "--out",
                                        str(t / "o"), "--limit", "0"], "--limit"),
    "rescore empty folder": (lambda t, d: ["rescore", "--format", "trustmh-original", "--from", str(t),
                                           "--out", str(t / "o")], ""),
    # data
    "data fetch unknown": (lambda t, d: ["data", "fetch", "no_such_dataset"], "no_such_dataset"),
    "data verify unknown": (lambda t, d: ["data", "verify", "no_such_dataset"], "no_such_dataset"),
    "data unknown command": (lambda t, d: ["data", "frobnicate"], "frobnicate"),
    # gate policies (a valid run; the policy is what is wrong)
    "gate policy negative max": (gate_policy('max = -1'), "key 'max'"),
    "gate policy min above 1": (gate_policy('min = 1.5', sub="safety/over_refusal"), "key 'min'"),
    "gate policy infinite max": (gate_policy('max = inf'), "key 'max'"),
    "gate policy nan min": (gate_policy('min = nan', sub="safety/over_refusal"), "key 'min'"),
    "gate policy boolean min": (gate_policy('min = true', sub="safety/over_refusal"), "key 'min'"),
    "gate policy negative severity": (gate_policy('max = 0.1\nseverity = -10'), "key 'severity'"),
    "gate policy negative min_n": (gate_policy('max = 0.1', top="min_n = -5"), "key 'min_n'"),
    "gate policy quoted boolean": (gate_policy('max = 0.1', top='require_validated_judge = "false"'),
                                   "key 'require_validated_judge'"),
    "gate policy duplicate ids": (gate_policy('max = 0.1\n[[check]]\nid = "c"\nsubtask = "privacy/leakage"\n'
                                              'max = 0.2'), "duplicate id"),
    "gate policy unknown sub-task": (gate_policy('max = 0.1', sub="privacy/leakege"), "key 'subtask'"),
    "gate policy unknown metric": (gate_policy('metric = "leak"\nmax = 0.1'), "key 'metric'"),
    "gate policy judge threshold": (gate_policy('max = 0.1', top="[judge_min.binary]\nsensitivity = 2"),
                                    "judge_min.binary.sensitivity"),
    "gate policy not toml": (gate_policy('max = [0.1'), "not valid TOML"),
    "gate policy missing file": (lambda t, d: ["gate", str(_results(t, json.dumps(GATE_RUN))), "--policy",
                                              str(t / "none.toml")], "none.toml"),
    # a system prompt too large, or not text, is refused before it is sent with every call
    "-O system_prompt=/dev/zero": (run_args("--subtasks", "ai_disclosure", "-O", "system_prompt=/dev/zero"),
                                   "-O system_prompt=/dev/zero"),
    "-O system_prompt too large": (lambda t, d: run_args("--subtasks", "ai_disclosure", "-O",
                                                         f"system_prompt={_big(t)}")(t, d), "longer than"),
    # simulated-patient turns: a conversation of 100,000 turns would run for days
    **{f"-O turns={v}": (run_args("--subtasks", "simulated_patient", "-O", f"turns={v}"), why) for v, why in (
        ("100000", "-O turns=100000: at most 40"), ("41", "-O turns=41: at most 40"),
        ("0", "must be at least 1"), ("-1", "must be at least 1"), ("many", "-O turns"))},
    # --endpoint-moved takes two different URLs
    **{f"run --endpoint-moved {v}": (run_args("--endpoint-moved", v), "--endpoint-moved") for v in (
        "http://a/v1", "a=b", "http://a/v1=http://a/v1/", "=http://b/v1")},
    # a run directory another process is writing (its lock held)
    "run into a locked --out": (lambda t, d: ["run", *NOWHERE, "--out", str(_locked(t)), "--no-judge"],
                                "another trustmh process"),
    # top level
    "unknown command": (lambda t, d: ["frobnicate"], "frobnicate"),
    "no command": (lambda t, d: [], "command"),
    "list with an argument": (lambda t, d: ["list", "extra"], "extra"),
}


def _file(tmp: Path) -> Path:
    f = tmp / "a-file"
    f.write_text("x", encoding="utf-8")
    return f


def _bytes(tmp: Path, raw: bytes) -> Path:
    d = tmp / "bytes-run"
    d.mkdir(exist_ok=True)
    (d / "results.json").write_bytes(raw)
    return d


def _big(tmp: Path) -> Path:
    path = tmp / "prompt.txt"
    path.write_text("x" * 100_001, encoding="utf-8")
    return path


_HELD: list[int] = []  # lock descriptors held for the rest of the session (another "process")


def _locked(tmp: Path) -> Path:
    import fcntl
    import os

    from trustmh.run.rundir import LOCK

    out = tmp / "locked-out"
    out.mkdir()
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD.append(fd)
    return out


def _manifest(tmp: Path) -> Path:
    d = tmp / "other"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"seed": 99}), encoding="utf-8")
    return d


def test_the_matrix_is_large() -> None:
    assert len(CASES) >= 80


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name: str, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build, expected = CASES[name]
    argv = build(tmp_path, data_dir)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    err = capsys.readouterr().err
    assert code not in (0, None), f"{name}: accepted (exit {code})"
    assert "Traceback" not in err, err
    last = [line for line in err.strip().splitlines() if "error" in line.lower()]
    assert last, f"{name}: no error line in {err!r}"
    assert expected in err, f"{name}: {expected!r} not in {err!r}"
    for path, content in before.items():
        assert path.read_bytes() == content, f"{name}: {path} was changed"
    for made in ("results.json", "report.html", "board.html", "a.json", "gate.json", "summary.md"):
        assert not any(p.name == made for p in tmp_path.rglob(made) if p not in before), f"{name}: wrote {made}"


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--model", "nosuchprovider/x", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "unknown model provider" in err


@pytest.mark.parametrize("task_args, expected", [
    (["-T", "suite=trustmh", "-T", "psyharm_path=/nonexistent.csv"], "does not exist"),
    (["-T", "suite=starter"], "no judge configured"),
])
def test_inspect_eval_errors_are_one_line(task_args: list[str], expected: str, tmp_path: Path) -> None:
    """`inspect eval trustmh/<task>` with missing data or no judge: a clear message, not a 200-line trace."""
    task = "trustmh/jailbreak_resistance" if "psyharm" in task_args[-1] else "trustmh/antitoxic"
    proc = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", task, "--model", "mockllm/model",
                           *task_args, "--log-dir", str(tmp_path), "--display", "plain"],
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert expected in out, out[-2000:]
    assert out.count("Traceback") == 0, out[-2000:]
    assert len(out.splitlines()) < 40, out[-2000:]


def test_align_scores_outside_the_scale_are_announced(tmp_path: Path, data_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Out-of-range scores are data (the released human workbook holds 0s and 6s): left out, counted in the
    data-quality table, and announced, never silently."""
    argv = human_judge(OK_HUMAN.replace(",h1,5", ",h1,9"), OK_JUDGE)(tmp_path, data_dir)
    main(argv)
    err = capsys.readouterr().err
    assert "human ratings: 2 score(s) outside the 1-5 scale" in err
    assert "Traceback" not in err
