# SPDX-License-Identifier: Apache-2.0
# test_attach_wall.sh - `emberprof attach --wall PID`: the library loaded
# into a running process whose threads wait in read, nanosleep,
# epoll_wait and a condition variable. Every thread's wall-clock time is
# the same (each sampled at every tick), and the profiles hold exactly the
# samples the agent says it took (its own count, never a clock); detach
# leaves the threads, caught signals (SigCgt) and descriptors as they
# were; the waiting calls then complete normally, none returns EINTR (the
# program fails if one does); the program exits 0. Skipped (77) where
# ptrace or perf events are refused.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
need python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
ptrace_probe

start_target blocked
holdings "$TPID" >before
awk '$6 != "" { print $6 }' "/proc/$TPID/maps" | sort -u >maps.before
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
holdings "$TPID" >after
if cmp -s before after; then
	ok "detach left threads, SigCgt and descriptors as they were"
else
	fail "detach left something behind:"
	diff before after >&2
fi
awk '$6 != "" { print $6 }' "/proc/$TPID/maps" | sort -u >maps.after
new=$(comm -13 maps.before maps.after | grep -v '\.so[.0-9]*$')
[ -z "$new" ] && ok "memory: only shared libraries newly mapped (the library and what it loads)" ||
	fail "detach left mappings other than libraries: $new"
wx_after=$(grep -c ' rwxp ' "/proc/$TPID/maps")
[ "$wx_after" = "$wx_before" ] && ok "the loader calls' page is unmapped ($wx_after writable+executable mappings, as before)" ||
	fail "writable+executable mappings: $wx_before before, $wx_after after"
grep -q libemberprof "/proc/$TPID/maps" && ok "the library stays loaded (said: $(grep -o 'the library stays loaded' err))"

# The agent's own count: "wall clock: N samples" (its log, in the
# target's stderr); each sample weighs the 50 ms interval.
samples=$(sed -n 's/.*wall clock: \([0-9]*\) samples.*/\1/p' target.out | tail -1)
files=$(ls out/*.pb.gz 2>/dev/null)
python3 "$FNCPU" wall $files >wall.txt || fail "the wall profile cannot be read"
python3 "$FNCPU" samples $files >count.txt || fail "the wall profile cannot be read"
walls="" counts=""
for f in blk_read blk_sleep blk_epoll blk_cond main; do
	v=$(awk -v f="$f" '$1 == f { s = $2 } END { print s + 0 }' wall.txt)
	c=$(awk -v f="$f" '$1 == f { s = $2 } END { print s + 0 }' count.txt)
	walls="$walls $v"
	counts="$counts $c"
	echo "  $f: $v s of wall-clock time in $c samples"
done
python3 - "$samples" "$walls" "$counts" <<'PY' && ok "each waiting thread sampled at every tick ($counts of the agent's $samples samples), with the same wall time ($walls s)" || fail "wall times $walls s, samples $counts, the agent's samples $samples"
import os
import sys
n = int(sys.argv[1] or 0)
w = list(map(float, sys.argv[2].split()))
c = list(map(float, sys.argv[3].split()))
mean = sum(w) / len(w)
# The sanitizer build's agent is several times slower: on a loaded
# machine its ticks slip, and its last log line can miss the final
# window's samples (105 in the profile, 100 said, seen once); there the
# threads' shares are checked within 10 % and the log's count within 10 %.
sanitized = os.environ.get("EMBER_TEST_SANITIZE", "OFF").upper() in ("ON", "1", "TRUE")
tol = 0.10 if sanitized else 0.02
ok = n > 0 and min(w) > 0 and all(abs(x - mean) <= tol * mean for x in w)
ok = ok and (abs(sum(c) - n) <= tol * n if sanitized else sum(c) == n)
ok = ok and all(abs(x - sum(c) / len(c)) <= tol * sum(c) / len(c) for x in c)
sys.exit(0 if ok else 1)
PY

# again: the library is loaded already, its agent stopped: a second
# attach starts it again
"$EMBERPROF" attach -q --wall --duration 300ms -o again "$TPID" >again.err 2>&1
check_exit "a second attach --wall" 0 $?
check_grep "a second attach --wall" again.err "agent started"
ls again/*.wall.pb.gz >/dev/null 2>&1 && ok "the second attach wrote a wall profile" ||
	{ fail "the second attach wrote no wall profile"; cat again.err >&2; }
holdings "$TPID" >after2
cmp -s before after2 && ok "the second detach left threads, SigCgt and descriptors as they were" ||
	{ fail "the second detach left something behind:"; diff before after2 >&2; }

echo release >&3
wait_grep state done || fail "the program did not finish its calls"
check_grep "no call returned EINTR" state "done ok"
stop_target
done_tests
