# SPDX-License-Identifier: Apache-2.0
# test_dwzalt.sh - a dwz alt file (.gnu_debugaltlink) stays out of the
# program's way: host_dwzalt, built twice at test time with -g and run
# through `dwz -m` so that the name of its inline function dwzalt_spin is
# only in the common alt file, is profiled until the agent has symbolized
# a window; it then finds no new descriptor below 256 and none without
# FD_CLOEXEC (status 3 otherwise; before the symbolizer searched for alt
# files, libdw opened it itself at a low number), and dwzalt_spin is named
# in the profile (the alt file's DWARF was read). Two layouts:
#   inline:   DWARF in the program, absolute alt path (dwz -m /abs/path);
#   separate: DWARF in .debug/PROG.debug (.gnu_debuglink), alt path
#             relative to it (dwz -r), as distributions ship them.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"
need dwz objcopy readelf "${CC:-cc}"
SRC=$EMBER_TEST_SRCDIR/tests/host/host_dwzalt.c
CFLAGS="-g -O1 -fno-omit-frame-pointer"

# the fixture: PROG's DWARF names dwzalt_spin only through the alt file
check_fixture() {
	readelf -S "$2" >"$T/$1.sections" 2>/dev/null
	check_grep "$1 fixture" "$T/$1.sections" ".gnu_debugaltlink"
	if readelf -wi "$2" 2>/dev/null | grep -q "alt indirect string.*dwzalt_spin"; then
		ok "$1 fixture: dwzalt_spin's name is in the alt file"
	else
		fail "$1 fixture: dwzalt_spin's name is not an alt string in $2"
	fi
}

# run LAYOUT PROG: profiles PROG, checks its descriptors and the name
run() {
	rm -rf "$T/prof"
	mkdir "$T/prof"
	"$EMBERPROF" run -q --rate 250 -i 1s -o "$T/prof" -- "$2" "$T/prof" >"$T/$1.out" 2>"$T/$1.err"
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$1: $(tail -n 1 "$T/$1.out")"
	else
		fail "$1: the program found descriptors of ours (status $rc):"
		sed 's/^/    /' "$T/$1.out" "$T/$1.err" >&2
	fi
	if grep -q "^fd .*common\.debug" "$T/$1.out"; then
		fail "$1: the alt file is open at a low number or inherited by exec"
	elif grep -q "^agent's fd .*common\.debug" "$T/$1.out"; then
		ok "$1: the alt file is held at $(grep "^agent's fd .*common\.debug" "$T/$1.out" | cut -d' ' -f3) with FD_CLOEXEC"
	else
		fail "$1: the alt file is not open in the program (its DWARF was not read through our search)"
	fi
	got=$(cpu_of dwzalt_spin "$T"/prof/*.pb.gz)
	if [ -n "$got" ]; then
		ok "$1: dwzalt_spin named through the alt file ($got ms)"
	else
		fail "$1: dwzalt_spin not named in the profiles"
		"$EMBERPROF" top --n 10 "$T"/prof/*.pb.gz >&2
	fi
}

mkdir -p "$T/inline" "$T/separate/bin/.debug" "$T/separate/dwz"

# inline: the DWARF stays in the programs; the alt path is absolute
I=$T/inline
${CC:-cc} $CFLAGS -o "$I/prog" "$SRC" && ${CC:-cc} $CFLAGS -DDWZALT_TWIN -o "$I/twin" "$SRC" ||
	{ fail "inline: cannot build host_dwzalt"; done_tests; }
dwz -m "$I/common.debug" "$I/prog" "$I/twin" || fail "inline: dwz -m failed"
check_fixture inline "$I/prog"
run inline "$I/prog"

# separate: the DWARF in bin/.debug/*.debug, the alt in dwz/, its path
# relative to the debug files (../../dwz/common.debug)
S=$T/separate
${CC:-cc} $CFLAGS -o "$S/bin/prog" "$SRC" && ${CC:-cc} $CFLAGS -DDWZALT_TWIN -o "$S/bin/twin" "$SRC" ||
	{ fail "separate: cannot build host_dwzalt"; done_tests; }
for p in prog twin; do
	objcopy --only-keep-debug "$S/bin/$p" "$S/bin/.debug/$p.debug" || fail "separate: objcopy $p"
done
(cd "$S/bin/.debug" && dwz -r -m ../../dwz/common.debug prog.debug twin.debug) ||
	fail "separate: dwz -r -m failed"
for p in prog twin; do
	objcopy --strip-debug --add-gnu-debuglink="$S/bin/.debug/$p.debug" "$S/bin/$p" ||
		fail "separate: objcopy --add-gnu-debuglink $p"
done
check_fixture separate "$S/bin/.debug/prog.debug"
readelf -p .gnu_debugaltlink "$S/bin/.debug/prog.debug" >"$T/separate.altlink" 2>/dev/null
check_grep "separate fixture: relative alt path" "$T/separate.altlink" "../../dwz/common.debug"
run separate "$S/bin/prog"
done_tests
