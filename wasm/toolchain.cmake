# wasm32-wasi with Debian's clang-22, lld-22 and the wasm32 libc++/libc++abi,
# compiler-rt and wasi-libc packages (scripts/setup.sh; ../shared/BROWSER.md says
# why not emscripten or clang-19). The default sysroot is /usr: headers from
# /usr/include/wasm32-wasi, libraries from /usr/lib/wasm32-wasi.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(CMAKE_C_COMPILER clang-22)
set(CMAKE_CXX_COMPILER clang++-22)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_CXX_COMPILER_TARGET wasm32-wasi)
set(CMAKE_AR llvm-ar-22)
set(CMAKE_RANLIB llvm-ranlib-22)
set(CMAKE_EXECUTABLE_SUFFIX .wasm)
# clang 22 calls the triple wasm32-wasip1, but Debian's wasm32 packages are laid out for wasm32-wasi.
set(CMAKE_C_FLAGS_INIT "-Wno-deprecated")
set(CMAKE_CXX_FLAGS_INIT "-Wno-deprecated")
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
