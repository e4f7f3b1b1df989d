#!/usr/bin/env bash
# make wasm: Debian's sources of libidn2 and re2 (the versions the native build
# links, pinned), unpacked into OUT and prepared for wasm32-wasi:
#   OUT/libidn2-2.3.3: configured for wasm32-wasi with clang-22; lib/ and the
#     bundled unistring/ compiled; OUT/lib/libidn2.a, OUT/lib/libunistring.a
#   OUT/re2-20220601+dfsg: Debian's patches applied, Unicode tables generated
#     from Debian's unicode-data (as the package's own build does); wasm/CMakeLists.txt
#     compiles it.
# Needs the deb-src line and the packages scripts/setup.sh installs. Idempotent:
# each part is done once (a stamp file), so later builds only compile our code.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
IDN2=2.3.3-1
RE2=20220601+dfsg-1
cc="clang-22 --target=wasm32-wasi -Wno-deprecated"

fetch() {  # package version
  mkdir -p "$out/dl"
  if ! ls "$out/dl/$1_$2.dsc" >/dev/null 2>&1; then
    (cd "$out/dl" && apt-get source --download-only -qq "$1=$2" 2>&1 | grep -v "unsandboxed" || true)
  fi
  test -f "$out/dl/$1_$2.dsc" || { echo "third_party: apt-get source $1=$2 failed (deb-src line: scripts/setup.sh)" >&2; exit 1; }
}

if [ ! -f "$out/.idn2-done" ]; then
  echo "wasm: libidn2 $IDN2 from Debian's source, for wasm32-wasi"
  fetch libidn2 "$IDN2"
  rm -rf "$out/libidn2-2.3.3" "$out/idn2-build"
  (cd "$out" && dpkg-source -x -q "dl/libidn2_$IDN2.dsc" >/dev/null)
  mkdir -p "$out/idn2-build" "$out/lib"
  (cd "$out/idn2-build" &&
    ../libidn2-2.3.3/configure -q --host=wasm32-unknown-wasi CC="$cc" AR=llvm-ar-22 RANLIB=llvm-ranlib-22 \
      CFLAGS="-O2" --disable-shared --enable-static --disable-doc --disable-nls --disable-gtk-doc \
      --disable-valgrind-tests --without-libunistring-prefix >configure.log 2>&1 ||
    { tail -20 configure.log; exit 1; })
  # The library and its bundled unistring only: gl/ serves the idn2 program.
  make -s -C "$out/idn2-build/unistring" >"$out/idn2-build/make.log" 2>&1 || { tail -20 "$out/idn2-build/make.log"; exit 1; }
  objs="bidi context data decode error free idna lookup puny_decode puny_encode register tables tr46map version"
  make -s -C "$out/idn2-build/lib" $(for o in $objs; do echo "$o.lo"; done) >>"$out/idn2-build/make.log" 2>&1 ||
    { tail -20 "$out/idn2-build/make.log"; exit 1; }
  rm -f "$out/lib/libidn2.a"
  llvm-ar-22 rcs "$out/lib/libidn2.a" $(for o in $objs; do echo "$out/idn2-build/lib/$o.o"; done)
  cp "$out/idn2-build/unistring/.libs/libunistring.a" "$out/lib/libunistring.a"
  cp "$out/idn2-build/lib/idn2.h" "$out/lib/idn2.h" 2>/dev/null || cp "$out/libidn2-2.3.3/lib/idn2.h" "$out/lib/idn2.h"
  touch "$out/.idn2-done"
fi

if [ ! -f "$out/.re2-done" ]; then
  echo "wasm: re2 $RE2 from Debian's source (tables from unicode-data)"
  fetch re2 "$RE2"
  rm -rf "$out/re2-20220601+dfsg"
  (cd "$out" && dpkg-source -x -q "dl/re2_$RE2.dsc" >/dev/null)
  (cd "$out/re2-20220601+dfsg" &&
    make -s re2/perl_groups.cc re2/unicode_casefold.cc re2/unicode_groups.cc REBUILD_TABLES=1 >/dev/null)
  touch "$out/.re2-done"
fi
