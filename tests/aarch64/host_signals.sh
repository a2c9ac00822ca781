#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The signal wrappers on aarch64 under qemu-user: the program's
# own SIGPROF handler, its own ITIMER_PROF profiler, threads that block
# every signal, raise()/pthread_kill() of the sampling signal, masks,
# sigwait and the dispositions it sees, checked by the x86-64 stage's own
# script (tests/host/test_host_signals.sh) against the aarch64 builds of
# emberprof, libemberprof.so and host_sig.
#   tests/aarch64/host_signals.sh BUILD_DIR
# As in run_demo.sh: without binfmt_misc the host cannot execute an
# aarch64 ELF, so EMBERPROF and the program are host scripts that exec
# qemu-aarch64; the environment `emberprof run` sets (LD_PRELOAD of the
# aarch64 library, EMBERPROF_*) reaches the emulated program through the
# host shell (whose loader ignores that LD_PRELOAD with a warning on
# stderr) and qemu. What qemu-user cannot host (exec of an aarch64 image,
# a raw-blocked mask, host programs) is left out by the script, by name.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$B/tests/host/host_sig" ] || { echo "FAIL: $B/tests/host/host_sig not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for w in emberprof:"$B/emberprof" host_sig:"$B/tests/host/host_sig"; do
	printf '#!/bin/sh\nexec qemu-aarch64 "%s" "$@"\n' "${w#*:}" >"$tmp/${w%%:*}"
	chmod +x "$tmp/${w%%:*}"
done
EMBERPROF=$tmp/emberprof EMBER_HOST_SIG=$tmp/host_sig EMBER_HOST_QEMU=1 \
	EMBER_TEST_SRCDIR=$src EMBER_TEST_SANITIZE=OFF sh "$src/tests/host/test_host_signals.sh"
