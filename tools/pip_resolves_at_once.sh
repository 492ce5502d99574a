#!/usr/bin/env bash
# Runs a pip command and fails if pip's resolver backtracked ("pip is looking at multiple versions of ...":
# minutes lost on a fresh install, and a sign that constraints.txt no longer agrees with the dependencies).
# Usage: tools/pip_resolves_at_once.sh PIP_COMMAND...
set -uo pipefail
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    exit "$status"
fi
if grep -q "is looking at multiple versions" "$log"; then
    echo "pip backtracked while resolving (see the lines above): bring constraints.txt in line with the" \
         "dependencies so that pip resolves at once" >&2
    exit 1
fi
