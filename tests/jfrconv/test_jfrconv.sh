# SPDX-License-Identifier: Apache-2.0
# test_jfrconv.sh - async-profiler's own converter (jfrconv, from an
# async-profiler 4.x build: JFRCONV, or ASYNC_PROFILER_HOME/bin/jfrconv or
# ASYNC_PROFILER_HOME/build/bin/jfrconv; skipped with exit 77 when absent)
# reads the JFR recordings `emberprof run --format both` writes as our own
# pprof files say, window by window (section 3):
#   --cpu -o collapsed      the CPU profile's stacks and sample counts, exactly
#   --cpu -o pprof          the same, through its pprof output
#   --wall -o collapsed     the wall profile's stacks; each count the wall
#                           time over the interval (per-event rounding aside)
#   --nativemem -o collapsed  the memory profile's stacks (sampled
#                           allocations, unscaled, as async-profiler records
#                           them; our pprof holds the scaled estimate)
#   --alloc                 nothing: Java allocation events only, as for
#                           async-profiler's own native recordings
#   --cpu -o html           a flame graph with the CPU profile's hottest leaf
# and without --cpu/--wall the CPU and wall samples mix (as they do in
# async-profiler's own recordings). Then, for `run --no-symbolize` and for
# a symbolizing run of a stripped program (frames as addresses, with
# emberprof.NativeMapping events), the CPU stacks, collapsed and through
# its pprof output, with nothing printed on its error stream.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_HEAP_WORKLOAD:?}" "${EMBER_PYTHON3:?}"
need jfr strip
J=${JFRCONV:-}
for d in "${ASYNC_PROFILER_HOME:-/nonexistent}" "${ASYNC_PROFILER_HOME:-/nonexistent}/build"; do
	[ -z "$J" ] && [ -x "$d/bin/jfrconv" ] && J=$d/bin/jfrconv
done
if [ -z "$J" ] || [ ! -x "$J" ]; then
	echo "SKIP: set JFRCONV (or ASYNC_PROFILER_HOME) to async-profiler 4.x's jfrconv to run this test"
	exit 77
fi
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	# ASan's allocator, preloaded first, serves malloc: no memory profile to compare.
	echo "SKIP: in the sanitizer build allocation profiling has no malloc to sample; the normal build runs this"
	exit 77
	;;
esac
S="$EMBER_TEST_SRCDIR/tests/jfrconv/stacks.py"
st() { "$EMBER_PYTHON3" "$S" "$@"; }

# About 3 s of work on an idle machine (0.6 s per 12 M allocations on
# the 2-vCPU VM of docs/BENCHMARKS.md; 12 M once gave a single window
# there): at least two full 1 s windows. A slower machine takes longer.
"$EMBERPROF" run -q --format both --wall --alloc --interval 1s -o "$T/rec" \
	-- "$EMBER_HEAP_WORKLOAD" 2 60000000 >out 2>err
