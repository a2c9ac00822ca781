# SPDX-License-Identifier: Apache-2.0
# test_eintr.sh - the program's system calls that our sampling signals
# make return EINTR are counted and said, not hidden. host_eintr's threads
# alternate a little work and a 200 µs nanosleep, the worst case for the
# known race (a thread seen running is signalled and has entered a call
# when the signal lands: docs/design/limits.md); they count every EINTR
# they see and run until they have seen 5 (or 30 s). With --wall, the
# agent's line at stop (info level) must give exactly the program's count
# (none said when the program saw none): every EINTR the program saw came from
# one of our signals, and each one the agent counted reached the program.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"
P=$EMBER_HOST_BINDIR/host_eintr
[ -x "$P" ] || { echo "no $P"; exit 77; }

"$EMBERPROF" run --wall --log-level info -o out -- "$P" counts 5 30 >/dev/null 2>err
check_exit "run --wall host_eintr" 0 $?
read -r _ seen _ loops <counts || fail "the program wrote no counts"
said=$(sed -n 's/.* \([0-9]*\) system calls\{0,1\} of the program returned EINTR.*/\1/p' err | tail -1)
echo "the program: $seen EINTR in $loops sleeps; the agent said: ${said:-nothing}"
if [ "${said:-0}" = "$seen" ]; then
	ok "the agent's count of interrupted calls is the program's ($seen)"
else
	fail "the agent said ${said:-nothing}, the program saw $seen EINTR"
	sed 's/^/    /' err >&2
fi
[ "$seen" -gt 0 ] || echo "note: no EINTR in this run (the race did not happen): only the absence of a false count was checked"
done_tests
