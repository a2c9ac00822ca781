# SPDX-License-Identifier: Apache-2.0
# test_fds.sh - the agent's descriptors stay out of the program's way: a
# program that burns CPU through three 1 s windows (each symbolized in
# the program: its own function through libdwfl, libc through libelf)
# finds no new descriptor below 256 and none it would pass to a command
# it execs (host_fds checks that itself: status 3). Every engine that
# runs in the program; and with a network reporter, whose connection and
# libcurl's socket pairs are ours too.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"

for engine in timer itimer perf; do
	rm -rf prof
	"$EMBERPROF" run -q --engine $engine --rate 250 -i 1s -o prof -- "$H/host_fds" 3.2 >out 2>err
	rc=$?
	if [ $engine = perf ] && grep -q "perf_event_open.*failed" err; then
		echo "skip perf: $(grep -m1 perf_event_open err)"
		continue
	fi
	if [ $rc -eq 0 ]; then
		ok "$engine: $(cat out)"
	else
		fail "$engine: the program found descriptors of ours (status $rc):"
		sed 's/^/    /' out err >&2
	fi
	# the descriptors it checked were the symbolizer's: names were made
	got=$(cpu_of burn_cpu prof/*.pb.gz)
	if [ -n "$got" ]; then
		ok "$engine: burn_cpu named in the profiles ($got ms)"
	else
		fail "$engine: burn_cpu not named in the profiles"
	fi
done

# The same with a network reporter (a fake Pyroscope server): the
# uploader's connection, kept alive from one window to the next, and
# libcurl's own socket pairs (its wake-up pair lives as long as the
# handle) are the agent's descriptors too. They were fds 3, 4 and 5
# without FD_CLOEXEC.
if command -v python3 >/dev/null; then
	python3 "$EMBER_TEST_SRCDIR/tests/pyroscope/fake_pyroscope.py" --dir "$T/recv" \
		--port-file "$T/ports" --lifetime 120 >fake.out 2>&1 &
	FAKE=$!
	if wait_for ports; then
		port=$(cut -d' ' -f1 ports)
		"$EMBERPROF" run -q --engine timer --rate 250 -i 1s --server "http://127.0.0.1:$port" \
			-- "$H/host_fds" 3.2 >out 2>err
		rc=$?
		if [ $rc -eq 0 ]; then
			ok "timer, Pyroscope: $(cat out)"
		else
			fail "timer, Pyroscope: the program found descriptors of ours (status $rc):"
			sed 's/^/    /' out err >&2
		fi
		n=$(ls "$T/recv" 2>/dev/null | grep -c '\.pb$')
		if [ "$n" -ge 2 ]; then ok "timer, Pyroscope: $n profiles received"; else fail "timer, Pyroscope: $n profiles received"; sed 's/^/    /' err >&2; fi
	else
		fail "the fake Pyroscope server did not start"
		cat fake.out >&2
	fi
	kill $FAKE 2>/dev/null
	wait $FAKE 2>/dev/null
else
	echo "no python3: the network reporter's case is not run"
fi
done_tests
