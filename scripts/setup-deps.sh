#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages emberprof needs to build, test and
# benchmark. Idempotent: installs only what is missing. Fails loudly.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config     # toolchain
  libelf-dev libdw-dev                  # elfutils: symbols, debuginfo, lines
  libdebuginfod1                        # elfutils' debuginfod client: the CLI fetches debug files by build id (dlopen'ed)
  debuginfod                            # tests only: the real server tests/symbolize/test_debuginfod.sh fetches from
  zlib1g-dev                            # gzip for pprof
  libcurl4-openssl-dev                  # HTTP(S) uploads (Pyroscope reporter)
  python3                               # the tests' fake Pyroscope server (stdlib only)
  libiberty-dev                         # C++/Rust demangler
  binutils                              # readelf, used by tests
  dwz                                   # tests only: host.test_dwzalt makes a dwz alt file (.gnu_debugaltlink) as distributions' debug packages ship them
  golang-go                             # `go tool pprof` checks every pprof we write
  protobuf-compiler python3-protobuf    # tests only: the OTLP test receiver decodes with modules protoc generates from the pinned opentelemetry-proto
  google-perftools libgoogle-perftools-dev  # gperftools: the benchmark's peer
  clang libclang-rt-14-dev              # libFuzzer targets
  lld                                   # tests only: tests/plt links x86-64 and aarch64 programs with lld, whose .plt has no CFI
  libunwind-dev                         # tests only: the independent unwinder it_dwarf_libunwind compares with
  libjemalloc2 libtcmalloc-minimal4     # tests only: allocators preloaded after emberprof (test_heap_next_allocator.sh)
  libuv1-dev libevent-dev               # tests only: the long-poll tests' event loops (emberprof_uv.h, emberprof_event.h)
  openjdk-17-jdk-headless               # tests: the JDK's `jfr` tool reads every JFR we write; java makes S3 test recordings
  # S3 reporter
  libzip-dev                            # the uploaded zip (headers; libzip4 is dlopen'ed)
  libjansson-dev                        # JSON of the AWS metadata and credential answers
  libjemalloc-dev                       # the jemalloc backend of the memory profile: its tests and bench/heap.sh (with libjemalloc2)
  time                                  # /usr/bin/time: bench/heap.sh measures each run's CPU with it
  chromium                              # tests/flame: the flame graph pages are checked in a real browser
  debhelper lintian                     # tests/install/test_deb.sh: build the Debian packages (debian/), check them
  # --- real-programs suite and soak (tests/realprog/) ---
  # Programs nobody here wrote, profiled by `emberprof run` in every mode.
  # (sort, python3, perl, node, java, gcc, make, git come from above or the base image.)
  xz-utils                              # xz -T2: workers that block every signal
  sqlite3                               # sqlite3's VDBE loop (sqlite3VdbeExec)
  git                                   # git init/commit/log: many short fork+execs
  make                                  # make -j2 under --follow-children
  redis-server redis-tools              # redis-server + redis-benchmark on 127.0.0.1
  nginx-light                           # nginx with a bounded load on 127.0.0.1
  curl                                  # the nginx test's client
  # --- end real-programs block ---
)

# The S3 tests run s3rver behind a SigV4-verifying front (Node.js). The
# machine image may bring its own Node.js (with npm); else Debian's.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PKGS+=(nodejs npm)
fi

# ---- aarch64 cross build and emulation (`make test-aarch64`) ----
# The arm64 build needs a cross compiler, the arm64 multiarch -dev packages
# of the libraries CMakeLists.txt requires (linked or whose headers it
# uses), libunwind (it_dwarf_libunwind's reference unwinder) and qemu-user
# to run the tests. Installed here, before the early exit below, so that a
# machine with every x86-64 package still gets them.
ARM64_PKGS=(
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross  # cross toolchain
  qemu-user                                   # qemu-aarch64: runs the arm64 tests (no binfmt needed)
  libc6:arm64 libc6-dev:arm64                 # the loader and libc the tests run with under qemu
  libelf-dev:arm64 libdw-dev:arm64            # elfutils (linked)
  zlib1g-dev:arm64 libjansson-dev:arm64       # gzip, JSON (linked)
  libcurl4-openssl-dev:arm64 libzip-dev:arm64 # headers; dlopen'ed at run time
  libiberty-dev:arm64                         # the demangler (static)
  libunwind-dev:arm64                         # tests only: it_dwarf_libunwind's reference unwinder
  libc6-dbg:arm64                             # tests: libc's local symbols (start_thread) for the chain checks
)
arm64_deps() {
  local miss=() p
  for p in "${ARM64_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || miss+=("$p")
  done
  [ ${#miss[@]} -eq 0 ] && return 0
  echo "emberprof: installing the aarch64 cross build's packages: ${miss[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "emberprof: error: the aarch64 packages are missing and installing them needs root:" >&2
    echo "    sudo dpkg --add-architecture arm64 && sudo apt-get update && sudo apt-get install -y ${miss[*]}" >&2
    exit 1
  fi
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
    --no-install-recommends "${miss[@]}" >/dev/null
  for p in "${miss[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
      echo "emberprof: error: package $p failed to install" >&2; exit 1; }
  done
}
# Only for `make test-aarch64` (EMBER_AARCH64=1), which `make test` does
# not run yet: a plain build or test run does not need them.
if [ "${EMBER_AARCH64:-0}" = 1 ]; then
  arm64_deps
fi
# ---- end of the aarch64 block ----

# Installed for this machine's architecture (or for all): the arm64 -dev
# packages above have the same names, and must not count for the native ones.
NATIVE=$(dpkg --print-architecture)
installed() {
  dpkg-query -W -f='${Status} ${Architecture}\n' "$1" 2>/dev/null |
    grep -Eq "^install ok installed ($NATIVE|all)\$"
}
missing=()
for p in "${PKGS[@]}"; do
  installed "$p" || missing+=("$p:$NATIVE")
done

# npm packages of the S3 tests, from tests/s3/package-lock.json (never global);
# `npm_ci flame`: tests/flame's (playwright-core, to drive chromium).
npm_ci() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/${1:-s3}"
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
     ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.emberprof-lock"; then
    echo "emberprof: installing the tests' npm packages (npm ci in $dir)" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$dir/package-lock.json" "$dir/node_modules/.emberprof-lock"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  npm_ci
  npm_ci flame
  exit 0
fi

echo "emberprof: installing missing packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "emberprof: error: these Debian packages are missing and installing them needs root:" >&2
  echo "    sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=900 update -qq
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for p in "${missing[@]}"; do
  installed "${p%:*}" || { echo "emberprof: error: package $p failed to install" >&2; exit 1; }
done
npm_ci
npm_ci flame
