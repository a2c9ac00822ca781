# SPDX-License-Identifier: Apache-2.0
# test_fde.sh - functions of stripped programs without any symbol: Debian's
# own gzip and liblzma (stripped; their -dbgsym packages not installed, or
# the test is skipped) have a name per function, BASENAME+0xSTART with
# START the ELF address of the .eh_frame FDE that covers the code (the
# symbolizer's placeholder, src/symbols/symbolizer.h). Checked by
# fde_check.py against the FDE ranges readelf prints: every entry of the
# table is one function, none two inside one FDE.
. "$(dirname "$0")/lib.sh"
need gzip
need xz
need readelf
need python3
LZMA=/lib/x86_64-linux-gnu/liblzma.so.5
[ -e "$LZMA" ] || { echo "no $LZMA (not Debian on x86-64)"; exit 77; }

# A debug file on disk would name these functions (and the test would
# prove nothing about the placeholders): none may be installed.
for f in /usr/bin/gzip "$LZMA"; do
	id=$(readelf -nW "$f" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
	dbg=/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
	if [ -e "$dbg" ]; then
		echo "$f has a debug file installed ($dbg): remove its -dbgsym package to run this test"
		exit 77
	fi
	if readelf -SW "$f" | grep -q ' \.symtab '; then
		echo "$f is not stripped: nothing to test"
		exit 77
	fi
done

awk 'BEGIN { x = 7; for (i = 0; i < 400000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%d %x line %d\n", x % 1000, x, i % 77 } }' >"$T/data"

check_module() { # WHAT MODULE DIR
	readelf --debug-dump=frames "$2" >"$T/frames" 2>/dev/null
	# shellcheck disable=SC2086 # one raw dump per profile
	if python3 "$(dirname "$0")/fde_check.py" "$2" "$T/frames" "$3"/*.one-raw >"$T/check.out" 2>&1; then
		ok "$1: $(tail -1 "$T/check.out")"
	else
		fail "$1:"
		sed 's/^/    /' "$T/check.out" >&2
	fi
	# a check that saw nothing would prove nothing
	nf=$(tail -1 "$T/check.out" | sed -n 's/.* \([0-9]*\) functions.*/\1/p')
	if [ "${nf:-0}" -lt 3 ]; then
		fail "$1: only ${nf:-0} functions seen in $2"
	fi
}

raw_each() { # DIR: each profile's raw dump as DIR/NAME.one-raw
	for f in "$1"/*.pb.gz; do
		[ -e "$f" ] || continue
		pprof_raw "$f" >"$f.one-raw" 2>/dev/null || fail "go tool pprof cannot read $f"
	done
}

profile "$T/gz" --rate 1000 -- sh -c "gzip -6 -c '$T/data' >/dev/null; gzip -9 -c '$T/data' >/dev/null"
raw_each "$T/gz"
check_module "gzip" /usr/bin/gzip "$T/gz"

profile "$T/xz" --rate 1000 -- xz -3 -T1 -c "$T/data"
raw_each "$T/xz"
check_module "liblzma" "$LZMA" "$T/xz"
done_tests
