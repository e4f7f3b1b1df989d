# make demo   set-up, build, and the main job on the bundled example tools
# make test   set-up, build (plain and ASan+UBSan), and every test in both builds
BUILD      := build
ASAN_BUILD := build-asan
JOBS       ?= $(shell nproc)

.PHONY: all setup build build-asan test demo bench clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTASKYON_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

test: build build-asan
	@echo "== tests (RelWithDebInfo)"
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)/tycli

bench: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTASKYON_BENCH=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@$(BUILD)/bench/taskyon_bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
