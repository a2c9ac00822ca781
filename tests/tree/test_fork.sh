# test_fork.sh - a fork child that never execs, with exit() or _exit(), and
# a double-fork daemon: each is profiled by `emberprof run` with no flag,
# under its own pid, with its CPU (its own getrusage(RUSAGE_THREAD)) within
# 10 %. A child whose program uses SIGPROF itself (inherited handler, its
# own ITIMER_PROF) keeps its ticks and handler while it is profiled. With
# --no-follow-children the child is left alone.
. "$(dirname "$0")/lib.sh"
: "${EMBER_TREE_WORK:?EMBER_TREE_WORK must name tree_work}"

modes="fork-exit fork-_exit daemon fork-sigprof"
# the program's own SIGPROF needs our sigaction wrapper first in line
sanitized && modes="fork-exit fork-_exit daemon"
for mode in $modes; do
	"$EMBERPROF" run -q -o "$T/p-$mode" -- "$EMBER_TREE_WORK" "$mode" 1.0 "$T/$mode.cpu" >"$T/$mode.out" 2>"$T/$mode.err"
	check_exit "$mode" 0 $?
	wait_for "$T/$mode.cpu" || { fail "$mode: the child never reported its CPU"; continue; }
	read -r pid cpu <"$T/$mode.cpu"
	# the daemon outlives `emberprof run`: its profile comes when it ends
	wait_gone "$pid" || fail "$mode: process $pid did not end"
	# (a file name check: reading the profiles each time took minutes
	# under ASan when one never came)
	i=0
	while ! ls "$T/p-$mode" 2>/dev/null | grep -q -- "-$pid-" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	ls "$T/p-$mode" 2>/dev/null | grep -q -- "-$pid-" || { fail "$mode: no profile file of child $pid after 30 s:"; ls "$T/p-$mode" >&2; sed 's/^/    /' "$T/$mode.err" >&2; }
	check_cover "$mode: child $pid" "$(profiled_cpu "$T/p-$mode" "$pid")" "$cpu" 0.9 1.1
	check_no_grep "$mode: nothing from the agent on stderr" "$T/$mode.err" "emberprof: warning"
done

"$EMBERPROF" run -q --no-follow-children -o "$T/p-nf" -- "$EMBER_TREE_WORK" fork-exit 0.3 "$T/nf.cpu" >"$T/nf.out" 2>"$T/nf.err"
check_exit "--no-follow-children" 0 $?
read -r pid cpu <"$T/nf.cpu"
c=$(profiled_cpu "$T/p-nf" "$pid")
if [ "$c" = 0 ]; then ok "--no-follow-children: child $pid not profiled"; else fail "--no-follow-children: child $pid has $c s in the profiles"; fi
if ls "$T/p-nf" | grep -q -- "-$pid-"; then fail "--no-follow-children: files of child $pid"; else ok "--no-follow-children: no files of child $pid"; fi

# -f is still accepted (the default now)
"$EMBERPROF" run -q -f -o "$T/p-f" -- "$EMBER_TREE_WORK" fork-exit 0.3 "$T/f.cpu" >/dev/null 2>&1
check_exit "-f" 0 $?
read -r pid cpu <"$T/f.cpu"
check_cover "-f: child $pid" "$(profiled_cpu "$T/p-f" "$pid")" "$cpu" 0.8 1.2
done_tests
