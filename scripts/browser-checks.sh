#!/usr/bin/env bash
# The browser checks for a user: B1-B4 and the sandbox lifetime (S1-S6) in
# Debian's Chromium, driven by playwright-core (docs/browser.md).
#   bash scripts/browser-checks.sh [--filter SUBSTRING]... [--json] [--list]
#   yarn tycli:diagnostics --browser [--filter ...]     (the same, through scripts/diagnostics.sh)
# Needs /usr/bin/chromium and node_modules/playwright-core: scripts/setup.sh installs both.
# Exit codes: 0 no check failed; 1 a check failed; 2 bad usage; 3 environment; 77 Chromium missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "${TASKYON_CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "browser checks: SKIP, ${TASKYON_CHROMIUM:-/usr/bin/chromium} is missing: run scripts/setup.sh" >&2
  exit 77
fi
exec node "$root/browser/tests/run.mjs" "$@"
