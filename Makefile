# make demo   set-up, build, the main job on the bundled example tools, and the offline agent loop
# make test   set-up, build (plain and ASan+UBSan), the aarch64 compile check, every test in both builds, and a short make fuzz
# make wasm   the rules as a wasm32-wasi module (clang-22) in build-wasm/: build-wasm/taskyon_core.wasm
# make fuzz   libFuzzer harnesses (clang-19) in build-fuzz/, each run FUZZ_SECONDS (default 20)
# make check-aarch64  the sources that name syscalls or an architecture compile for aarch64 (not run)
# make soak   the kill -9 crash-safety test with TASKYON_CRASH_TRIALS (default 1000) trials
# make install [PREFIX=/usr/local]  tycli, its man page, bash/zsh/fish completions and Deno into PREFIX
BUILD      := build
ASAN_BUILD := build-asan
FUZZ_BUILD := build-fuzz
WASM_BUILD := build-wasm
FUZZ_SECONDS ?= 20
CI_FUZZ_SECONDS ?= 10
TASKYON_CRASH_TRIALS ?= 1000
CCACHE     := $(shell command -v ccache 2>/dev/null)
JOBS       ?= $(shell nproc)
# The builds (build, build-tycli, build-asan): unity batches (CMakeLists.txt, TASKYON_UNITY) and line
# tables only (-g1: file:line in sanitizer reports and profiles, no variable info). Measured
# at -O2: 16 library files in one batch 28 s of CPU, one at a time 52+ s; a tycli file with
# -g1 9.5 s, with -g 13.3 s. Configure by hand without them for full debug info.
BUILD_FLAGS := -DTASKYON_UNITY=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_DEBUG="-g1"
PREFIX     ?= /usr/local

.PHONY: all setup build build-tycli build-asan test demo install bench clean fuzz soak wasm check-aarch64

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(BUILD_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# Only tycli (its man page and completions are written after it links): what demo and install need.
build-tycli: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(BUILD_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target tycli

# Builds tycli only when it is not built yet, so `sudo make install` after a build does no
# build work as root in the tree.
install:
	@test -x $(BUILD)/tycli || $(MAKE) --no-print-directory build-tycli
	@cmake --install $(BUILD) --prefix $(PREFIX)

build-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTASKYON_SANITIZE=ON $(BUILD_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

test: build build-asan wasm check-aarch64
	@echo "== tests (RelWithDebInfo)"
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)
	@echo "== fuzz ($(CI_FUZZ_SECONDS) s per harness)"
	@FUZZ_SEED=1 $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CI_FUZZ_SECONDS)

check-aarch64: setup
	@bash scripts/check_aarch64.sh

# Debian's libidn2 and re2 sources are prepared once in $(WASM_BUILD)/third_party.
wasm: setup
	@cmake -S wasm -B $(WASM_BUILD) -G Ninja -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/wasm/toolchain.cmake \
	  $(if $(CCACHE),-DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)) >/dev/null
	@cmake --build $(WASM_BUILD) -j $(JOBS)

fuzz: setup
	@cmake -S fuzz -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 \
	  $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/run.sh $(FUZZ_BUILD)

soak: build
	@TASKYON_CRASH_TRIALS=$(TASKYON_CRASH_TRIALS) $(BUILD)/taskyon_tests --gtest_filter='CrashSafety.*'

demo: build-tycli
	@bash scripts/demo.sh $(BUILD)/tycli
	@bash examples/agent-loop/agent-loop.sh $(BUILD)/tycli

bench: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTASKYON_BENCH=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@$(BUILD)/bench/taskyon_bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(WASM_BUILD)
