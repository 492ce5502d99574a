"""Redacting secret values from text: the one rule every writer and reader of trustmh uses (the run's scrubbing
in `run/secrets.py`, the `http` provider's replies). Plain Python."""

from __future__ import annotations

from collections.abc import Iterable

REDACTED = "[REDACTED]"
# Shorter values are not worth scrubbing (and "none", "1"… would match everywhere).
MIN_SECRET_LEN = 8


def redact(text: str, secrets: Iterable[str]) -> str:
    for value in secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text
