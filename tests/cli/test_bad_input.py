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
    monkeypatch.setenv("EMPTY_VAR_34", "")
    monkeypatch.delenv("NO_SUCH_VAR_34", raising=False)


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


def _finished(tmp: Path) -> Path:
    """A finished run of its own: results.json and an Inspect log."""
    d = _results(tmp, json.dumps(GATE_RUN), name="results.json")
    (d / "logs").mkdir(exist_ok=True)
    (d / "logs" / "x.eval").write_bytes(b"PK")
    return d


def _sparse(tmp: Path, size: int) -> Path:
    path = tmp.parent / f"{tmp.name}-huge.jsonl"  # beside the case's folder: the harness reads what is inside
    with path.open("wb") as fh:
        fh.truncate(size)  # a sparse file: its size is on record, its blocks are not on the disk
    return path


def _prices_file(text: str) -> Callable[[Path], str]:
    def write(tmp: Path) -> str:
        path = tmp / "prices.toml"
        path.write_text('["openai-api/nowhere/m"]\n' + text + "\n", encoding="utf-8")
        return str(path)
    return write


def prices_args(text: str | None, *extra: str, prices: str | None = None) -> Callable[[Path, Path], list[str]]:
    """`run` with a price file holding `text` (or the file `prices`), then `extra`."""
    return lambda tmp, data: run_args("--prices", prices or _prices_file(text or PRICES_OK)(tmp), *extra)(tmp, data)


PRICES_OK = "input = 1.0\noutput = 2.0"
REVERSED_JUDGE = "[judge_min.binary]\nkappa = 0.8\n[judge_max.binary]\nkappa = 0.5"


def _policy(tmp: Path, top: str) -> Path:
    path = tmp / "policy.toml"
    path.write_text(f'{top}\n[[check]]\nid = "c"\nsubtask = "privacy/leakage"\nmax = 0.1\n', encoding="utf-8")
    return path


ENDPOINT = ('url = "https://x.example/chat"\n[body]\nmessages = "{{messages}}"\ntag = "t"\n'
            '[reply]\npath = "text"\n')


def _endpoint_args(text: str) -> Callable[[Path, Path], list[str]]:
    def build(tmp: Path, data: Path) -> list[str]:
        path = tmp / "acme.toml"
        path.write_text(text, encoding="utf-8")
        return ["run", "--model", "http/acme", "--endpoint", str(path), "--no-judge", "--timeout", "1",
                "--max-retries", "0", "--out", str(tmp / "o")]
    return build


REF_CSV = "item_id,response,human_a\ni0,good,1\ni1,good,1\ni2,plain,0\ni3,plain,0\ni4,good,1\n"


def _certify_args(csv_text: str | None, *extra: str) -> Callable[..., list[str]]:
    def build(tmp: Path, data: Path, raw: bytes | None = None) -> list[str]:
        path = tmp / "ref.csv"
        if raw is not None:
            path.write_bytes(raw)
        else:
            path.write_text(csv_text or "", encoding="utf-8")
        return ["judge", "certify", "--judge", "openai-api/nowhere/j", "--reference", str(path), "--subtask",
                "safety/over_refusal", "--judge-key", "helpful", "--certificates", str(tmp / "certs"),
                "--timeout", "1", "--max-retries", "0", *extra]
    return build


SAMPLE_ITEM = {"key": "safety/over_refusal::i1::1", "subtask": "safety/over_refusal", "item_id": "i1", "epoch": 1,
               "judge_value": 1.0, "inclusion_probability": 0.5}
SAMPLE_OK = json.dumps({"items": [SAMPLE_ITEM], "scales": {"safety/over_refusal": [0.0, 1.0]}})
LABELS_OK = "rater,subtask,item_id,epoch,label\nr,safety/over_refusal,i1,1,1\n"


def _review_import(labels: str, sample: str = SAMPLE_OK) -> Callable[[Path, Path], list[str]]:
    def build(tmp: Path, data: Path) -> list[str]:
        run = _results(tmp, json.dumps(GATE_RUN))
        (run / "review").mkdir(exist_ok=True)
        (run / "review" / "sample.json").write_text(sample, encoding="utf-8")
        (tmp / "labels.csv").write_text(labels, encoding="utf-8")
        return ["review", "import", str(run), str(tmp / "labels.csv"), "--certificates", str(tmp / "certs")]
    return build