check_exit "emberprof run --format both --wall --alloc" 0 $?
n=0
for f in $(ls "$T"/rec/*.jfr | sort -t- -k4,4n); do
	b=${f%.jfr}
	[ -e "$b.pb.gz" ] && [ -e "$b.wall.pb.gz" ] && [ -e "$b.memory.pb.gz" ] || continue
	n=$((n + 1))
	w=$(basename "$b")
	"$J" --cpu -o collapsed "$f" "$T/cpu.j" >/dev/null 2>"$T/jerr" || fail "$w: jfrconv --cpu: $(cat "$T/jerr")"
	st pprof "$b.pb.gz" samples >"$T/cpu.p"
	st same "$w cpu" "$T/cpu.j" "$T/cpu.p" >"$T/r" && ok "$(cat "$T/r")" || fail "$(cat "$T/r")"

	"$J" --cpu -o pprof "$f" "$T/cpu.pb" >/dev/null 2>"$T/jerr" || fail "$w: jfrconv -o pprof: $(cat "$T/jerr")"
	st pprof "$T/cpu.pb" >"$T/cpu.jp"
	st same "$w cpu via its pprof" "$T/cpu.jp" "$T/cpu.p" >"$T/r" && ok "$(cat "$T/r")" || fail "$(cat "$T/r")"

	"$J" --wall -o collapsed "$f" "$T/wall.j" >/dev/null 2>"$T/jerr" || fail "$w: jfrconv --wall: $(cat "$T/jerr")"
	st pprof "$b.wall.pb.gz" wall >"$T/wall.p"
	st pprof "$b.wall.pb.gz" samples >"$T/wall.n"
	st near "$w wall" "$T/wall.j" "$T/wall.p" 50000000 "$T/wall.n" >"$T/r" && ok "$(cat "$T/r")" || fail "$(cat "$T/r")"

	"$J" --nativemem -o collapsed "$f" "$T/mem.j" >/dev/null 2>"$T/jerr" || fail "$w: jfrconv --nativemem: $(cat "$T/jerr")"
	st pprof "$b.memory.pb.gz" alloc_space >"$T/mem.p"
	st keys "$w nativemem" "$T/mem.j" "$T/mem.p" >"$T/r" && ok "$(cat "$T/r")" || fail "$(cat "$T/r")"

	"$J" --alloc -o collapsed "$f" "$T/alloc.j" >/dev/null 2>&1
	[ ! -s "$T/alloc.j" ] && ok "$w: --alloc finds no Java allocations" || fail "$w: --alloc printed $(wc -l <"$T/alloc.j") stacks"

	# mixed, as in async-profiler's own recordings: CPU samples + wall samples
	"$J" -o collapsed "$f" "$T/all.j" >/dev/null 2>&1
	c=$(awk '{s += $NF} END {print s + 0}' "$T/cpu.j") wl=$(awk '{s += $NF} END {print s + 0}' "$T/wall.j")
	a=$(awk '{s += $NF} END {print s + 0}' "$T/all.j")
	[ "$a" -eq $((c + wl)) ] && ok "$w: without --cpu/--wall, $a = $c CPU + $wl wall samples" ||
		fail "$w: without --cpu/--wall $a samples, not $c + $wl"

	"$J" --cpu -o html "$f" "$T/cpu.html" >/dev/null 2>"$T/jerr" || fail "$w: jfrconv -o html: $(cat "$T/jerr")"
	hot=$(sort -t' ' -k2,2nr "$T/cpu.p" | head -1 | sed 's/ [0-9]*$//; s/.*;//')
	st html "$T/cpu.html" >"$T/html.names"
	total=$(head -1 "$T/html.names")
	[ "$total" = "$c" ] && grep -qxF "$hot" "$T/html.names" &&
		ok "$w: the flame graph has $c samples and $hot" ||
		fail "$w: the flame graph has $total samples (not $c) or lacks $hot"
done
[ $n -ge 2 ] && ok "$n windows compared" || fail "only $n windows with all three profiles"

# Recordings with frames left as addresses: `run --no-symbolize` (every
# frame a "0xOFFSET" method) and a symbolizing run of a stripped copy of
# the workload (its code as addresses, the symbolizer knowing only its
# functions' starts); both carry emberprof.NativeMapping events
# (docs/design/debuginfod.md, "JFR recordings"), which the converter must
# read past without error. Each window's CPU stacks as the pprof written
# beside it says (stacks.py names the same frames 0x<file offset>).
cp "$EMBER_HEAP_WORKLOAD" "$T/hw" && strip --strip-all "$T/hw" || fail "cannot strip a copy of the workload"
for mode in no-symbolize stripped; do
	if [ $mode = no-symbolize ]; then
		"$EMBERPROF" run -q --no-symbolize --format both --interval 1s -o "$T/$mode" \
			-- "$EMBER_HEAP_WORKLOAD" 2 20000000 >out 2>err
	else
		"$EMBERPROF" run -q --format both --interval 1s -o "$T/$mode" -- "$T/hw" 2 20000000 >out 2>err
	fi
	check_exit "emberprof run ($mode)" 0 $?
	n=0 maps=0 addr=0
	for f in "$T/$mode"/*.jfr; do
		b=${f%.jfr}
		[ -e "$b.pb.gz" ] || continue
		n=$((n + 1))
		w="$mode $(basename "$b")"
		m=$(jfr summary "$f" | awk '$1 == "emberprof.NativeMapping" {print $2}')
		maps=$((maps + ${m:-0}))
		"$J" --cpu -o collapsed "$f" "$T/cpu.j" >/dev/null 2>"$T/jerr" || fail "$w: jfrconv --cpu: $(cat "$T/jerr")"
		[ -s "$T/jerr" ] && fail "$w: jfrconv --cpu complained: $(cat "$T/jerr")"
		st pprof "$b.pb.gz" samples >"$T/cpu.p"
		if [ ! -s "$T/cpu.p" ] && [ ! -s "$T/cpu.j" ]; then
			ok "$w: no CPU sample in either" && continue
		fi
		st same "$w cpu (${m:-0} NativeMapping events)" "$T/cpu.j" "$T/cpu.p" >"$T/r" && ok "$(cat "$T/r")" || fail "$(cat "$T/r")"
		# a frame written as an address needs its module's NativeMapping event
		if grep -q '0x[0-9a-f]' "$T/cpu.j"; then
			addr=$((addr + 1))
			[ "${m:-0}" -ge 1 ] || fail "$w: frames as addresses but no NativeMapping event"
		fi
		"$J" --cpu -o pprof "$f" "$T/cpu.pb" >/dev/null 2>"$T/jerr" || fail "$w: jfrconv -o pprof: $(cat "$T/jerr")"
		st pprof "$T/cpu.pb" >"$T/cpu.jp"
		st same "$w cpu via its pprof" "$T/cpu.jp" "$T/cpu.p" >"$T/r" && ok "$(cat "$T/r")" || fail "$(cat "$T/r")"
	done
	[ $addr -ge 1 ] && [ $maps -ge $addr ] &&
		ok "$mode: $n windows, $addr with frames as addresses, $maps NativeMapping events read past" ||
		fail "$mode: $n windows, $addr with frames as addresses, $maps NativeMapping events"
done
done_tests
