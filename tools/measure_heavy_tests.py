"""Write tests/support/heavy_tests.txt, the tests `make test-unit` leaves out, from a CPU report of the unit
lane's selection (`make heavy-tests` runs the lane with TRUSTMH_TEST_CPU_REPORT and calls this).

A test is heavy when its own setup plus call took more than OWN_S of CPU; a file is heavy, all its tests,
when the shared fixtures its tests built took more than SHARED_S (a module fixture that plays a run is paid by
whichever of its tests runs, so leaving out only some of them saves nothing). Measured, never kept by hand.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

OWN_S = 0.3
SHARED_S = 1.0
LIST = Path(__file__).resolve().parents[1] / "tests" / "support" / "heavy_tests.txt"
HEADER = ("# The tests `make test-unit` leaves out (marked `heavy` at collection, tests/support/lanes.py): measured by\n"
          "# `make heavy-tests` (tools/measure_heavy_tests.py), never edited by hand. A line is a test's node id,\n"
          f"# one over {OWN_S:g} s of CPU, or a file whose shared fixtures took over {SHARED_S:g} s.\n")


def heavy_entries(report: list[tuple[float, float, str]]) -> list[str]:
    shared: Counter[str] = Counter()
    for _, built, nodeid in report:
        shared[nodeid.split("::")[0]] += built
    files = sorted(f for f, s in shared.items() if s > SHARED_S)
    tests = sorted(nodeid for own, _, nodeid in report if own > OWN_S and nodeid.split("::")[0] not in files)
    return files + tests


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: measure_heavy_tests.py CPU_REPORT", file=sys.stderr)
        return 2
    report = []
    for line in Path(argv[0]).read_text(encoding="utf-8").splitlines():
        own, built, nodeid = line.split("\t", 2)
        report.append((float(own), float(built), nodeid))
    entries = heavy_entries(report)
    LIST.write_text(HEADER + "".join(f"{e}\n" for e in entries), encoding="utf-8")
    print(f"{LIST}: {len(entries)} entries from {len(report)} tests")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
