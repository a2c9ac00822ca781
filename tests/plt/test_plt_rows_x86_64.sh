#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_plt_rows_x86_64.sh - x86-64 PLT stubs get the same unwind rows
# whichever linker wrote them: GNU ld describes its lazy .plt in .eh_frame
# (those rows win, the fill is dropped), lld writes it without CFI (the
# fill rows of src/unwind/regs_x86_64.c apply). Both must give every byte
# of .plt the CFA GNU ld's CFI says (plt_rows_check.c --x86-64).
: "${EMBER_PLT_ROWS_CHECK:?}"
[ "$(uname -m)" = x86_64 ] || { echo "SKIP: x86-64 only (this is $(uname -m))"; exit 77; }
command -v clang >/dev/null 2>&1 && command -v ld.lld >/dev/null 2>&1 || {
	echo "SKIP: clang and lld not installed (scripts/setup-deps.sh installs them)"
	exit 77
}
. "$(dirname "$0")/lib.sh"
cc -O2 -o "$T/gnu" "$T/a.c" && "$EMBER_PLT_ROWS_CHECK" --x86-64 "$T/gnu" cfi || { echo "FAIL: GNU ld"; failed=1; }
clang -fuse-ld=lld -O2 -o "$T/lld" "$T/a.c" && "$EMBER_PLT_ROWS_CHECK" --x86-64 "$T/lld" fill || { echo "FAIL: lld"; failed=1; }
clang -fuse-ld=lld -O2 -fPIC -shared -o "$T/lld.so" "$T/a.c" && "$EMBER_PLT_ROWS_CHECK" --x86-64 "$T/lld.so" fill || { echo "FAIL: lld, shared"; failed=1; }
exit $failed
