# test_longpolls_loop.sh - the issue's check: an event-loop program with
# one deliberately slow callback (SLOW_PROG: uv_slow.c, watched by
# emberprof_uv.h, or event_slow.c, events made by emberprof_event.h);
# `emberprof longpolls` must name that callback's stack and give its
# duration within 10% of what the callback measured itself. Run for a
# timer callback (the loop's "work" poll) and an I/O callback (the I/O
# poll, whose waiting time is subtracted), and with uv_slow a callback
# that blocks in nanosleep, found through wall-clock samples
# (EMBERPROF_WALL). Not a timing assertion on
# emberprof: both durations are of the same callback, and the band is
# relative.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${SLOW_PROG:?SLOW_PROG must name uv_slow or event_slow}"

# check_poll MODE CALLBACK INNER (a function the callback calls)
check_poll() {
	mode=$1 cb=$2 inner=$3
	rm -rf "prof-$mode"
	if ! "$SLOW_PROG" "prof-$mode" "$mode" 150 >"out-$mode" 2>"err-$mode"; then
		fail "$mode: $(basename "$SLOW_PROG") failed:"
		cat "err-$mode" >&2
		return
	fi
	measured=$(sed -n 's/^slow_ms=//p' "out-$mode")
	"$EMBERPROF" longpolls --min 20 "prof-$mode"/*.pb.gz >"lp-$mode" 2>"lperr-$mode"
	check_exit "$mode: longpolls" 0 $?
	# the longest poll whose stacks name the callback
	got=$(awk -v cb="$cb" '
		/^poll / { d = $3 }
		$1 == cb && d != "" { print d; exit }' "lp-$mode")
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
case "$SLOW_PROG" in
*uv_slow)
	EMBERPROF_WALL=5ms
	export EMBERPROF_WALL
	check_poll sleep slow_sleep_callback slow_sleep
	unset EMBERPROF_WALL
	ls "prof-sleep"/*.wall.pb.gz >/dev/null 2>&1 && ok "sleep: wall profiles written" ||
		fail "sleep: no wall profile in prof-sleep"
	;;
esac
done_tests
