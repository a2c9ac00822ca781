# SPDX-License-Identifier: Apache-2.0
# test_signals.sh - SIGTERM and SIGINT sent to emberprof reach the program,
# and emberprof exits with the program's status (128+N).
. "$(dirname "$0")/lib.sh"


# A background job of a non-interactive shell starts with SIGINT and SIGQUIT
# ignored (and so would the program); give emberprof default dispositions.
if env --default-signal=INT true 2>/dev/null; then
	reset="env --default-signal=INT,QUIT"
	sigs="TERM INT HUP"
else
	reset=""
	sigs="TERM HUP"
fi

for sig in $sigs; do
	rm -f child.pid
	# exec: the child pid is the one that will receive the signal.
	$reset "$EMBERPROF" run -q -o prof -- sh -c 'echo $$ >child.pid; exec sleep 60' >out 2>err &
	ember=$!
	if ! wait_for child.pid; then
		fail "SIG$sig: the program did not start; emberprof's stderr and processes:"
		cat err >&2
		ps -o pid,ppid,stat,wchan:20,args -e 2>/dev/null | awk -v e=$ember '$1 == e || $2 == e' >&2
		kill -KILL $ember 2>/dev/null
		continue
	fi
	child=$(cat child.pid)
	kill -$sig $ember
	wait $ember
	rc=$?
	case $sig in TERM) n=15 ;; INT) n=2 ;; HUP) n=1 ;; esac
	check_exit "SIG$sig forwarded" $((128 + n)) $rc
	if kill -0 "$child" 2>/dev/null; then
		fail "SIG$sig: program $child still running"
		kill -KILL "$child"
	else
		ok "SIG$sig: program gone"
	fi
done

done_tests
