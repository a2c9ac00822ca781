# SPDX-License-Identifier: Apache-2.0
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
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(WERROR_FLAG)
	cmake --build $(BUILD) -j $(JOBS)

# The main job: profile the bundled demo workload, no server needed.
demo: build
	$(BUILD)/emberprof run --output $(BUILD)/demo-profiles -- $(BUILD)/emberprof_demo

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j 2

test-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=ON $(WERROR_FLAG)
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	cd $(BUILD_ASAN) && ctest --output-on-failure -j 2

test-fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_FUZZ=ON $(WERROR_FLAG)
	# Only the fuzz targets: the rest of the tree is built and tested with gcc above.
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_pprof_read fuzz_cfi fuzz_aws fuzz_jeheap fuzz_jfr_read fuzz_flame fuzz_perfmap fuzz_table_cache
	cd $(BUILD_FUZZ) && ctest --output-on-failure -L fuzz

# aarch64: cross build, tests under qemu-aarch64 (scripts/test-aarch64.sh).
BUILD_AARCH64 ?= build-aarch64
test-aarch64:
	EMBER_AARCH64=1 bash scripts/setup-deps.sh
	EMBER_WERROR=$(EMBER_WERROR) JOBS=$(JOBS) bash scripts/test-aarch64.sh $(BUILD_AARCH64)

# Every test: the normal build, then the sanitizer build, then the fuzzers
# (then the release builds and the package, below; the aarch64 stage under
# emulation comes last: see the end of this file).
test: test-unit test-asan test-fuzz

bench: build
	bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) $(BUILD_AARCH64)

# ---- warnings as errors, release builds, install, Debian package ----
# Warnings are errors for `make test` (CI and developers), never by default:
# a user's `make demo` or `cmake` build keeps whatever the cache has (off).
WERROR_FLAG = $(if $(EMBER_WERROR),-DEMBER_WERROR=$(EMBER_WERROR))
test test-unit test-asan test-fuzz test-release: EMBER_WERROR = ON
BUILD_REL_GCC   ?= build-release-gcc
BUILD_REL_CLANG ?= build-release-clang

.PHONY: install test-release test-package clean-release

# `make install [PREFIX=/usr/local] [DESTDIR=/stage]`
install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

# The Release configuration, as a user or packager builds it, with both
# compilers, warning-free (only built: the tests run in the builds above).
# The clang one leaves the S3 reporter out (EMBER_S3=OFF, as a machine
# without jansson or libzip would) and checks what that build does.
test-release: deps
	CC=gcc CXX=g++ cmake -S . -B $(BUILD_REL_GCC) -DCMAKE_BUILD_TYPE=Release $(WERROR_FLAG)
	cmake --build $(BUILD_REL_GCC) -j $(JOBS)
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_REL_CLANG) -DCMAKE_BUILD_TYPE=Release -DEMBER_S3=OFF $(WERROR_FLAG)
	cmake --build $(BUILD_REL_CLANG) -j $(JOBS)
	sh tests/install/test_no_s3.sh $(BUILD_REL_CLANG)

# The Debian packages: built, checked by lintian, installed and run.
test-package: deps
	sh tests/install/test_deb.sh .

test: test-release test-package
clean: clean-release
clean-release:
	rm -rf $(BUILD_REL_GCC) $(BUILD_REL_CLANG)

# ---- ThreadSanitizer: the agent's own threads ----
# scripts/test-tsan.sh builds build-tsan and runs the tests it lists (and
# prints what it leaves out, and why). Part of `make test`, after the
# release and package stages: 3.7 min (tests 2.2) on the 2-core machine.
BUILD_TSAN ?= build-tsan
.PHONY: test-tsan clean-tsan
test: test-tsan
test-tsan: deps
	EMBER_WERROR=$(EMBER_WERROR) JOBS=$(JOBS) sh scripts/test-tsan.sh $(BUILD_TSAN)
test-tsan: EMBER_WERROR = ON
clean: clean-tsan
clean-tsan:
	rm -rf $(BUILD_TSAN)

# ---- aarch64 under emulation, after every x86-64 stage ----
# `make test` ends with `make test-aarch64` (cross build + ctest under
# qemu-aarch64, scripts/test-aarch64.sh); it waits for the x86-64 stages
# even under -j, since both would share the machine's cores.
.PHONY: test-aarch64-last
test: test-aarch64-last
test-aarch64-last: test-unit test-asan test-fuzz test-release test-package test-tsan
	$(MAKE) --no-print-directory test-aarch64 EMBER_WERROR=ON
