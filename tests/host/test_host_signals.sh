# SPDX-License-Identifier: Apache-2.0
# test_host_signals.sh - the program's own use of the sampling signal
# (SIGPROF), of signal masks and of exec is unchanged under `emberprof run`
#: each case runs without and with emberprof, in both CPU
# engines, and must end the same way.
# EMBER_HOST_QEMU=1 (tests/aarch64/host_signals.sh): EMBERPROF and
# EMBER_HOST_SIG are host scripts running the aarch64 builds under
# qemu-user; the cases qemu-user cannot host are left out, each with its
# reason.
. "$(dirname "$0")/../cli/lib.sh"
: "${EMBER_HOST_SIG:?EMBER_HOST_SIG must name tests/host/host_sig}"
H=$EMBER_HOST_SIG
qemu=${EMBER_HOST_QEMU:-0}

# total_cpu DIR : the CPU seconds in DIR's profiles (emberprof top), or "".
total_cpu() {
	"$EMBERPROF" top "$1"/*.pb.gz 2>/dev/null | sed -n 's/^Total cpu: \([0-9.]*\)s.*/\1/p'
}

# at_least WHAT VALUE MIN
at_least() {
	if [ -n "$2" ] && awk -v v="$2" -v m="$3" 'BEGIN { exit !(v >= m) }'; then
		ok "$1: $2 >= $3"
	else
		fail "$1: ${2:-nothing}, expected >= $3"
	fi
}

for engine in perf timer; do
	E="$EMBERPROF run -q --engine $engine"
	if ! $E -o probe -- /bin/true 2>probe.err; then
		if [ "$engine" = perf ]; then echo "perf events refused here; timer engine only"; continue; fi
	fi

	# GNU sort's cleanup handler for SIGPROF re-raises with SIG_DFL:
	# emberprof's samples must never reach it.
	rm -rf p1
	$E -o p1 -- "$H" own-handler 1 >out 2>err
	check_exit "$engine: program with its own SIGPROF handler" 0 $?
	at_least "$engine: its CPU is still profiled" "$(total_cpu p1)" 0.6

	# A program's own ITIMER_PROF profiler counts only its own ticks: at
	# most one per 10 ms of its CPU time (a loaded machine loses some;
	# with our samples delivered to its handler it counted twice as many).
	rm -rf p2
	$E -o p2 -- "$H" own-itimer 1.5 >prof.out 2>err
	check_exit "$engine: own ITIMER_PROF profiler" 0 $?
	prof=$(sed -n 's/^ticks=\([0-9]*\).*/\1/p' prof.out)
	cpu=$(sed -n 's/.*cpu=\([0-9.]*\).*/\1/p' prof.out)
	if [ -n "$prof" ] && [ -n "$cpu" ] &&
		awk -v t="$prof" -v c="$cpu" 'BEGIN { exit !(t >= 1 && t <= 1.15 * c * 100 + 3) }'; then
		ok "$engine: its tick count is its own ($prof for ${cpu}s of CPU)"
	else
		fail "$engine: its tick count is not its own: ${prof:-?} ticks for ${cpu:-?}s of CPU"
	fi
	at_least "$engine: emberprof still samples beside it" "$(total_cpu p2)" 0.9

	# Workers started with every signal blocked (liblzma) are profiled.
	rm -rf p3
	$E -o p3 -- "$H" block-all 1 >out 2>err
	check_exit "$engine: threads that block every signal" 0 $?
	at_least "$engine: their CPU is in the profile (of ~2 s)" "$(total_cpu p3)" 1.6

	# Without a handler, SIGPROF still kills the program (128 + 27), as
	# it does unprofiled; SIG_IGN still ignores it.
	"$H" raise-dfl >/dev/null 2>&1
	plain=$?
	$E -o p4 -- "$H" raise-dfl >out 2>err
	check_exit "$engine: raise(SIGPROF) with SIG_DFL ends it as unprofiled" $plain $?
	$E -o p5 -- "$H" raise-ign >out 2>err
	check_exit "$engine: raise(SIGPROF) with SIG_IGN" 0 $?

	# Its own raise(SIGPROF) and pthread_kill(self, SIGPROF) at 1 kHz of
	# sampling: each reaches its handler once, none merged into a sample.
	$E --rate 1000 -o p5b -- "$H" raise-count 1 >out 2>err
	check_exit "$engine: own raise/pthread_kill of SIGPROF all handled ($(cat out))" 0 $?

	# An SA_NODEFER handler that raises its signal again gets it at once,
	# nested (depth 2), each raise once: as unprofiled. The kernel runs
	# our handler with the signal blocked; the program's was called so,
	# and its raise came after it returned, and raised again, in a loop.
	$E -o p5c -- "$H" nodefer >out 2>err
	check_exit "$engine: SA_NODEFER handler nests its own signal ($(cat out))" 0 $?

	# Its own SIGPROF waits while it blocks it; it sees its own mask.
	$E -o p6 -- "$H" mask-defer >out 2>err
	check_exit "$engine: own signal deferred by its mask ($(cat out))" 0 $?
	# A dedicated thread in sigwait gets the process's own SIGPROF, sent
	# with kill() while every thread blocks it, and never ours.
	"$H" sigwait >out 2>&1
	plain=$?
	$E -o p9 -- "$H" sigwait >out 2>err
	check_exit "$engine: sigwait thread gets the program's own signals ($(cat out))" $plain $?
	$E -o p7 -- "$H" query >out 2>err
	check_exit "$engine: sees SIG_DFL, unblocked at start ($(cat out))" 0 $?

	# exec at 1 kHz, with the wall clock's signals too, in a chain of 30
	# images each profiled (-f): no sampling signal may reach a new image
	# before its agent installs the handler.
	if [ "$qemu" = 1 ]; then
		echo "SKIP $engine: exec chain: qemu-user cannot exec an aarch64 image without binfmt_misc"
		continue
	fi
	rm -rf p8
	$E -f --rate 1000 --wall=5ms -o p8 -- "$H" exec-chain 30 >out 2>err
	rc=$?
	check_exit "$engine: exec chain at 1 kHz" 0 $rc
	check_grep "$engine: exec chain ran to its end" out "chain done"
