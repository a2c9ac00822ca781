# SPDX-License-Identifier: Apache-2.0
# test_fork.sh - a fork child that never execs, with exit() or _exit(), and
# a double-fork daemon: each is profiled by `emberprof run` with no flag,
# under its own pid, with its CPU (its own getrusage(RUSAGE_THREAD)) within
# 10 %, the CPU it ran before its agent started on a [before sampling]
# stack of its own. A child whose program uses SIGPROF itself (inherited handler, its
# own ITIMER_PROF) keeps its ticks and handler while it is profiled. With
# --no-follow-children the child is left alone.
. "$(dirname "$0")/lib.sh"
: "${EMBER_TREE_WORK:?EMBER_TREE_WORK must name tree_work}"

modes="fork-exit fork-_exit daemon fork-sigprof"
# the program's own SIGPROF needs our sigaction wrapper first in line
sanitized && modes="fork-exit fork-_exit daemon"
# One run of MODE into $T/p-MODE; sets pid, cpu and share (profiled CPU
# over the child's own), or returns 1 after saying why.
run_mode() {
	rm -rf "$T/p-$1" "$T/$1.cpu"
	"$EMBERPROF" run -q -o "$T/p-$1" -- "$EMBER_TREE_WORK" "$1" 1.0 "$T/$1.cpu" >"$T/$1.out" 2>"$T/$1.err"
	check_exit "$1" 0 $?
	wait_for "$T/$1.cpu" || { fail "$1: the child never reported its CPU"; return 1; }
	read -r pid cpu <"$T/$1.cpu"
	# the daemon outlives `emberprof run`: its profile comes when it ends
	wait_gone "$pid" || fail "$1: process $pid did not end"
	# (a file name check: reading the profiles each time took minutes
	# under ASan when one never came)
	i=0
	while ! ls "$T/p-$1" 2>/dev/null | grep -q -- "-$pid-" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	ls "$T/p-$1" 2>/dev/null | grep -q -- "-$pid-" || { fail "$1: no profile file of child $pid after 30 s:"; ls "$T/p-$1" >&2; sed 's/^/    /' "$T/$1.err" >&2; }
	profiled=$(profiled_cpu "$T/p-$1" "$pid")
}

# The share is load-sensitive. The kernel checks a thread's CPU timers at
# the ticks it is running on: with many more runnable threads than cores
# those checks are rare (10 busy loops on 2 cores: the unprofiled program
# of fork-sigprof got 5-8 of its 100 ITIMER_PROF ticks per CPU second).
# A POSIX timer keeps the expirations it missed as overruns, which weigh
# the next sample, but the CPU after the last check before exit is in no
# sample (there, 50-99 % in every mode). One CI run saw 81 % in
# fork-sigprof next to the fault tests. A share out of range is therefore
# run once more, the first result printed; the second must be in range.
for mode in $modes; do
	run_mode "$mode" || continue
	if ! sanitized && ! python3 -c "import sys; p, t = map(float, sys.argv[1:]); sys.exit(0 if t > 0 and 0.9 <= p / t <= 1.1 else 1)" "$profiled" "$cpu"; then
		echo "note $mode: child $pid: $profiled s of $cpu s in the profiles; out of [0.9, 1.1] once (load?), run again"
		run_mode "$mode" || continue
	fi
	check_cover "$mode: child $pid" "$profiled" "$cpu" 0.9 1.1 "$T/$mode.err"
	check_no_grep "$mode: nothing from the agent on stderr" "$T/$mode.err" "emberprof: warning"
done

"$EMBERPROF" run -q --no-follow-children -o "$T/p-nf" -- "$EMBER_TREE_WORK" fork-exit 0.3 "$T/nf.cpu" >"$T/nf.out" 2>"$T/nf.err"
check_exit "--no-follow-children" 0 $?
read -r pid cpu <"$T/nf.cpu"
c=$(profiled_cpu "$T/p-nf" "$pid")
if [ "$c" = 0 ]; then ok "--no-follow-children: child $pid not profiled"; else fail "--no-follow-children: child $pid has $c s in the profiles"; fi
if ls "$T/p-nf" | grep -q -- "-$pid-"; then fail "--no-follow-children: files of child $pid"; else ok "--no-follow-children: no files of child $pid"; fi

# -f is still accepted (the default now)
# (its summary kept for a failure: records lost, CPU in no sample)
"$EMBERPROF" run -f -o "$T/p-f" -- "$EMBER_TREE_WORK" fork-exit 0.3 "$T/f.cpu" >/dev/null 2>"$T/f.err"
check_exit "-f" 0 $?
read -r pid cpu <"$T/f.cpu"
check_cover "-f: child $pid" "$(profiled_cpu "$T/p-f" "$pid")" "$cpu" 0.8 1.2 "$T/f.err"

# What a fork child runs before its agent has armed its thread (the helper
# waits for 2 ms of its CPU, then starts the agent while it runs on: more
# on a loaded machine) is in no sample: its agent measures it, says so at
# info level, and reports it on a stack of its own, "[before sampling]"
# called from the program's name, in the child's profile.
if [ "${EMBERPROF_ENGINE:-}" = tree ]; then
	echo "skip [before sampling]: the tree engine samples every process from its first instruction"
elif sanitized; then
	echo "skip [before sampling]: in the sanitizer build libasan's fork path comes first"
else
	"$EMBERPROF" run -q --log-level info -o "$T/p-early" -- "$EMBER_TREE_WORK" fork-exit 0.3 "$T/early.cpu" >/dev/null 2>"$T/early.err"
	check_exit "early" 0 $?
	read -r pid cpu <"$T/early.cpu"
	logged=$(sed -n 's/.*CPU before sampling began: \([0-9.]*\) ms.*/\1/p' "$T/early.err" | head -1)
	early=$(python3 "$TREE_DIR/cpu_by_pid.py" "$T/p-early" "[before sampling]" | awk -v p="$pid" '$1 == p { c = $2 } END { print c + 0 }')
	if python3 -c "import sys; l, e = float(sys.argv[1] or 0), float(sys.argv[2]) * 1e3; sys.exit(0 if l >= 1.5 and abs(l - e) <= 0.051 else 1)" "$logged" "$early"; then
		ok "child $pid: ${logged} ms of CPU before sampling began, logged and in its profile as [before sampling]"
	else
		fail "child $pid: CPU before sampling began: logged '${logged}' ms (>= 1.5 expected), [before sampling] holds $early s in its profile; the run's stderr:"
		sed 's/^/    /' "$T/early.err" >&2
	fi
	check_cover "early: child $pid" "$(profiled_cpu "$T/p-early" "$pid")" "$cpu" 0.8 1.2 "$T/early.err"
fi
done_tests
