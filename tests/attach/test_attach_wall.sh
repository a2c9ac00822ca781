# SPDX-License-Identifier: Apache-2.0
# test_attach_wall.sh - `emberprof attach --wall PID`: the library loaded
# into a running process whose threads wait in read, nanosleep,
# epoll_wait and a condition variable. Every thread's wall-clock time is
# the same (each sampled at every tick), and the profiles hold exactly the
# samples the agent says it took (its own count, never a clock); detach
# leaves the threads, caught signals (SigCgt) and descriptors as they
# were; the waiting calls then complete normally, none returns EINTR (the
# program fails if one does); the program exits 0. Then the same for a
# program whose one thread waits in epoll_wait. Skipped (77) where
# ptrace or perf events are refused.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
need python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
ptrace_probe

start_target blocked
holdings "$TPID" >before
mapped_files >maps.before
wx_before=$(grep -c ' rwxp ' "/proc/$TPID/maps")
"$EMBERPROF" attach --wall --log-level info --duration 1s -o out "$TPID" >err 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "ptrace refused" err; then
	echo "ptrace refused here: $(cat err)"
	exec 3>&-
	exit 77
fi
check_exit "attach --wall" 0 $rc
check_grep "the agent started" err "library loaded and agent started in 1 process"
st=$(state_of "$TPID")
case $st in S) ok "the target waits on after detach (state $st)" ;; *) fail "the target's state after detach: '$st'" ;; esac
same_holdings "detach" before
mapped_files >maps.after
new=$(comm -13 maps.before maps.after | grep -v '\.so[.0-9]*$')
[ -z "$new" ] && ok "memory: only shared libraries newly mapped (the library and what it loads)" ||
	fail "detach left mappings other than libraries: $new"
wx_after=$(grep -c ' rwxp ' "/proc/$TPID/maps")
[ "$wx_after" = "$wx_before" ] && ok "the loader calls' page is unmapped ($wx_after writable+executable mappings, as before)" ||
	fail "writable+executable mappings: $wx_before before, $wx_after after"
grep -q libemberprof "/proc/$TPID/maps" && ok "the library stays loaded (said: $(grep -o 'the library stays loaded' err))"

check_wall_threads out target.out

# again: the library is loaded already, its agent stopped: a second
# attach starts it again
"$EMBERPROF" attach -q --wall --duration 300ms -o again "$TPID" >again.err 2>&1
check_exit "a second attach --wall" 0 $?
check_grep "a second attach --wall" again.err "agent started"
ls again/*.wall.pb.gz >/dev/null 2>&1 && ok "the second attach wrote a wall profile" ||
	{ fail "the second attach wrote no wall profile"; cat again.err >&2; }
same_holdings "the second detach" before

echo release >&3
wait_grep state done || fail "the program did not finish its calls"
check_grep "no call returned EINTR" state "done ok"
stop_target

# a process whose one thread waits in epoll_wait, which returns EINTR at
# every stop (the kernel never restarts it): borrowed there, for the
# loader call and again to unmap the page, its call is restarted both
# times and the program never sees EINTR
start_target epoll
"$EMBERPROF" attach -q --wall --duration 300ms -o epoll "$TPID" >epoll.err 2>&1
check_exit "attach --wall to a thread in epoll_wait" 0 $?
echo release >&3
wait_grep state done || fail "the epoll program did not finish"
check_grep "epoll_wait did not return EINTR (attach and unmap)" state "done ok"
stop_target
done_tests