done

# KNOWN LIMIT: a program that reads the sampling signal from a signalfd.
# The kernel gives a signalfd only signals that are really blocked, and the
# sampling signal never is in the program's threads: the program's own
# SIGPROF waits in its virtual block and never reaches the descriptor.
# The agent says so once, naming the way out, which works: another
# sampling signal leaves SIGPROF to the program.
"$H" signalfd >out 2>&1
check_exit "unprofiled: signalfd gets its own SIGPROF ($(cat out))" 0 $?
"$EMBERPROF" run -q -o p10 -- "$H" signalfd >out 2>err
echo "KNOWN LIMIT: signalfd on the sampling signal: $(cat out) (exit $?)"
check_grep "signalfd: the limit is said" err "from a signalfd, and emberprof samples with it"
"$EMBERPROF" run -q --signal SIGRTMIN+4 -o p11 -- "$H" signalfd >out 2>err
check_exit "signalfd with another sampling signal ($(cat out))" 0 $?
check_no_grep "signalfd with another sampling signal: nothing said" err "from a signalfd"

# The same uses of the signal in an image the command executes (sh runs
# it; `exit` keeps a shell from executing it in its own place): its agent
# starts lazily, once it has used 2 ms of CPU, and the signal is claimed
# before its main (src/preload/fork_child.c), so what the program sees
# and gets before and after that start is what it gets unprofiled.
lazy() { # lazy DIR ARGS...: emberprof run -- sh -c 'host_sig ARGS...; exit'
	d=$1
	shift
	"$EMBERPROF" run -q -o "$d" -- sh -c '"$0" "$@"; exit $?' "$H" "$@"
}
if [ "$qemu" != 1 ]; then
	"$H" raise-dfl >/dev/null 2>&1
	plain=$?
	lazy l1 raise-dfl >out 2>err
	check_exit "image started lazily: raise(SIGPROF) with SIG_DFL ends it as unprofiled" $plain $?
	lazy l2 raise-ign >out 2>err
	check_exit "image started lazily: raise(SIGPROF) with SIG_IGN" 0 $?
	lazy l3 query >out 2>err
	check_exit "image started lazily: sees SIG_DFL, unblocked at start ($(cat out))" 0 $?
	lazy l4 raise-count 1 >out 2>err
	check_exit "image started lazily: own raise/pthread_kill of SIGPROF all handled ($(cat out))" 0 $?
	lazy l5 mask-defer >out 2>err
	check_exit "image started lazily: own signal deferred by its mask ($(cat out))" 0 $?
	lazy l6 block-all 1 >out 2>err
	check_exit "image started lazily: threads that block every signal" 0 $?
	at_least "image started lazily: their CPU is in the profile (of ~2 s)" "$(total_cpu l6)" 1.6
	lazy l7 own-handler 1 >out 2>err
	check_exit "image started lazily: program with its own SIGPROF handler" 0 $?
	at_least "image started lazily: its CPU is still profiled" "$(total_cpu l7)" 0.6
