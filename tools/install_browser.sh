#!/usr/bin/env bash
# Headless Chromium + chromedriver for the browser tests (tests/report/test_report_browser.py).
# Idempotent: does nothing when both are present. Never fails CI: without apt (or root), the browser
# tests skip and say why.
set -u
have() { command -v "$1" >/dev/null 2>&1; }
if have chromium && have chromedriver; then
  echo "install_browser: chromium and chromedriver already present"
  exit 0
fi
if ! have apt-get; then
  echo "install_browser: apt-get not available; browser tests will skip" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if have sudo && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "install_browser: not root and no passwordless sudo; browser tests will skip" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
# wait for another apt run rather than fail on its lock
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 || true
if ! $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium chromium-driver \
    >/dev/null 2>&1; then
  echo "install_browser: apt-get install chromium chromium-driver failed; browser tests will skip" >&2
fi
exit 0
