# SPDX-License-Identifier: Apache-2.0
# test_fds.sh - the agent's descriptors stay out of the program's way: a
# program that burns CPU through three 1 s windows (each symbolized in
# the program: its own function through libdwfl, libc through libelf)
# finds no new descriptor below 256 and none it would pass to a command
# it execs (host_fds checks that itself: status 3). Every engine that
# runs in the program.
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
done_tests
