# SPDX-License-Identifier: Apache-2.0
# test_longpolls_loop.sh - the issue's check: an event-loop program with
# one deliberately slow callback (SLOW_PROG: uv_slow.c, watched by
# emberprof_uv.h, or event_slow.c, events made by emberprof_event.h);
# `emberprof longpolls` must name that callback's stack and give its
# duration within 10% of what the callback measured itself. Run for a
# timer callback (the loop's "work" poll) and an I/O callback (the I/O
# poll, whose waiting time is subtracted), and with uv_slow a callback
# that blocks in nanosleep, found through wall-clock samples
# (EMBERPROF_WALL). The timer case runs again with the agent writing JFR
# (SLOW_FORMAT=jfr: emberprof.LongPoll events, decoded by thread and time)
# and, with both formats, pprof and JFR must name the same poll; the JDK's
# `jfr` reads the recordings. Not a timing assertion on
# emberprof: both durations are of the same callback, and the band is
# relative.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${SLOW_PROG:?SLOW_PROG must name uv_slow or event_slow}"

# check_poll MODE CALLBACK INNER (a function the callback calls) [FORMAT]
# FORMAT: pprof (default) or jfr, the files the agent writes and longpolls reads
check_poll() {
	fmt=${4:-pprof}
	mode=$1 cb=$2 inner=$3
	[ "$fmt" = pprof ] || mode=$1-$fmt
	ext=.pb.gz
	[ "$fmt" = pprof ] || ext=.jfr
	rm -rf "prof-$mode"
	if ! SLOW_FORMAT=$fmt "$SLOW_PROG" "prof-$mode" "$1" 150 >"out-$mode" 2>"err-$mode"; then
		fail "$mode: $(basename "$SLOW_PROG") failed:"
		cat "err-$mode" >&2
		return
	fi
	measured=$(sed -n 's/^slow_ms=//p' "out-$mode")
	"$EMBERPROF" longpolls --min 20 "prof-$mode"/*$ext >"lp-$mode" 2>"lperr-$mode"
	check_exit "$mode: longpolls" 0 $?
	# the longest poll whose stacks name the callback (from JFR as
	# module.function)
	got=$(awk -v cb="$cb" '
		/^poll / { d = $3 }
		($1 == cb || substr($1, length($1) - length(cb)) == "." cb) && d != "" { print d; exit }' "lp-$mode")
	if [ -z "$got" ]; then
		fail "$mode: no long poll names $cb:"
		sed 's/^/    /' "lp-$mode" >&2
		return
	fi
	check_grep "$mode: the stack" "lp-$mode" "$inner"
	if awk -v g="$got" -v m="$measured" 'BEGIN { d = g - m; if (d < 0) d = -d; exit !(m > 0 && d <= 0.1 * m) }'; then
		ok "$mode: poll of $got ms, the callback measured $measured ms (within 10%)"
	else
		fail "$mode: poll of $got ms, but the callback measured $measured ms (more than 10% apart)"
		sed 's/^/    /' "lp-$mode" >&2
	fi
}

check_poll timer slow_timer_callback slow_burn
check_poll io slow_io_callback slow_burn
check_poll timer slow_timer_callback slow_burn jfr
# Both formats from one run: JFR (poll events matched with samples by
# thread and time) and pprof (samples labelled by the agent) must show the
# same poll: the same duration (to rounding) and sample count (one sample
# of slack for a sample at the poll's edge, where the poll clock's
# conversion to CLOCK_REALTIME decides).
rm -rf prof-both
if SLOW_FORMAT=both "$SLOW_PROG" prof-both timer 150 >out-both 2>err-both; then
	"$EMBERPROF" longpolls --min 20 prof-both/*.pb.gz >lp-both-pprof 2>&1
	"$EMBERPROF" longpolls --min 20 prof-both/*.jfr >lp-both-jfr 2>&1
	a=$(sed -n 's/^poll [0-9]*: \([0-9.]*\) ms, \([0-9]*\) samples*.*/\1 \2/p' lp-both-pprof | head -1)
	b=$(sed -n 's/^poll [0-9]*: \([0-9.]*\) ms, \([0-9]*\) samples*.*/\1 \2/p' lp-both-jfr | head -1)
	if [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN {
		split(a, x, " "); split(b, y, " "); dd = x[1] - y[1]; ds = x[2] - y[2]
		exit !((dd < 0 ? -dd : dd) <= 0.002 && (ds < 0 ? -ds : ds) <= 1) }'; then
		ok "both formats: the longest poll is '$a' (ms, samples) in pprof and '$b' in JFR"
	else
		fail "both formats: the longest poll is '$a' (ms, samples) in pprof but '$b' in JFR"
		sed 's/^/    pprof: /' lp-both-pprof | grep -v '^    pprof:       ' >&2
		sed 's/^/    jfr:   /' lp-both-jfr | grep -v '^    jfr:         ' >&2
	fi
else
	fail "both: $(basename "$SLOW_PROG") failed:"
	cat err-both >&2
fi
# the JDK's reader takes the recordings, long polls included
jfr_tool=${EMBER_JFR_TOOL:-$(command -v jfr || echo /usr/bin/jfr)}
if [ -x "$jfr_tool" ]; then
	: >summ-jfr
	: >print-jfr
	for f in prof-timer-jfr/*.jfr; do
		"$jfr_tool" summary "$f" >>summ-jfr 2>&1 || fail "jfr summary $f failed"
		"$jfr_tool" print --events emberprof.LongPoll "$f" >>print-jfr 2>&1 ||
			fail "jfr print $f failed"
	done
	n=$(awk '$1 == "emberprof.LongPoll" { n += $2 } END { print n + 0 }' summ-jfr)
	[ "$n" -ge 1 ] && ok "jfr summary: $n emberprof.LongPoll events" ||
		fail "jfr summary: no emberprof.LongPoll event in prof-timer-jfr"
	check_grep "jfr print: a poll's duration" print-jfr "duration = "
	check_grep "jfr print: a poll's thread" print-jfr "eventThread = "
else
	fail "the JDK's jfr tool is missing (install openjdk-17-jdk-headless: scripts/setup-deps.sh)"
fi
case "$SLOW_PROG" in
*uv_slow)
	EMBERPROF_WALL=5ms
	export EMBERPROF_WALL
	check_poll sleep slow_sleep_callback slow_sleep
	check_poll sleep slow_sleep_callback slow_sleep jfr # profiler.WallClockSample events
	unset EMBERPROF_WALL
	ls "prof-sleep"/*.wall.pb.gz >/dev/null 2>&1 && ok "sleep: wall profiles written" ||
		fail "sleep: no wall profile in prof-sleep"
	;;
esac
done_tests
