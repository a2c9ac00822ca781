#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_plt_rows_a64.sh - the rows the aarch64 unwind-table builder gives
# PLT stubs, which the linkers leave without CFI: CFA = sp,
# return address in x30, CFA = sp + 16 after PLT0's stp. Checked here, on
# any host, on .plt sections the real linkers write - GNU ld (lazy, BTI,
# -z now, static with IRELATIVE stubs only) and lld (lazy, BTI) - against
# the header's stp as aarch64 objdump disassembles it. Runs in both builds
# (tests/plt/CMakeLists.txt); unit.test_unwind_aarch64 also walks through
# the rows of the arm64 libc's .plt under qemu.
: "${EMBER_PLT_ROWS_CHECK:?}"
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v aarch64-linux-gnu-objdump >/dev/null 2>&1 || {
	echo "SKIP: aarch64 cross toolchain not installed (EMBER_AARCH64=1 bash scripts/setup-deps.sh installs it)"
	exit 77
}
. "$(dirname "$0")/lib.sh"
checked=0
check() { # name file
	stp=$(aarch64-linux-gnu-objdump -d -j .plt "$2" |
		sed -n 's/^ *\([0-9a-f]*\):[[:space:]]*a9bf7bf0[[:space:]]*stp[[:space:]]*x16, x30, \[sp, #-16\]!.*/\1/p' | head -1)
	# (EMBER_PLT_ROWS_RUN: qemu-aarch64 in the aarch64 build, else empty)
	if $EMBER_PLT_ROWS_RUN "$EMBER_PLT_ROWS_CHECK" "$2" "${stp:-none}"; then
		checked=$((checked + 1))
	else
		echo "FAIL: $1"
		failed=1
	fi
}
cc=aarch64-linux-gnu-gcc
$cc -O2 -o "$T/gnu" "$T/a.c" && check "GNU ld, lazy" "$T/gnu"
$cc -O2 -mbranch-protection=standard -Wl,-z,force-bti -o "$T/gnu_bti" "$T/a.c" && check "GNU ld, BTI" "$T/gnu_bti"
$cc -O2 -Wl,-z,now -o "$T/gnu_now" "$T/a.c" && check "GNU ld, -z now" "$T/gnu_now"
if $cc -O2 -static -o "$T/gnu_static" "$T/a.c" 2>/dev/null; then
	check "GNU ld, static (IRELATIVE stubs, no header)" "$T/gnu_static"
else
	echo "no static arm64 libc: the static case not checked"
fi
if command -v clang >/dev/null 2>&1 && command -v ld.lld >/dev/null 2>&1 &&
	clang --target=aarch64-linux-gnu -fuse-ld=lld -O2 -o "$T/lld" "$T/a.c" 2>/dev/null; then
	check "lld, lazy" "$T/lld"
	clang --target=aarch64-linux-gnu -fuse-ld=lld -O2 -mbranch-protection=standard \
		-Wl,-z,force-bti -o "$T/lld_bti" "$T/a.c" && check "lld, BTI" "$T/lld_bti"
else
	echo "clang/lld cannot link for aarch64 here: lld's PLT not checked"
fi
[ "$checked" -ge 3 ] || { echo "FAIL: only $checked files checked"; failed=1; }
exit $failed
