# Thin wrapper around CMake so that the README's two commands work on a
# fresh Debian 12 machine. See README.md.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
JOBS       ?= $(shell nproc)

.PHONY: all deps build demo test test-unit test-asan test-fuzz test-aarch64 bench clean

all: build

deps:
	@bash scripts/setup-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j $(JOBS)

# The main job: profile the bundled demo workload, no server needed.
demo: build
	$(BUILD)/emberprof run --output $(BUILD)/demo-profiles -- $(BUILD)/emberprof_demo

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j 2

test-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	cd $(BUILD_ASAN) && ctest --output-on-failure -j 2

test-fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_FUZZ=ON
	# Only the fuzz targets: the rest of the tree is built and tested with gcc above.
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_pprof_read fuzz_cfi fuzz_aws fuzz_jeheap fuzz_jfr_read
	cd $(BUILD_FUZZ) && ctest --output-on-failure -L fuzz

# aarch64 (issue 17): cross build, tests under qemu-aarch64 (scripts/test-aarch64.sh).
BUILD_AARCH64 ?= build-aarch64
test-aarch64: deps
	JOBS=$(JOBS) bash scripts/test-aarch64.sh $(BUILD_AARCH64)

# Every test: the normal build, then the sanitizer build, then the fuzzers,
# then the aarch64 build under emulation.
test: test-unit test-asan test-fuzz test-aarch64

bench: build
	bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) $(BUILD_AARCH64)
