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
  json-schema-test-suite                   # draft-07 conformance vectors for the argument validator
  libseccomp-dev                           # sandbox hardening: the seccomp filter
  libidn2-dev                              # fetch policy: IDNA (UTS #46) host names
  libcurl4-openssl-dev                     # fetch: the mediated request
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
)

missing=()
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    continue
  fi
  missing+=("$p")
done

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
