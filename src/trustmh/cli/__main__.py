"""`python -m trustmh.cli`: the `trustmh` command (used by --workers to start its shard processes)."""

from trustmh.cli import main

raise SystemExit(main())