fi

if [ "$qemu" = 1 ]; then
	echo "SKIP raw-blocked thread: qemu-user emulates the guest's signal mask; the kernel's SigBlk is qemu's own"
	echo "SKIP sort -r, xz -T2: host programs, which the aarch64 library cannot be preloaded into"
	done_tests
fi

# A thread that blocks the signal behind libc's back (a raw system call)
# cannot be sampled: its CPU time is measured and the user is told, once
# 2 s of its CPU went uncovered by any signal (counted from the start).
"$EMBERPROF" run -q -o rb -- "$H" raw-block 4 >out 2>err
check_exit "raw-blocked thread" 0 $?
check_grep "raw-blocked thread: warned" err "blocks the sampling signal"
lost=$(sed -n "s/.*blocks the sampling signal: \([0-9.]*\) s of CPU not sampled.*/\1/p" err)
at_least "raw-blocked thread: unsampled CPU reported (of 4 s)" "$lost" 2.5

# A thread that blocks it the same way but for 30 ms of CPU at a time,
# unblocking in between, gets one signal per unblock standing for three
# periods (the timer's overruns): it is sampled, and no warning says it
# blocks the signal, even under heavy contention, where its signals come
# late and in lumps (CI's ASan stage once warned, judging scan by scan).
# Counting signals instead of their weight, the scan
# saw a third of its CPU covered and warned (the soak's false warning
# about the main thread, which pthread_create leaves with every signal
# blocked while it waits for the loader's lock).
"$EMBERPROF" run -q -o rf -- "$H" raw-flicker 2 >out 2>err
check_exit "thread blocking in stretches" 0 $?
if grep -q "blocks the sampling signal" err; then
	fail "thread blocking in stretches: reported as blocking the signal:"
	sed 's/^/    /' err >&2
else
	ok "thread blocking in stretches: not reported as blocking the signal"
fi
at_least "thread blocking in stretches: its CPU is in the profile (of 2 s)" "$(total_cpu rf)" 1.6

# The real programs the issue named. GNU sort installs its SIGPROF cleanup
# handler: it was killed by the first sample.
seq 1500000 >numbers
sort -r numbers | cksum >plain.sum
"$EMBERPROF" run -q -o s1 -- sort -r numbers 2>err | cksum >prof.sum
check_exit "sort -r" 0 $?
if cmp -s plain.sum prof.sum; then ok "sort -r: same output"; else fail "sort -r: output differs"; fi
if grep -v 'profiles\{0,1\} written to' err | grep -q .; then fail "sort -r: emberprof said more than where the profiles went:"; cat err >&2; else ok "sort -r: nothing else on stderr"; fi

# xz -T2 starts its workers with every signal blocked: their CPU must be
# in the profile (it was 1 % of it).
if command -v xz >/dev/null 2>&1; then
	head -c 6000000 /dev/urandom | od -An -tx1 >big
	xz -0 -T2 -c big | cksum >plain.sum
	"$EMBERPROF" run -q -f -o x1 -- sh -c 'xz -0 -T2 -c big; echo "cpu $(cut -d" " -f14-17 /proc/$$/stat)" >&2' 2>xz.err | cksum >prof.sum
	if cmp -s plain.sum prof.sum; then ok "xz -T2: same output"; else fail "xz -T2: output differs"; fi
	# the children's user+system ticks, as the shell saw them reaped
	ticks=$(sed -n 's/^cpu [0-9]* [0-9]* \([0-9]*\) \([0-9]*\).*/\1 \2/p' xz.err | awk '{ print $1 + $2 }')
	hz=$(getconf CLK_TCK)
	used=$(awk -v t="${ticks:-0}" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }')
	prof=$(total_cpu x1)
	if [ -n "$prof" ] && awk -v p="$prof" -v u="$used" 'BEGIN { exit !(u > 0.2 && p >= 0.8 * u) }'; then
		ok "xz -T2: ${prof}s of ${used}s CPU profiled"
	else
		fail "xz -T2: ${prof:-no}s of ${used}s CPU profiled"
	fi
else
	echo "xz not installed: xz -T2 case skipped"
fi

done_tests
