# SPDX-License-Identifier: Apache-2.0
# test_exit_paths.sh - exit paths with a network reporter
# a server that refuses the connection is known to be down, so
# the window goes to the spool at once and the exit does not wait the
# flush timeout for it; a server that is reachable but silent still gets
# the whole documented flush wait. Asserted on what the pipeline logs and
# leaves on disk, not on wall time.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 is needed for the test servers"; exit 77; }

# 1. Refused, with a spool: a 30 s flush timeout that must not be waited.
port=$(refused_port)
EMBERPROF_SERVER_SPOOL_DIR=$T/spool EMBERPROF_SERVER_FLUSH_TIMEOUT=30s \
	"$EMBERPROF" run -q --log-level debug --server "http://127.0.0.1:$port" -- \
	"$H/host_exit" exit 0.3 0 >out 2>err
check_exit "refused: status" 0 $?
# The window's number: 1 when the first window held no sample (a 10 s
# boundary passed before the program's first one, which a loaded machine
# makes likelier).
if grep -qE "upload of window [0-9]+ failed" err; then
	ok "refused: the attempt failed at once: $(grep -oE "upload of window [0-9]+ failed" err | head -1)"
else
	fail "refused: the attempt failed at once: no 'upload of window N failed' in err:"
	sed 's/^/    /' err >&2
fi
check_grep "refused: the server is known down at the flush" err \
	"the server refused the connection: not waiting for it"
check_no_grep "refused: the flush did not wait its timeout" err "within the 30000 ms flush wait"
n=$(ls spool 2>/dev/null | grep -c '\.ems$')
if [ "$n" -ge 1 ]; then ok "refused: $n window(s) in the spool"; else fail "refused: spool empty"; cat err >&2; fi
check_no_grep "refused: nothing dropped" err " dropped:"

# The same without a spool: the window is dropped, counted and logged.
"$EMBERPROF" run -q --log-level info --server "http://127.0.0.1:$port" -- \
	"$H/host_exit" exit 0.3 0 >out 2>err
check_exit "refused, no spool: status" 0 $?
check_grep "refused, no spool: not waiting" err "the server refused the connection: not waiting for it"
check_grep "refused, no spool: the loss is logged" err "dropped: undelivered at shutdown and no spool directory"

# 2. Reachable but silent: the flush waits its whole (1 s) timeout, then
# the window goes to the spool.
rm -f port
python3 "$EMBER_TEST_SRCDIR/tests/host/silent_server.py" "$T/port" &
srv=$!
if wait_for port; then
	rm -rf spool
	EMBERPROF_SERVER_SPOOL_DIR=$T/spool EMBERPROF_SERVER_FLUSH_TIMEOUT=1s \
		"$EMBERPROF" run -q --log-level debug --server "http://127.0.0.1:$(cat port)" -- \
		"$H/host_exit" exit 0.3 0 >out 2>err
	check_exit "silent: status" 0 $?
	# Windows are aligned to the wall clock (10 s): a run that crosses a
	# boundary has two (CI saw it), both waited for and spooled.
	if grep -Eq '(1 window|2 windows) not delivered within the 1000 ms flush wait' err; then
		ok "silent: the flush waited its timeout"
	else
		fail "silent: the flush did not wait its timeout:"; sed 's/^/    /' err >&2
	fi
	check_no_grep "silent: not taken for down" err "refused the connection"
	if grep -Eq 'at shutdown: (1 undelivered window|2 undelivered windows) spooled' err; then
		ok "silent: spooled at shutdown"
	else
		fail "silent: not spooled at shutdown:"; sed 's/^/    /' err >&2
	fi
else
	fail "the silent server did not start"
fi
kill $srv 2>/dev/null
wait $srv 2>/dev/null

done_tests
