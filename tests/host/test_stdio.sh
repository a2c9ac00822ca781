# SPDX-License-Identifier: Apache-2.0
# test_stdio.sh - the preloaded library's complaints at start (a bad
# variable, a configuration it refuses) go to descriptor 2 directly, never
# through the program's stderr FILE, whose orientation and buffer are the
# program's: a program that makes stderr wide still can.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"

"$H/host_stdio" 2>ref.err
check_exit "unprofiled" 0 $?
check_grep "unprofiled: stderr is wide" ref.err "wide 1"

# Two complaint paths of the constructor: a malformed switch, and a
# configuration the agent refuses.
for env in EMBERPROF_AUTOSTART=maybe "EMBERPROF_AUTOSTART=1 EMBERPROF_SAMPLE_RATE=abc"; do
	env $env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$EMBER_TEST_LIB" "$H/host_stdio" 2>err
	check_exit "$env: status" 0 $?
	check_grep "$env: stderr is still the program's to make wide" err "wide 1"
	check_grep "$env: the complaint is written" err "emberprof: "
done

done_tests
