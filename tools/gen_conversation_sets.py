"""Regenerate the shipped synthetic conversation sets (src/trustmh/pillars/conversation/sets/*.json) from their
declared designs (trustmh.pillars.conversation.designs; docs/conversations.md#sets). Deterministic: the same
code writes the same files byte for byte, and tests/pillars/conversation/test_conversation_generator.py checks
that the committed files are what this writes. Run:
    python tools/gen_conversation_sets.py [OUT_DIR]
"""
from __future__ import annotations

import sys
from pathlib import Path

from trustmh.pillars.conversation.designs import SETS_DIR, write_all


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else SETS_DIR
    for path in write_all(out):
        print(path)


if __name__ == "__main__":
    main()