def _crisis_0_100(tmp: Path, data: Path) -> list[str]:
    """The crisis study's layout with one evaluator's scores on a 0-100 scale."""
    merged = tmp / "study" / "data" / "llm_evaluator" / "judge-a" / "n_200" / "merged"
    merged.mkdir(parents=True)
    rows = [{"inputs": [f"user turn {i}"], "answer": f"reply {i}", "label": "no_risk", "evaluation": 60 + i}
            for i in range(3)]
    (merged / "judge-a-evaluation_model-x-answers-crisis_n200-20250101_000000_merged.json").write_text(
        json.dumps(rows), encoding="utf-8")
    return ["rescore", "--format", "crisis-original", "--from", str(tmp / "study"), "--out", str(tmp / "o")]


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
    # issue 34: every numeric option within its stated range, before anything is read or asked
    **{f"run {flag} {v}": (run_args(flag, v), flag) for flag, vals in {
        "--n-boot": ["1000000000", "100001"], "--limit": ["1000001"], "--timeout": ["86401"],
        "--max-retries": ["101"], "--max-connections": ["10001"], "--log-buffer": ["100001"],
        "--epochs": ["0", "1000000000"]}.items() for v in vals},
    **{f"run {flag} {v}": (prices_args(None, flag, v), flag) for flag, v in (
        ("--budget", "inf"), ("--budget", "nan"), ("--latency", "inf"), ("--budget", "0"))},
    **{f"-O {kv}": (run_args(*where, "-O", kv), f"-O {kv}: at most") for where, kv in (
        (("--suite", "mentalbench"), "samples=1000"), (("--subtasks", "privacy_awareness"), "awareness_samples=101"),
        (("--subtasks", "knowledge"), "max_tokens_cap=1000000"), (("--suite", "mentalbench"), "judge_repeats=1000"),
        (("--subtasks", "simulated_patient"), "judge_repeats=101"))},
    # empty role names are refused at once (an empty --patient used to fail after 102 s)
    **{f"run {flag} {v!r}": (run_args(flag, v), flag) for flag, v in (
        ("--patient", ""), ("--patient", " "), ("--patient", "openai/a,,openai/b"), ("--judge", ""),
        ("--model", ""))},
    # --out names a directory, never the current one by accident
    "run --out ''": (lambda t, d: ["run", *NOWHERE, "--no-judge", "--out", ""], "--out"),
    "merge --out ''": (lambda t, d: ["merge", str(t), "--out", ""], "--out"),
    "report --out ''": (lambda t, d: ["report", str(t), "--out", ""], "--out"),
    "merge --out over a finished run": (lambda t, d: ["merge", str(t / "s0"), "--out", str(_finished(t))],
                                        "holds a finished run of its own"),
    # a file input is bounded by its size before it is read
    "data path /dev/zero": (run_args("--subtasks", "knowledge", "-O", "usmle_mental_path=/dev/zero"),
                            "not a regular file"),
    "data path too large": (lambda t, d: run_args("--subtasks", "knowledge", "-O",
                                                  f"usmle_mental_path={_sparse(t, 3 << 30)}")(t, d), "larger than"),
    # price files: every rate finite and >= 0 (a NaN rate switched the budget off)
    **{f"prices {name}": (prices_args(text, "--budget", "1"), why) for name, text, why in (
        ("input nan", "input = nan\noutput = 1.0", "field 'input'"),
        ("output inf", "input = 1.0\noutput = inf", "field 'output'"),
        ("cached_input -inf", "input = 1.0\noutput = 1.0\ncached_input = -inf", "field 'cached_input'"),
        ("negative", "input = -1.0\noutput = 1.0", "field 'input'"),
        ("boolean", "input = true\noutput = 1.0", "field 'input'"),
        ("string", 'input = "0.1"\noutput = 1.0', "field 'input'"),
        ("missing output", "input = 1.0", "field 'output'"),
        ("unknown rate", "input = 1.0\noutput = 1.0\ninptu = 2.0", "inptu"),
        ("not toml", "input = [", "not valid TOML"))},
    "prices /dev/zero": (prices_args(None, "--budget", "1", prices="/dev/zero"), "not a regular file"),
    # plan takes the same prices, budget and numbers, and refuses them the same way
    "plan prices nan": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--prices",
                                      _prices_file("input = nan\noutput = 1.0")(t), "--budget", "1"],
                        "field 'input'"),
    "plan --budget inf": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--budget", "inf"], "--budget"),
    "plan --target-width nan": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--target-width", "nan"],
                                "--target-width"),
    # issue 43.5: a width or difference for a rate is below 1 (5 was a typo for 0.05, planned as 1 item)
    "plan --target-width 5": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--subtasks", "knowledge",
                                            "--target-width", "5"], "--target-width 5: reliability/knowledge is "
                              "sized as a rate"),
    "plan --detect-difference 1": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--subtasks", "knowledge",
                                                 "--detect-difference", "1"], "--detect-difference 1: "),
    "plan --n-boot huge": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--n-boot", "1000000000"], "--n-boot"),
    "plan --pilot ''": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--pilot", ""], "--pilot"),
    "plan --policy reversed": (lambda t, d: ["plan", *NOWHERE, "--no-judge", "--policy",
                                             str(_policy(t, REVERSED_JUDGE))], "reversed interval"),
    # endpoint files: every ${VAR} set and non-empty, in any field; the file bounded and valid
    **{f"endpoint {name}": (_endpoint_args(text), why) for name, text, why in (
        ("unset variable in url", ENDPOINT.replace("https://x.example/chat", "https://x.example/${NO_SUCH_VAR_34}"),
         "url needs the environment variable NO_SUCH_VAR_34, which is not set"),
        ("unset variable in body", ENDPOINT.replace('tag = "t"', 'tag = "${NO_SUCH_VAR_34}"'),
         "body.tag needs the environment variable NO_SUCH_VAR_34"),
        ("unset variable in a header", ENDPOINT + '[headers]\nX-Key = "k ${NO_SUCH_VAR_34}"\n',
         "headers.X-Key needs the environment variable NO_SUCH_VAR_34"),
        ("empty variable in a header", ENDPOINT + '[headers]\nX-Key = "${EMPTY_VAR_34}"\n',
         "EMPTY_VAR_34, which is empty"),
        ("not toml", "url = [", "not valid TOML"))},
    "endpoint /dev/zero": (lambda t, d: ["run", "--model", "http/acme", "--endpoint", "/dev/zero", "--no-judge",
                                         "--out", str(t / "o")], "not a regular file"),
    # policy packs: intervals and counts checked
    "gate policy reversed judge interval": (gate_policy("max = 0.1", top=REVERSED_JUDGE), "reversed interval"),
    "gate policy reversed check interval": (gate_policy("max = 0.1\njudge_min = {mae = 2.0}\n"
                                                        "judge_max = {mae = 1.0}"), "reversed interval"),
    "gate policy min_n true": (gate_policy("max = 0.1", top="min_n = true"), "key 'min_n'"),
    "gate policy check min_n true": (gate_policy("max = 0.1\nmin_n = true"), "key 'min_n'"),
    "gate policy check min_n 2.5": (gate_policy("max = 0.1\nmin_n = 2.5"), "key 'min_n'"),
    "gate policy /dev/zero": (lambda t, d: ["gate", str(_results(t, json.dumps(GATE_RUN))), "--policy",
                                            "/dev/zero"], "/dev/zero"),
    "gate a shard": (lambda t, d: ["gate", str(_results(t, json.dumps({**GATE_RUN, "shard": [0, 2]})))],
                     "shard 0/2"),
    "gate pack on a shard": (lambda t, d: ["gate", str(_results(t, json.dumps({**GATE_RUN, "shard": [1, 4]}))),
                                           "--policy", "ca-sb243"], "shard 1/4"),
    # judge certify: the reference's labels are of the declared type; every option in range
    **{f"certify {name}": (_certify_args(csv, *extra), why) for name, csv, extra, why in (
        ("binary label abc", REF_CSV.replace("i3,plain,0", "i3,plain,abc"), ("--label-type", "binary"),
         "row 5 column human_a: 'abc' is not a binary label"),
        ("binary label nan", REF_CSV.replace("i3,plain,0", "i3,plain,nan"), ("--label-type", "binary"),
         "row 5 column human_a: 'nan' is not a binary label"),
        ("binary label 2", REF_CSV.replace("i3,plain,0", "i3,plain,2"), ("--label-type", "binary"),
         "row 5 column human_a"),
        ("ordinal label nan", REF_CSV.replace("i3,plain,0", "i3,plain,nan"), ("--label-type", "ordinal"),
         "row 5 column human_a: 'nan' is not a number"),
        ("no label type", REF_CSV, (), "--label-type"),
        ("missing column", REF_CSV.replace("response", "reply"), ("--label-type", "binary"), "missing: response"),
        ("ragged row", REF_CSV.replace("i3,plain,0", "i3,plain,0,extra"), ("--label-type", "binary"),
         "row 5: 4 field(s), the header has 3"),
        ("unknown threshold", REF_CSV, ("--label-type", "binary", "--threshold", "nosuch=0.5"), "'nosuch'"),
        ("threshold out of range", REF_CSV, ("--label-type", "binary", "--threshold", "kappa=5"), "outside"),
        ("limit 0", REF_CSV, ("--label-type", "binary", "--limit", "0"), "--limit"),
        ("n-boot huge", REF_CSV, ("--label-type", "binary", "--n-boot", "1000000000"), "--n-boot"),
        ("seed negative", REF_CSV, ("--label-type", "binary", "--seed", "-1"), "--seed"),
        ("timeout 0", REF_CSV, ("--label-type", "binary", "--timeout", "0"), "--timeout"))},
    "certify Latin-1 CSV": (lambda t, d: _certify_args(None, "--label-type", "binary")(t, d, REF_CSV.replace(
        "plain", "caf\xe9").encode("latin-1")), "not UTF-8"),
    "certify empty judge": (lambda t, d: ["judge", "certify", "--judge", "", "--reference", "x.csv"], "--judge"),
    "certify /dev/zero": (lambda t, d: ["judge", "certify", "--judge", "mockllm/model", "--reference", "/dev/zero",
                                        "--subtask", "safety/over_refusal", "--judge-key", "helpful",
                                        "--label-type", "binary"], "/dev/zero"),
    # review: the sample and the labels checked, file and row named
    "review import off-scale label": (_review_import("rater,subtask,item_id,epoch,label\nr,safety/over_refusal,i1,1,7\n"),
                                      "row 2 column label: '7' is not on"),
    "review import label not a number": (_review_import("rater,subtask,item_id,epoch,label\n"
                                                        "r,safety/over_refusal,i1,1,yes\n"), "row 2 column label"),
    "review import corrupted sample": (_review_import(LABELS_OK, sample="{not json"), "sample.json: not valid JSON"),
    "review import sample without scales": (_review_import(LABELS_OK, sample=json.dumps({"items": [SAMPLE_ITEM]})),
                                            "field 'scales'"),
    "review import sample item field": (_review_import(LABELS_OK, sample=json.dumps(
        {"items": [{**SAMPLE_ITEM, "epoch": "one"}], "scales": {"safety/over_refusal": [0, 1]}})),
        "items[0].epoch"),
    "review import ragged labels": (_review_import("rater,subtask,item_id,epoch,label\nr,x\n"), "row 2"),
    "review import a rater's second label": (_review_import(LABELS_OK + "r,safety/over_refusal,i1,1,0\n"),
                                             "row 3: rater 'r' labels safety/over_refusal item i1 epoch 1 a second"),
    "review import into a locked run": (lambda t, d: _lock(_review_import(LABELS_OK)(t, d), t / "run"),
                                        "writing this run directory; wait for it to end, then run this command"),
    "review export --out into a missing folder": (
        lambda t, d: ["review", "export", str(_results(t, json.dumps(GATE_RUN))), "--out",
                      str(t / "no-such-folder" / "page.html"), "--n", "1", "--seed", "0"],
        "no-such-folder does not exist"),
    "review export --n 0": (lambda t, d: ["review", "export", str(t), "--n", "0", "--seed", "0"], "--n"),
    "review export --raters 1": (lambda t, d: ["review", "export", str(t), "--n", "4", "--seed", "0", "--raters", "1"],
                                 "--raters must be at least 2"),
    "review import sample raters": (_review_import(LABELS_OK, sample=json.dumps(
        {"items": [{**SAMPLE_ITEM, "raters": ["r"]}], "scales": {"safety/over_refusal": [0, 1]}})),
        "items[0].raters must list at least two"),
    "review adjudicate before export": (lambda t, d: ["review", "adjudicate", str(t), str(_file(t))],
                                        "review export"),
    # rescore: scores off the study's 1-5 scale are refused, naming file, row and field
    "rescore crisis-original 0-100 scores": (_crisis_0_100, "row 0 field 'evaluation': 60 is off the study's 1-5 scale"),
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


