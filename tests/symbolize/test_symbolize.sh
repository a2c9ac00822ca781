# SPDX-License-Identifier: Apache-2.0
# test_symbolize.sh - `emberprof symbolize` on profiles written with
# symbolization off (run --no-symbolize, EMBERPROF_SYMBOLIZE=0): the
# program's frames have no names before, and after it the same functions,
# files, lines and inlined frames as a symbolizing run of the same build,
# address for address; the samples, header and mappings are unchanged; a
# second run rewrites nothing (the same bytes); -o leaves the input alone.
# For an -O2 C program and an -O2 C++ one (built here).
. "$(dirname "$0")/lib.sh"

build_programs
tab=$(printf '\t')
for p in sym_c sym_cxx; do
	id=$(cat "ids/$p")
	"$EMBERPROF" run -q -o "on-$p" -- "bin/$p" 150000000 >/dev/null 2>"on-$p.err"
	check_exit "$p: a symbolizing run" 0 $?
	"$EMBERPROF" run -q --no-symbolize -o "off-$p" -- "bin/$p" 150000000 >/dev/null 2>"off-$p.err"
	check_exit "$p: run --no-symbolize" 0 $?
	frames "on-$p"/*.pb.gz | grep "^$id" >"on-$p.frames"
	frames "off-$p"/*.pb.gz | grep "^$id" >"off-$p.before"
	if [ ! -s "off-$p.before" ]; then
		fail "$p: no location of the program in the --no-symbolize profile"
	elif grep -v -q "$tab-\$" "off-$p.before"; then
		fail "$p: --no-symbolize wrote names: $(grep -v "$tab-\$" "off-$p.before" | head -3)"
	else
		ok "$p: --no-symbolize: addresses only ($(wc -l <"off-$p.before") locations)"
	fi
	cp -r "off-$p" "off-$p.orig"

	"$EMBERPROF" symbolize "off-$p"/*.pb.gz 2>"sym1-$p.err"
	check_exit "$p: symbolize" 0 $?
	frames "off-$p"/*.pb.gz | grep "^$id" >"off-$p.after"
	same_frames "$p: symbolize of the --no-symbolize profile = a symbolizing run" \
		"on-$p.frames" "off-$p.after" 3
	if grep -q "$tab-\$" "off-$p.after"; then
		fail "$p: locations left unnamed: $(grep "$tab-\$" "off-$p.after" | head -3)"
	else
		ok "$p: every location of the program named"
	fi
	case $p in
	sym_c)
		has_frame "$p: the hot function, with file and line" "off-$p.after" \
			"${tab}sym_hot_loop [^ ]*sym_c\.c:[1-9]"
		has_frame "$p: the inlined call as its own frame" "off-$p.after" \
			"${tab}sym_mix [^ ]*sym_c\.c:[1-9][0-9]*;sym_hot_loop "
		;;
	sym_cxx)
		has_frame "$p: the method, demangled, with file and line" "off-$p.after" \
			"symfx::Mixer::run[^;]* [^ ]*sym_cxx\.cpp:[1-9]"
		has_frame "$p: the inlined template as its own frame" "off-$p.after" \
			"symfx::step<unsigned long>[^;]*;symfx::Mixer::run"
		;;
	esac

	# the rest of the file as it was: header, samples, mappings' ranges
	for f in "off-$p.orig"/*.pb.gz; do
		g="off-$p/$(basename "$f")"
		HOME=$T GOCACHE=$T/gocache go tool pprof -symbolize=none -raw "$f" 2>/dev/null | sed '/^Locations/,$d' >a.raw
		HOME=$T GOCACHE=$T/gocache go tool pprof -symbolize=none -raw "$g" 2>/dev/null | sed '/^Locations/,$d' >b.raw
		HOME=$T GOCACHE=$T/gocache go tool pprof -symbolize=none -raw "$f" 2>/dev/null |
			sed -n '/^Mappings/,$p' | sed 's/ *\[.*//; s/ *$//' >a.maps
		HOME=$T GOCACHE=$T/gocache go tool pprof -symbolize=none -raw "$g" 2>/dev/null |
			sed -n '/^Mappings/,$p' | sed 's/ *\[.*//; s/ *$//' >b.maps
		if [ -s a.raw ] && cmp -s a.raw b.raw && cmp -s a.maps b.maps; then
			ok "$p: header, samples and mappings unchanged ($(basename "$f"))"
		else
			fail "$p: $(basename "$f") changed beyond its locations: $(diff a.raw b.raw | head -5)"
		fi
	done

	# idempotent: a second run rewrites nothing, byte for byte
	sum1=$(cat "off-$p"/*.pb.gz | md5sum)
	"$EMBERPROF" symbolize "off-$p"/*.pb.gz 2>"sym2-$p.err"
	check_exit "$p: symbolize again" 0 $?
	sum2=$(cat "off-$p"/*.pb.gz | md5sum)
	if [ "$sum1" = "$sum2" ] && grep -q ", 0 rewritten; 0 location(s) named" "sym2-$p.err"; then
		ok "$p: a second symbolize changes nothing"
	else
		fail "$p: the second symbolize changed the files: $(cat "sym2-$p.err")"
	fi

	# -o: the result elsewhere, the input untouched
	f=$(ls "off-$p.orig"/*.pb.gz | head -1)
	sum_in=$(md5sum <"$f")
	"$EMBERPROF" symbolize -q -o "out-$p.pb.gz" "$f"
	check_exit "$p: symbolize -o" 0 $?
	frames "out-$p.pb.gz" | grep "^$id" >"out-$p.frames"
	if [ "$(md5sum <"$f")" = "$sum_in" ] && ! grep -q "$tab-\$" "out-$p.frames" &&
		[ -s "out-$p.frames" ]; then
		ok "$p: -o writes the named profile, the input unchanged"
	else
		fail "$p: -o: input changed or output unnamed"
	fi
done

# --sysroot: the program read under it when its own path is gone; and a
# file of another build at the path is never read (no names, not wrong ones)
f=$(ls off-sym_c.orig/*.pb.gz | head -1)
id=$(cat ids/sym_c)
mkdir -p "sysroot$T/bin" && cp bin/sym_c "sysroot$T/bin/sym_c" && mv bin/sym_c bin/sym_c.away
"$EMBERPROF" symbolize -q --no-debuginfod --sysroot "$T/sysroot" -o sysroot.pb.gz "$f"
check_exit "--sysroot" 0 $?
cp bin/sym_cxx bin/sym_c # another build where the profile's file was
"$EMBERPROF" symbolize -q --no-debuginfod -o wrong.pb.gz "$f"
check_exit "another build at the path" 0 $?
mv bin/sym_c.away bin/sym_c
frames sysroot.pb.gz | grep "^$id" >sysroot.frames
same_frames "--sysroot: the file under it" on-sym_c.frames sysroot.frames 3
frames wrong.pb.gz | grep "^$id" >wrong.frames
if [ -s wrong.frames ] && ! grep -v -q "$tab-\$" wrong.frames; then
	ok "another build at the path: not read (the frames stay unnamed)"
else
	fail "another build at the path: names from the wrong file: $(grep -v "$tab-\$" wrong.frames | head -2)"
fi

# EMBERPROF_SYMBOLIZE: the variable itself, and a bad value refused
EMBERPROF_SYMBOLIZE=0 "$EMBERPROF" run -q -o env0 -- bin/sym_c 50000000 >/dev/null 2>env0.err
check_exit "EMBERPROF_SYMBOLIZE=0" 0 $?
frames env0/*.pb.gz | grep "^$(cat ids/sym_c)" >env0.frames
if [ -s env0.frames ] && ! grep -v -q "$tab-\$" env0.frames; then
	ok "EMBERPROF_SYMBOLIZE=0: addresses only"
else
	fail "EMBERPROF_SYMBOLIZE=0: names written or no location"
fi
EMBERPROF_SYMBOLIZE=maybe "$EMBERPROF" run -q -o envbad -- true >/dev/null 2>envbad.err
check_exit "EMBERPROF_SYMBOLIZE=maybe refused" 2 $?
check_grep "EMBERPROF_SYMBOLIZE=maybe: says why" envbad.err "EMBERPROF_SYMBOLIZE"

"$EMBERPROF" symbolize no-such-file.pb.gz 2>missing.err
check_exit "symbolize of a missing file" 1 $?
check_grep "symbolize of a missing file: names it" missing.err "no-such-file.pb.gz"
done_tests
