# SPDX-License-Identifier: Apache-2.0
# test_exit.sh - a program that ends with _exit()/_Exit() (also from a
# signal handler) still delivers its final window, and
# _exit keeps its meaning: no atexit handlers, no stdio flush, the status
# passes through.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"

# One partial window: a 1 h interval and 1 s of CPU, so (unless the run
# crosses a full hour) every sample is in the final window, which only the
# exit path reports.
# `fork`: a fork child's _exit (as after a failed exec) goes straight
# through - no agent there to wait for, nothing reported as lost.
for how in _exit _Exit signal fork exit; do
	rm -rf prof
	"$EMBERPROF" run -q -i 60m -o prof -- "$H/host_exit" $how 1 7 >out 2>err
	check_exit "$how: status" 7 $?
	n=$(profiles prof)
	if [ "$n" -ge 1 ]; then ok "$how: $n profile(s) written"; else fail "$how: no profile written:"; cat err >&2; fi
	cpu=$(sed -n 's/^cpu_ms //p' err)
	got=$(cpu_of burn_cpu prof/*.pb.gz)
	# Samples are taken per 10 ms of CPU: the profile holds about all of
	# the program's CPU time; half of it is far below that.
	if [ -n "$got" ] && [ -n "$cpu" ] && [ $((got * 2)) -ge "$cpu" ]; then
		ok "$how: burn_cpu has ${got} ms of the program's ${cpu} ms"
	else
		fail "$how: burn_cpu has '${got}' ms of the program's '${cpu}' ms"
	fi
	if [ "$how" = exit ]; then
		check_grep "exit: atexit handlers ran" err "atexit ran"
		check_grep "exit: stdio flushed" out "unflushed"
	else
		check_no_grep "$how: no atexit handler ran" err "atexit ran"
		if [ -s out ]; then fail "$how: stdout was flushed by the hook: $(cat out)"; else ok "$how: stdout not flushed"; fi
	fi
	check_no_grep "$how: nothing lost" err "lost"
done

# The program's own failed assertion: the C library's message, word for
# word, and SIGABRT, as without emberprof (which defines __assert_fail).
"$H/host_exit" assert 0.1 >out 2>ref.err
ref_rc=$?
check_exit "assert unprofiled: status" 134 $ref_rc
"$EMBERPROF" run -q -o prof2 -- "$H/host_exit" assert 0.1 >out 2>err
check_exit "assert under emberprof run: status" $ref_rc $?
want=$(grep "Assertion" ref.err)
if [ -n "$want" ] && grep -qxF "$want" err; then
	ok "assert: the C library's message: $want"
else
	fail "assert: message '$want' not in the profiled run's stderr:"
	cat err >&2
fi
LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$EMBER_TEST_LIB" "$H/host_exit" assert 0.1 >out 2>err
check_exit "assert with LD_PRELOAD: status" $ref_rc $?
check_grep "assert with LD_PRELOAD: the C library's message" err "Assertion"

done_tests
