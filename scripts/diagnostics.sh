#!/usr/bin/env bash
# `yarn tycli:diagnostics [ARGS]` / `npm run tycli:diagnostics -- [ARGS]`:
# (with --browser: the browser checks, scripts/browser-checks.sh, instead)
# builds tycli if needed (set-up and all, as `make build` does the first time;
# an up-to-date build is only checked), then runs `tycli diagnostics ARGS`.
# TASKYON_BUILD names another build directory (default: build/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${TASKYON_BUILD:-$root/build}"

# --browser: the browser checks in Chromium instead (scripts/browser-checks.sh;
# the other arguments, e.g. --filter, go with them). They need no tycli build;
# B8 (strict mode) uses an existing $build/tycli (or $TASKYON_TYCLI) and SKIPs without.
for a in "$@"; do
  if [ "$a" = "--browser" ]; then
    if [ -z "${TASKYON_TYCLI:-}" ] && [ -x "$build/tycli" ]; then export TASKYON_TYCLI="$build/tycli"; fi
    args=()
    for b in "$@"; do [ "$b" = "--browser" ] || args+=("$b"); done
    exec bash "$root/scripts/browser-checks.sh" ${args[@]+"${args[@]}"}
  fi
done

if [ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ]; then
  if ! log=$(cmake --build "$build" --target tycli 2>&1); then
    printf '%s\n' "$log" >&2
    echo "diagnostics: building tycli failed (see above)" >&2
    exit 3
  fi
else
  make -C "$root" build BUILD="$build" >&2
fi

# Yarn 1 puts a directory of shell-script shims (node, yarn) first on PATH;
# a sandbox runs only the real Node executable, so that directory goes.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/yarn--[^/]*$' | paste -sd: -)
export PATH

exec "$build/tycli" diagnostics "$@"
