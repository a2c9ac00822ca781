# SPDX-License-Identifier: Apache-2.0
# test_asprof_stripped.sh - the async-profiler backend (a real
# libasyncProfiler.so named by ASYNC_PROFILER_LIB; skipped with 77 without
# one) on a stripped -O2 C program: what async-profiler writes for code
# without symbols, and why `emberprof symbolize` cannot name it afterwards
# (docs/design/debuginfod.md, "async-profiler's recordings"):
#   - an unstripped run names the program's frames (the reference);
#   - the stripped program, no debug file anywhere async-profiler looks:
#     every frame in the program is one method named by the program's path
#     (no address, line 0), and a jdk.NativeLibrary event gives that path
#     and the text's address range; `emberprof symbolize --debug-dir` with
#     the right debug file at hand changes no byte (no wrong name);
#   - the same stripped program with its debug file (objcopy
#     --only-keep-debug) in the debuginfod client cache layout
#     ($DEBUGINFOD_CACHE_PATH/BUILDID/debuginfo, which `emberprof
#     symbolize`, debuginfod-find, perf and gdb fill): async-profiler
#     names the frames itself, the functions of the unstripped build, the
#     hottest stack as the unstripped run's.
# Checked with the JDK's `jfr print`.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
L=${ASYNC_PROFILER_LIB:-}
if [ -z "$L" ] || [ ! -f "$L" ]; then
	echo "SKIP: set ASYNC_PROFILER_LIB to a real libasyncProfiler.so (async-profiler 4.x) to run this test"
	exit 77
fi
need jfr strip objcopy readelf nm "${CC:-cc}"

mkdir -p bin stripped cache empty dbg
${CC:-cc} -O2 -g -Wl,--build-id=sha1 -o bin/sym_c "$EMBER_TEST_SRCDIR/tests/symbolize/sym_c.c" ||
	{ echo "cannot build sym_c.c"; exit 1; }
cp bin/sym_c stripped/sym_c && strip --strip-all stripped/sym_c &&
	objcopy --only-keep-debug bin/sym_c sym_c.debug || exit 1
id=$(readelf -n stripped/sym_c | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
[ -n "$id" ] || { echo "stripped/sym_c has no build id"; exit 1; }
nm bin/sym_c | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >functions

# No debug file where async-profiler looks unless a run puts one there:
# /usr/lib/debug/.build-id cannot hold this fresh build id; the debuginfod
# caches are named by these three variables.
rec() { # DIR PROGRAM [DEBUGINFOD_CACHE_PATH]
	HOME=$T/empty XDG_CACHE_HOME=$T/empty DEBUGINFOD_CACHE_PATH=${3:-$T/empty} \
		EMBERPROF_ASPROF_LIB=$L EMBERPROF_ASPROF_CPU_INTERVAL=10ms \
		"$EMBERPROF" run -q --backend asprof --format jfr -o "$1" -- "$2" 150000000 >/dev/null 2>"$1.err"
	check_exit "run --backend asprof $2 -> $1" 0 $?
	ls "$1"/*.jfr >/dev/null 2>&1 || fail "$1: no JFR recording"
}
# every sample's frames, "class.method()" one a line, a blank line between samples
frames() {
	for f in "$1"/*.jfr; do
		jfr print --events jdk.ExecutionSample --stack-depth 64 "$f"
	done | awk '/^jdk.ExecutionSample/ {print ""} / line: [0-9]+/ {sub(/^ +/, ""); sub(/ +line: [0-9]+.*$/, ""); print}'
}
# the program's part of each stack, root first, as "a;b;c" lines with counts
program_stacks() { # FRAMES CLASS-PREFIX
	awk -v p="$2" 'function out() { if (s != "") print s; s = "" }
		/^$/ {out(); next} index($0, p) == 1 {s = (s == "" ? $0 : $0 ";" s)} END {out()}' "$1" |
		sort | uniq -c | sort -rn
}

rec unstripped bin/sym_c
frames unstripped >u.frames
program_stacks u.frames "sym_c." >u.stacks
grep -q "sym_c\.sym_hot_loop()" u.frames && ok "unstripped: the program's frames named ($(wc -l <u.stacks) stacks)" ||
	fail "unstripped: no sym_hot_loop frame: $(head -5 u.frames)"

rec nodebug stripped/sym_c
frames nodebug >n.frames
path=$T/stripped/sym_c
n=$(grep -c -x -F ".$path()" n.frames)
if [ "$n" -ge 1 ] && ! grep -q "^sym_c\." n.frames; then
	ok "stripped, no debug file: $n frames, each the method \"$path\" (no address)"
else
	fail "stripped, no debug file: $n frames named by the path; others: $(grep "^sym_c\." n.frames | head -3)"
fi
for f in nodebug/*.jfr; do jfr print --events jdk.NativeLibrary "$f"; done >n.libs
grep -q "name = \"$path\"" n.libs && grep -q "topAddress" n.libs &&
	ok "stripped: a jdk.NativeLibrary event gives the path and address range, no build id" ||
	fail "stripped: no jdk.NativeLibrary event for $path: $(head -8 n.libs)"
grep -q -i "buildId" n.libs && fail "stripped: jdk.NativeLibrary now has a build id: $(grep -i buildId n.libs | head -2) (see docs/design/debuginfod.md)"

mkdir -p "dbg/.build-id/$(echo "$id" | cut -c1-2)"
cp sym_c.debug "dbg/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
sum1=$(cat nodebug/*.jfr | md5sum)
"$EMBERPROF" symbolize --no-debuginfod --debug-dir "$T/dbg" nodebug/*.jfr 2>sym.err
check_exit "symbolize --debug-dir on async-profiler's recording" 0 $?
if [ "$(cat nodebug/*.jfr | md5sum)" = "$sum1" ] && grep -q ", 0 rewritten; 0 location(s) named" sym.err; then
	ok "symbolize: async-profiler's recording unchanged, byte for byte (its frames have no address)"
else
	fail "symbolize changed async-profiler's recording: $(cat sym.err)"
fi

mkdir -p "cache/$id" && cp sym_c.debug "cache/$id/debuginfo"
rec cached stripped/sym_c "$T/cache"
frames cached >c.frames
program_stacks c.frames "sym_c." >c.stacks
grep -x -F ".$path()" c.frames >/dev/null && fail "debug file in the cache: frames still named by the path"
sed -n 's/^sym_c\.\(.*\)()$/\1/p' c.frames | sort -u >c.names
unknown=$(comm -23 c.names functions | head -3)
if [ -s c.names ] && [ -z "$unknown" ] && grep -q -x sym_hot_loop c.names; then
	ok "debug file in the debuginfod cache: async-profiler names the frames: $(tr '\n' ' ' <c.names)"
else
	fail "debug file in the debuginfod cache: names $(tr '\n' ' ' <c.names); not functions of the build: $unknown"
fi
hu=$(head -1 u.stacks | awk '{print $2}') hc=$(head -1 c.stacks | awk '{print $2}')
[ -n "$hu" ] && [ "$hu" = "$hc" ] && ok "the hottest stack as the unstripped run's: $hc" ||
	fail "hottest stacks differ: unstripped $hu, stripped with its debug file $hc"
done_tests
