# SPDX-License-Identifier: Apache-2.0
# test_forklock.sh - a fork while another thread of the program holds the
# dynamic loader's list lock (host_forklock.c; seen by CI's
# soak): glibc leaves that lock held in the child, and the child's exec or
# exit must not wait for an agent start stuck on it (it waited the 10 s
# bound, then "did not finish starting"). The exec'd program is profiled;
# the child that only exits is not, and stderr says why.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"

for mode in exec exit; do
	want=3
	[ $mode = exec ] && want=0
	"$H/host_forklock" $mode >plain.out 2>plain.err
	check_grep "$mode, unprofiled: the child's status" plain.out "child status $want"
	rm -rf prof
	"$EMBERPROF" run -o prof -- "$H/host_forklock" $mode >out 2>err
	check_exit "$mode: emberprof's status" 0 $?
	check_grep "$mode: the child's status" out "child status $want"
	if grep -q "did not finish starting" err; then
		fail "$mode: the child waited for an agent start blocked on the loader's lock:"
		sed 's/^/    /' err >&2
	else
		ok "$mode: no wait for a blocked start"
	fi
	if [ $mode = exec ]; then
		ms=$(cpu_of burn_thread_cpu prof/*.pb.gz)
		if [ "${ms:-0}" -ge 100 ]; then
			ok "exec: the exec'd program is profiled (burn_thread_cpu ${ms} ms of 300 ms of its CPU)"
		else
			fail "exec: burn_thread_cpu has '${ms}' ms of 300 in the profiles:"
			sed 's/^/    /' err >&2
		fi
	else
		check_grep "exit: the unprofiled child is reported" err \
			"was not profiled: another thread of its parent held the dynamic loader's list lock"
	fi
done
done_tests
