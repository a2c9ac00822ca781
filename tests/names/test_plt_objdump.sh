# SPDX-License-Identifier: Apache-2.0
# test_plt_objdump.sh - our PLT stub names (src/symbols/pltsyms.c) agree
# with binutils' synthetic "X@plt" symbols, as objdump -d prints them, for
# every stub objdump names: the test programs (lazy .plt; IBT .plt.sec),
# libc (IRELATIVE slots, .plt.got), libpython where installed, and, where
# the aarch64 cross toolchain is installed, aarch64 libraries with and
# without BTI. objdump names an IRELATIVE stub "*ABS*+0xADDR@plt"; we
# name it after the ifunc at ADDR, so those are compared by address only.
. "$(dirname "$0")/../cli/lib.sh"
: "${EMBER_PLT_DUMP:?}"

# compare WHAT FILE OBJDUMP
compare() {
	"$EMBER_PLT_DUMP" "$2" >"$T/ours" || { fail "$1: ember_plt_dump failed"; return; }
	"$3" -d "$2" | sed -n 's/^0*\([0-9a-f][0-9a-f]*\) <\(.*@plt\)>:$/\1 \2/p' >"$T/theirs"
	n=$(wc -l <"$T/theirs")
	if [ "$n" -eq 0 ]; then
		fail "$1: objdump names no PLT stub in $2"
		return
	fi
	# one line per stub objdump names that we name otherwise
	awk 'NR == FNR { ours[$1] = $3; next }
	     { got = ours[$1]
	       if (substr($2, 1, 5) == "*ABS*") { if (got ~ /@plt$/) next }
	       else if (got == $2) next
	       print "at " $1 " objdump says " $2 ", we say \x27" got "\x27" }' \
		"$T/ours" "$T/theirs" >"$T/diff"
	bad=$(wc -l <"$T/diff")
	head -5 "$T/diff" | sed "s/^/    $1: /" >&2
	if [ $bad -eq 0 ]; then
		ok "$1: all $n stubs objdump names agree"
	else
		fail "$1: $bad of $n stubs differ"
	fi
	if grep -q ' _init$' "$T/ours"; then
		fail "$1: a stub named _init"
	fi
}

command -v objdump >/dev/null 2>&1 || { echo "objdump (binutils) not installed: skipped"; exit 77; }
compare "lazy .plt" "$EMBER_NAMES_PROG" objdump
compare "IBT .plt.sec" "$EMBER_NAMES_PROG_IBT" objdump
for lib in /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0; do
	[ -e "$lib" ] && compare "$(basename "$lib")" "$lib" objdump
done

# aarch64: cross-built libraries, read here (libelf reads any ELF)
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v aarch64-linux-gnu-objdump >/dev/null 2>&1; then
	cat >"$T/a64.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int a64_use(const char *s) { char *p = strdup(s); int n = printf("%s\n", p); free(p); return n + (int)strlen(s); }
CEOF
	aarch64-linux-gnu-gcc -O2 -fPIC -shared -o "$T/a64.so" "$T/a64.c" &&
		compare "aarch64 .plt" "$T/a64.so" aarch64-linux-gnu-objdump
	aarch64-linux-gnu-gcc -O2 -fPIC -shared -mbranch-protection=standard -Wl,-z,force-bti \
		-o "$T/a64bti.so" "$T/a64.c" 2>/dev/null &&
		compare "aarch64 BTI .plt" "$T/a64bti.so" aarch64-linux-gnu-objdump
else
	echo "aarch64 cross toolchain not installed: aarch64 PLTs not checked"
fi
done_tests
