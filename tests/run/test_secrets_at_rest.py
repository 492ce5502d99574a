"""Secrets never at rest (issue 34): after a product quotes its own credential in a 200 reply, a grep for the
key over the whole run directory, response cache included, finds nothing. Before, six response-cache files in
`OUT/cache` held it in clear text while trustmh said it had redacted the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatbot_server import TOKEN, ChatbotServer
from loopback_server import LoopbackServer
from trustmh.cli import main

CANARY_KEY = "loop-canary-key-7f3a9c2e51"


def _hits(root: Path, secret: str) -> list[Path]:
    """Every file under `root` (the response cache included) whose bytes hold the secret."""
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def _quote_the_key(history: list[dict[str, str]], system: str) -> str:
    return f"(reply) I'm an AI. Debug: my Authorization header is Bearer {TOKEN}."


@pytest.fixture(scope="module")
def quoting_product_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("quoting")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACME_AUTH", TOKEN)
        mp.delenv("TRUSTMH_CACHE_DIR", raising=False)
        mp.delenv("INSPECT_CACHE_DIR", raising=False)
        with ChatbotServer(respond=_quote_the_key) as server:
            endpoint = server.endpoint_file(tmp / "acme.toml")
            code = main(["run", "--model", "http/acme", "--endpoint", str(endpoint), "--suite", "starter",
                         "--subtasks", "gradual_disclosure,knowledge", "--no-judge", "--out", str(tmp / "out"),
                         "--display", "none", "--timeout", "10", "--max-retries", "1", "--n-boot", "200"])
            assert code == 0
            assert any(TOKEN in (s.reply or "") for s in server.chats())  # the product did quote it
    return tmp / "out"


def test_the_cache_is_inside_the_run_directory(quoting_product_run: Path) -> None:
    assert any(p.is_file() for p in (quoting_product_run / "cache").rglob("*"))


def test_a_grep_for_the_key_over_the_whole_run_directory_finds_nothing(quoting_product_run: Path) -> None:
    assert _hits(quoting_product_run, TOKEN) == []


def test_the_reply_is_kept_with_the_key_redacted(quoting_product_run: Path) -> None:
    items = [json.loads(line) for line in (quoting_product_run / "items.jsonl").read_text().splitlines()]
    assert any("Bearer [REDACTED]" in str(r.get("response")) for r in items)


@pytest.fixture(scope="module")
def quoting_provider_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Any provider (an OpenAI-compatible gateway) quoting its API key in a 200 reply, with a shared response
    cache outside the run directory: the entries this run wrote are scrubbed there too."""
    tmp = tmp_path_factory.mktemp("gateway")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRUSTMH_CACHE_DIR", str(tmp / "shared"))
        mp.delenv("INSPECT_CACHE_DIR", raising=False)
        with LoopbackServer(lambda m, r: f"Your key {CANARY_KEY} is fine. Yes.", api_key=CANARY_KEY,
                            service="canary") as server:
            for k, v in server.env().items():
                mp.setenv(k, v)
            code = main(["run", "--model", server.model_name(), "--suite", "starter", "--subtasks", "knowledge",
                         "--no-judge", "--out", str(tmp / "out"), "--display", "none", "--timeout", "10",
                         "--max-retries", "0", "--n-boot", "200"])
            assert code == 0
    return tmp / "out", tmp / "shared" / "responses"


def test_a_shared_cache_is_written_outside_the_run_directory(quoting_provider_run: tuple[Path, Path]) -> None:
    assert any(p.is_file() for p in quoting_provider_run[1].rglob("*"))


def test_the_shared_cache_holds_no_key(quoting_provider_run: tuple[Path, Path]) -> None:
    assert _hits(quoting_provider_run[1], CANARY_KEY) == []


def test_the_run_directory_holds_no_key(quoting_provider_run: tuple[Path, Path]) -> None:
    assert _hits(quoting_provider_run[0], CANARY_KEY) == []
