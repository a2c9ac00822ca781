#!/usr/bin/env bash
# Installs the Debian 12 packages emberprof needs to build, test and
# benchmark. Idempotent: installs only what is missing. Fails loudly.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config     # toolchain
  libelf-dev libdw-dev                  # elfutils: symbols, debuginfo, lines
  zlib1g-dev                            # gzip for pprof
  libcurl4-openssl-dev                  # HTTP(S) uploads (Pyroscope reporter)
  python3                               # the tests' fake Pyroscope server (stdlib only)
  libiberty-dev                         # C++/Rust demangler
  binutils                              # readelf, used by tests
  golang-go                             # `go tool pprof` checks every pprof we write
  google-perftools libgoogle-perftools-dev  # gperftools: the benchmark's peer
  clang libclang-rt-14-dev              # libFuzzer targets
  libunwind-dev                         # tests only: the independent unwinder it_dwarf_libunwind compares with
  libjemalloc2 libtcmalloc-minimal4     # tests only: allocators preloaded after emberprof (test_heap_next_allocator.sh)
  libuv1-dev libevent-dev               # tests only: the long-poll tests' event loops (emberprof_uv.h, emberprof_event.h)
  openjdk-17-jdk-headless               # tests: the JDK's `jfr` tool reads every JFR we write; java makes S3 test recordings
  # S3 reporter (issue 5)
  libzip-dev                            # the uploaded zip (headers; libzip4 is dlopen'ed)
  libjansson-dev                        # JSON of the AWS metadata and credential answers
  libjemalloc-dev                       # the jemalloc backend of the memory profile: its tests and bench/heap.sh (with libjemalloc2)
  time                                  # /usr/bin/time: bench/heap.sh measures each run's CPU with it
  # --- real-programs suite and soak (issue 13, tests/realprog/) ---
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

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm packages of the S3 tests, from tests/s3/package-lock.json (never global).
npm_ci() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/s3"
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
     ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.emberprof-lock"; then
    echo "emberprof: installing the S3 tests' npm packages (npm ci in tests/s3)" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$dir/package-lock.json" "$dir/node_modules/.emberprof-lock"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  npm_ci
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
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
    echo "emberprof: error: package $p failed to install" >&2; exit 1; }
done
npm_ci
