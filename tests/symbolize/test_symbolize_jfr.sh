# SPDX-License-Identifier: Apache-2.0
# test_symbolize_jfr.sh - `emberprof symbolize` on JFR recordings written
# with symbolization off (run --no-symbolize --format both): before, the
# program's frames are placeholders ("0xOFFSET" methods, with an
# emberprof.NativeMapping event naming the module's file and build id);
# after, read by the JDK's own `jfr` tool, each placeholder is the frames
# a symbolizing run names at that address (functions, lines, inlined
# frames), every other event and frame is as it was, `jfr summary` reads
# the same events, the names agree with a symbolizing run's own JFR file,
# `emberprof top` ranks the names, and a second run changes no byte. Then
# a stripped program (symbolizing run: its code written as addresses)
# named from a --debug-dir tree. For an -O2 C and an -O2 C++ program.
if [ "${EMBER_TEST_ENGINE:-}" = tree ]; then
	echo "--engine tree writes pprof only, no JFR recording to symbolize: skipped"
	exit 77
fi
. "$(dirname "$0")/lib.sh"

need jfr
build_programs
tab=$(printf '\t')
jfrf() {
	python3 "$SYM_SRC/jfr_frames.py" "$@"
}
# the event table of `jfr summary` without the checkpoint's size
summary() {
	jfr summary "$1" | awk '/^ [a-z]/ && $1 != "jdk.CheckPoint" && $1 != "jdk.Metadata" {print $1, $2}'
}

