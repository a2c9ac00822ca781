# SPDX-License-Identifier: Apache-2.0
# test_closefds.sh - a program that closes every descriptor it did not
# open, as daemons do, and reuses the numbers for files of its own
#: every engine still samples it, every window is
# written, the agent's output directory and spool are reopened by path
# (logged), and nothing is written into, closed or replaced among the
# program's own descriptors (host_closefds checks that itself: status 3).
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"

for engine in timer itimer perf; do
	rm -rf prof trap
	mkdir trap
	"$EMBERPROF" run -q --engine $engine --rate 250 -i 1s --log-level info -o prof -- \
		"$H/host_closefds" "$T/trap" 2.5 >out 2>err
	rc=$?
	if [ $engine = perf ] && grep -q "perf_event_open.*failed" err; then
		echo "skip perf: $(grep -m1 perf_event_open err)"
		continue
	fi
	check_exit "$engine: the program's own descriptors untouched" 0 $rc
	[ $rc -eq 0 ] || cat err >&2
	# 2.5 s of wall time in 1 s windows: at least 2 windows (3 or 4 unless
	# the machine starves the program of CPU for whole seconds).
	n=$(profiles prof)
	if [ "$n" -ge 2 ]; then ok "$engine: $n profiles written"; else fail "$engine: $n profiles written"; cat err >&2; fi
	check_grep "$engine: output directory reopened by path" err \
		"the program closed or reused the output directory's descriptor; reopened it by path"
	cpu=$(sed -n 's/^cpu_ms //p' err)
	got=$(cpu_of burn_cpu prof/*.pb.gz)
	# Sampled per 4 ms of CPU time: the profiles hold about all of it. The
	# threads' perf events and timers survive the closing (or are made
	# again within 50 ms): half of it is far below what that gives.
	if [ -n "$got" ] && [ -n "$cpu" ] && [ $((got * 2)) -ge "$cpu" ]; then
		ok "$engine: burn_cpu has ${got} ms of the program's ${cpu} ms"
	else
		fail "$engine: burn_cpu has '${got}' ms of the program's '${cpu}' ms"
	fi
	if ls -A prof | grep -q '^\.'; then fail "$engine: temporary files left"; else ok "$engine: no temporary files"; fi
done

# The spool too: a server that is down sends every window to the spool at
# once (test_exit_paths.sh), through descriptors the program has closed.
if command -v python3 >/dev/null; then
	rm -rf spool trap
	mkdir trap
	port=$(refused_port)
	EMBERPROF_SERVER_SPOOL_DIR=$T/spool "$EMBERPROF" run -q -i 1s --log-level info \
		--server "http://127.0.0.1:$port" -- "$H/host_closefds" "$T/trap" 2.5 >out 2>err
	check_exit "spool: the program's own descriptors untouched" 0 $?
	check_grep "spool: reopened by path" err "descriptors of spool '$T/spool'; reopened by path"
	n=$(ls spool | grep -c '\.ems$')
	if [ "$n" -ge 2 ]; then ok "spool: $n windows spooled"; else fail "spool: $n windows spooled"; cat err >&2; fi
	check_no_grep "spool: no window dropped" err " dropped:"
	check_grep "spool: nothing dropped at shutdown" err "spooled, 0 dropped"
else
	echo "skip spool case: python3 missing"
fi

done_tests