def _lock(argv: list[str], run: Path) -> list[str]:
    """`argv` for a run directory another process is writing (its lock held for the session)."""
    import fcntl
    import os

    from trustmh.run.rundir import LOCK

    fd = os.open(run / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD.append(fd)
    return argv


def _manifest(tmp: Path) -> Path:
    d = tmp / "other"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"seed": 99}), encoding="utf-8")
    return d


# issue 43.5: the messages that now name what failed end with "could not run" (2), as every bad input does
NAMED_43 = ["review import a rater's second label", "review import into a locked run",
            "review export --out into a missing folder", "plan --target-width 5", "plan --detect-difference 1"]


@pytest.mark.parametrize("name", NAMED_43)
def test_issue_43_messages_are_one_line_and_exit_could_not_run(name: str, tmp_path: Path, data_dir: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from trustmh.exit_codes import COULD_NOT_RUN

    code = main(CASES[name][0](tmp_path, data_dir))
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("trustmh: error:")]
    assert (code, len(errors),
            "Traceback" in err) == (COULD_NOT_RUN, 1, False)


def test_the_matrix_is_large() -> None:
    assert len(CASES) >= 80


# cases that run too long for the fast lane's 3-second rule (docs/contributing.md#tests), and why
SLOW_CASES = {"plan --policy reversed": "plans the whole default suite before it reads the policy: 7 s of CPU"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_CASES else name
                                  for name in CASES])
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


@pytest.mark.slow  # an inspect eval subprocess each: 5 s of CPU
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
