"""An endpoint file for the `http` provider (docs/products.md#endpoint), with or without the simulated clock
({{elapsed_seconds}}): what the pack tests set in ENDPOINT_ENV so a clock conversation is played, or not."""

from __future__ import annotations

from pathlib import Path


def endpoint_file(tmp_path: Path, clock: bool) -> Path:
    path = tmp_path / ("clock.toml" if clock else "plain.toml")
    extra = '\nelapsed = "{{elapsed_seconds}}"' if clock else ""
    path.write_text(f'url = "https://acme.example/chat"\n[body]\nmessages = "{{{{messages}}}}"{extra}\n'
                    '[reply]\npath = "text"\n', encoding="utf-8")
    return path
