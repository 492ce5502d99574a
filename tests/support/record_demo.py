"""Run a golden run and record what it read: `python record_demo.py demo|canned OUT_DIR RECORD_JSON` (the offline
demo or the canned multi-pillar run; see demo_inputs.py).

The audit hook is installed before anything else is imported, so a file read while a module loads is seen too.
"""

import os
import sys

opened: set[str] = set()


def _watch(event: str, args: tuple) -> None:
    if event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        opened.add(os.path.abspath(os.fsdecode(args[0])))


sys.addaudithook(_watch)

from pathlib import Path  # noqa: E402  (after the hook: see the docstring)

import demo_inputs  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("demo", "canned"):
        sys.exit("usage: record_demo.py demo|canned OUT_DIR RECORD_JSON")
    sys.exit(demo_inputs.record(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), opened))
