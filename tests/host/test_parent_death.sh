# SPDX-License-Identifier: Apache-2.0
# test_parent_death.sh - `emberprof run` as a parent:
#  - SIGKILL of emberprof takes the program with it (PR_SET_PDEATHSIG), so
#    nothing is left running detached;
#  - SIGQUIT is forwarded like SIGINT/SIGTERM/SIGHUP (test_signals.sh
#    covers those) and the status passes through as 128+N.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"

# 1. SIGKILL of emberprof: the program dies too (bounded wait of 10 s).
rm -f child.pid
"$EMBERPROF" run -q -o prof -- sh -c 'echo $$ >child.pid; exec sleep 120' >out 2>err &
ember=$!
if wait_for child.pid; then
	child=$(cat child.pid)
	if alive "$child"; then ok "program $child running under emberprof $ember"; else fail "program not running"; fi
	kill -KILL $ember
	wait $ember 2>/dev/null
	i=0
	while alive "$child" && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if alive "$child"; then
		fail "SIGKILL of emberprof: program $child still running (state $(cat /proc/$child/stat 2>/dev/null))"
		kill -KILL "$child"
	else
		ok "SIGKILL of emberprof: program gone"
	fi
else
	fail "the program did not start"
	cat err >&2
	kill -KILL $ember 2>/dev/null
fi

# 2. SIGQUIT is forwarded (needs a default disposition in the background job).
if env --default-signal=QUIT true 2>/dev/null; then
	rm -f child.pid
	env --default-signal=QUIT "$EMBERPROF" run -q -o prof -- sh -c 'echo $$ >child.pid; exec sleep 120' >out 2>err &
	ember=$!
	if wait_for child.pid; then
		child=$(cat child.pid)
		kill -QUIT $ember
		wait $ember
		check_exit "SIGQUIT forwarded" 131 $?
		if alive "$child"; then fail "SIGQUIT: program still running"; kill -KILL "$child"; else ok "SIGQUIT: program gone"; fi
	else
		fail "SIGQUIT: the program did not start"
		kill -KILL $ember 2>/dev/null
	fi
fi

done_tests
