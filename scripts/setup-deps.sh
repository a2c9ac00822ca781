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
  libuv1-dev libevent-dev               # tests only: the long-poll tests' event loops (emberprof_uv.h, emberprof_event.h)
  openjdk-17-jdk-headless               # tests only: real JFR recordings for the JFR reader, and `jfr` reads ours
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "emberprof: installing missing packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "emberprof: error: these Debian packages are missing and installing them needs root:" >&2
  echo "    sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for p in "${missing[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
    echo "emberprof: error: package $p failed to install" >&2; exit 1; }
done
