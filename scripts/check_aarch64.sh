#!/usr/bin/env bash
# make check-aarch64: every source that names syscalls, seccomp rules or an
# architecture compiles for aarch64 (clang-19 --target=aarch64-linux-gnu
# against Debian's arm64 cross libc and libstdc++, -fsyntax-only with the
# project's warnings). Syscall names differ there (no SYS_utime, SYS_fork,
# SYS_open, …): a call or rule that is not guarded fails here, on x86-64.
# It proves the code builds for aarch64, not that it runs there: nothing is
# linked or executed (this machine has no aarch64 CPU or emulator).
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot=/usr/aarch64-linux-gnu/include
if [ ! -d "$sysroot/c++/12" ]; then
  echo "check-aarch64: $sysroot/c++/12 is missing (scripts/setup.sh installs libstdc++-12-dev-arm64-cross)" >&2
  exit 1
fi
mapfile -t files < <(grep -rlE 'SYS_|__NR_|SCMP_SYS|__x86_64__|__aarch64__|x86_64|x64' src tests bench --include='*.cc' | sort)
flags=(--target=aarch64-linux-gnu -std=c++23 -fsyntax-only -Wall -Wextra -Werror
  -Wno-missing-field-initializers  # clang (not GCC, the native compiler) flags libseccomp's SCMP_A0_32 macro
  -nostdinc++ -isystem "$sysroot/c++/12" -isystem "$sysroot/c++/12/aarch64-linux-gnu" -isystem "$sysroot"
  -Isrc -Isrc/tycli -Itests -idirafter /usr/include
  -DTASKYON_SOURCE_DIR='"."' -DTASKYON_TESTDATA='"tests/testdata"' -DTYCLI_PATH='"tycli"' -DTASKYON_BUILD_DIR='"build"')
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -I{} sh -c 'clang++-19 "$@" {} || { echo "check-aarch64: {} does not compile for aarch64" >&2; exit 255; }' _ "${flags[@]}"
echo "check-aarch64: ${#files[@]} sources compile for aarch64"