for p in sym_c sym_cxx; do
	id=$(cat "ids/$p")
	"$EMBERPROF" run -q --format both -o "on-$p" -- "bin/$p" 150000000 >/dev/null 2>"on-$p.err"
	check_exit "$p: a symbolizing run" 0 $?
	"$EMBERPROF" run -q --format both --no-symbolize -o "off-$p" -- "bin/$p" 150000000 \
		>/dev/null 2>"off-$p.err"
	check_exit "$p: run --no-symbolize" 0 $?
	frames "on-$p"/*.pb.gz >"on-$p.pframes"
	jfrf truth "on-$p.pframes" | grep "^$id" >"truth-$p"
	if ! ls "off-$p"/*.jfr >/dev/null 2>&1; then
		fail "$p: --no-symbolize --format both wrote no JFR recording"
		continue
	fi
	jfrf frames "off-$p"/*.jfr | grep "^$p$tab" >"off-$p.before"
	if [ -s "off-$p.before" ] && ! grep -v -q "^$p${tab}0x[0-9a-f]*${tab}0${tab}Native\$" "off-$p.before"; then
		ok "$p: --no-symbolize JFR: the program's frames are addresses ($(wc -l <"off-$p.before"))"
	else
		fail "$p: --no-symbolize JFR: names or no frames: $(grep -v "${tab}0x" "off-$p.before" | head -3)"
	fi
	for f in "off-$p"/*.jfr; do
		jfr print --events emberprof.NativeMapping "$f" >"maps-$p.txt"
		if grep -q "buildId = \"$id\"" "maps-$p.txt" && grep -q "path = \".*/bin/$p\"" "maps-$p.txt"; then
			ok "$p: $(basename "$f"): the program's mapping, path and build id recorded"
		else
			fail "$p: $(basename "$f"): no NativeMapping for the program: $(head -12 "maps-$p.txt")"
		fi
	done
	cp -r "off-$p" "off-$p.orig"

	"$EMBERPROF" symbolize --no-debuginfod "off-$p"/*.jfr 2>"sym1-$p.err"
	check_exit "$p: symbolize" 0 $?
	if grep -E -q "[1-9][0-9]* rewritten; [1-9][0-9]* location\(s\) named" "sym1-$p.err"; then
		ok "$p: symbolize rewrote the recordings"
	else
		fail "$p: symbolize rewrote nothing: $(cat "sym1-$p.err")"
	fi
	: >"named-$p"
	for f in "off-$p.orig"/*.jfr; do
		g="off-$p/$(basename "$f")"
		if jfrf named "on-$p.pframes" "$f" "$g" >>"named-$p" 2>"named-$p.err"; then
			ok "$p: $(basename "$f"): every event, and every frame that had a name, as it was"
		else
			fail "$p: $(basename "$f"): changed beyond its placeholders: $(cat "named-$p.err")"
		fi
		summary "$f" >a.sum
		summary "$g" >b.sum
		if [ -s a.sum ] && cmp -s a.sum b.sum; then
			ok "$p: jfr summary reads the same events ($(basename "$f"))"
		else
			fail "$p: jfr summary differs: $(diff a.sum b.sum | head -5)"
		fi
	done
	sort -u "named-$p" | grep "^$id" >"named-$p.sorted"
	same_frames "$p: symbolize of the --no-symbolize JFR = a symbolizing run (jfr print)" \
		"truth-$p" "named-$p.sorted" 3
	jfrf frames "off-$p"/*.jfr | grep "^$p$tab" >"off-$p.after"
	if grep -q "^$p${tab}0x" "off-$p.after"; then
		fail "$p: placeholders left: $(grep "^$p${tab}0x" "off-$p.after" | head -3)"
	else
		ok "$p: every frame of the program named"
	fi
	# the same frames (method, line, frame type) as the symbolizing run's
	# own JFR recording wherever both sampled the method
	jfrf frames "on-$p"/*.jfr | grep "^$p$tab" | sort >"on-$p.jframes"
	sort "off-$p.after" >"off-$p.after.sorted"
	common=$(comm -12 "on-$p.jframes" "off-$p.after.sorted" | wc -l)
	types_on=$(cut -f2,4 "on-$p.jframes" | sort -u)
	bad=$(cut -f2,4 "off-$p.after" | sort -u | while IFS="$tab" read -r m t; do
		printf '%s\n' "$types_on" | grep -F "$m$tab" | grep -v -q -F "$m$tab$t" && echo "$m"
	done)
	if [ "$common" -ge 3 ] && [ -z "$bad" ]; then
		ok "$p: $common frames as the symbolizing run's JFR shows them, frame types alike"
	else
		fail "$p: unlike the symbolizing run's JFR ($common frames in common; types differ: $bad)"
	fi
	for f in "off-$p"/*.jfr; do
		jfr print --stack-depth 64 --events jdk.ExecutionSample "$f"
	done >"print-$p.txt"
	case $p in
	sym_c)
		has_frame "$p: jfr print: the hot function with its line" "print-$p.txt" \
			"^ +sym_c\.sym_hot_loop\(\) line: [1-9]"
		grep -A1 "sym_c\.sym_mix() line:" "print-$p.txt" >"inl-$p.txt"
		has_frame "$p: jfr print: the inlined call as its own frame" "inl-$p.txt" \
			"sym_c\.sym_hot_loop\(\) line: [1-9]"
		"$EMBERPROF" top "off-$p"/*.jfr >"top-$p.txt" 2>&1
		has_frame "$p: emberprof top ranks the names" "top-$p.txt" "sym_hot_loop +sym_c"
		;;
	sym_cxx)
		has_frame "$p: jfr print: the method, demangled, with its line" "print-$p.txt" \
			"symfx::Mixer::run.*\(\) line: [1-9]"
		has_frame "$p: frame type C++ for a demangled name" "off-$p.after" \
			"${tab}symfx::Mixer::run[^$tab]*$tab[0-9]*${tab}C\+\+\$"
		"$EMBERPROF" top "off-$p"/*.jfr >"top-$p.txt" 2>&1
		has_frame "$p: emberprof top ranks the names" "top-$p.txt" "symfx::Mixer::run"
		;;
	esac
	"$EMBERPROF" flame -o "flame-$p.html" "off-$p"/*.jfr 2>/dev/null
	check_exit "$p: emberprof flame reads the symbolized JFR" 0 $?
	has_frame "$p: the flame graph has the names" "flame-$p.html" "sym_hot_loop|symfx::Mixer::run"

	# idempotent: a second run rewrites nothing, byte for byte
	sum1=$(cat "off-$p"/*.jfr | md5sum)
	"$EMBERPROF" symbolize --no-debuginfod "off-$p"/*.jfr 2>"sym2-$p.err"
	check_exit "$p: symbolize again" 0 $?
	sum2=$(cat "off-$p"/*.jfr | md5sum)
	if [ "$sum1" = "$sum2" ] && grep -q ", 0 rewritten; 0 location(s) named" "sym2-$p.err"; then
		ok "$p: a second symbolize changes nothing"
	else
		fail "$p: the second symbolize changed the files: $(cat "sym2-$p.err")"
	fi

	# a recording of two chunks (recordings concatenate): each named as
	# it is named alone
	f=$(ls "off-$p.orig"/*.jfr | head -1)
	cat "$f" "$f" >"two-$p.jfr"
	"$EMBERPROF" symbolize -q --no-debuginfod "two-$p.jfr"
	check_exit "$p: symbolize of two chunks" 0 $?
	g="off-$p/$(basename "$f")"
	if cat "$g" "$g" | cmp -s - "two-$p.jfr" && jfr summary "two-$p.jfr" | grep -q "Chunks: 2"; then
		ok "$p: two chunks: each as the chunk alone becomes"
	else
		fail "$p: two chunks: not the two named chunks"
	fi

	# -o: the result elsewhere, the input untouched
	f=$(ls "off-$p.orig"/*.jfr | head -1)
	sum_in=$(md5sum <"$f")
	"$EMBERPROF" symbolize -q --no-debuginfod -o "out-$p.jfr" "$f"
	check_exit "$p: symbolize -o" 0 $?
	if [ "$(md5sum <"$f")" = "$sum_in" ] && cmp -s "out-$p.jfr" "off-$p/$(basename "$f")"; then
		ok "$p: -o writes the named recording, the input unchanged"
	else
		fail "$p: -o: input changed or output unlike the in-place result"
	fi
done

# A stripped program, symbolizing run: its code is written as addresses
# (the symbolizer has only .eh_frame's function starts), named afterwards
# from a --debug-dir tree by build id.
id=$(cat ids/sym_c)
mkdir -p "dbg/.build-id/$(echo "$id" | cut -c1-2)"
cp debug/sym_c.debug "dbg/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
"$EMBERPROF" run -q --format jfr -o stripped-run -- stripped/sym_c 150000000 >/dev/null 2>stripped.err
check_exit "stripped: a symbolizing run" 0 $?
cp -r stripped-run stripped-run.orig
"$EMBERPROF" symbolize --no-debuginfod stripped-run/*.jfr 2>stripped-nodbg.err
check_exit "stripped: symbolize without its debug file" 0 $?
if [ "$(cat stripped-run/*.jfr | md5sum)" = "$(cat stripped-run.orig/*.jfr | md5sum)" ]; then
	ok "stripped: without a debug file nothing is named (no byte changed)"
else
	fail "stripped: changed without a debug file: $(cat stripped-nodbg.err)"
fi
"$EMBERPROF" symbolize --no-debuginfod --debug-dir "$T/dbg" stripped-run/*.jfr 2>stripped-sym.err
check_exit "stripped: symbolize --debug-dir" 0 $?
: >stripped.named
for f in stripped-run.orig/*.jfr; do
	jfrf named on-sym_c.pframes "$f" "stripped-run/$(basename "$f")" >>stripped.named 2>stripped.nerr ||
		fail "stripped: $(basename "$f") changed beyond its placeholders: $(cat stripped.nerr)"
done
sort -u stripped.named | grep "^$id" >stripped.sorted
same_frames "stripped: --debug-dir names = a symbolizing run of the unstripped build" \
	truth-sym_c stripped.sorted 3

# Two checkpoints chained by their delta, as the JDK writes them
# (jfr_split.py): stack traces in the first, the header pointing at the
# second, which has a Method pool and no Symbol pool
id=$(cat ids/sym_c)
f=$(ls off-sym_c.orig/*.jfr | head -1)
python3 "$SYM_SRC/jfr_split.py" "$f" split.jfr
jfrf frames "$f" | sort >split-a.frames
jfrf frames split.jfr | sort >split-b.frames
if [ -s split-a.frames ] && cmp -s split-a.frames split-b.frames; then
	ok "two checkpoints: the JDK reads the reshaped recording as the original"
else
	fail "two checkpoints: the reshaped recording reads differently"
fi
cp split.jfr split.orig.jfr
"$EMBERPROF" symbolize --no-debuginfod split.jfr 2>split.err
check_exit "two checkpoints: symbolize" 0 $?
if jfrf named on-sym_c.pframes split.orig.jfr split.jfr >split.named 2>split.nerr; then
	ok "two checkpoints: every event and named frame as it was"
else
	fail "two checkpoints: $(cat split.nerr)"
fi
sort -u split.named | grep "^$id" >split.sorted
same_frames "two checkpoints: names = a symbolizing run" truth-sym_c split.sorted 3
sum1=$(md5sum <split.jfr)
"$EMBERPROF" symbolize -q --no-debuginfod split.jfr
if [ "$(md5sum <split.jfr)" = "$sum1" ]; then
	ok "two checkpoints: a second symbolize changes nothing"
else
	fail "two checkpoints: the second symbolize changed the file"
fi

# hostile input: damaged copies of a recording to name (bytes flipped at
# fixed places, cuts) give a named file or an error naming the file, never
# a crash
mkdir -p mut
python3 - "$(ls off-sym_c.orig/*.jfr | head -1)" mut <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
step = max(1, len(data) // 160)
for i, at in enumerate(range(8, len(data), step)):
    d = bytearray(data)
    d[at] ^= 0xFF if i % 2 else 0x80
    open("%s/flip%d.jfr" % (sys.argv[2], i), "wb").write(bytes(d))
for i in range(1, 16):
    open("%s/cut%d.jfr" % (sys.argv[2], i), "wb").write(data[:len(data) * i // 16])
PY
crashed=0 named=0 refused=0
for f in mut/*.jfr; do
	"$EMBERPROF" symbolize -q --no-debuginfod -o mut.out "$f" 2>mut.err
	rc=$?
	if [ "$rc" -eq 0 ]; then
		named=$((named + 1))
	elif [ "$rc" -eq 1 ] && grep -q "$f" mut.err; then
		refused=$((refused + 1))
	else
		crashed=$((crashed + 1))
		echo "    $f: exit $rc: $(cat mut.err)" >&2
	fi
done
if [ "$crashed" -eq 0 ] && [ "$refused" -gt 0 ]; then
	ok "damaged recordings: $named named, $refused refused naming the file, none crashed"
else
	fail "damaged recordings: $crashed crashed or gave no reason ($named named, $refused refused)"
fi

printf 'FLR\0\0\2\0\0garbage' >bad.jfr
"$EMBERPROF" symbolize bad.jfr 2>bad.err
check_exit "symbolize of a malformed JFR file" 1 $?
check_grep "symbolize of a malformed JFR file: names it" bad.err "bad.jfr"
done_tests
