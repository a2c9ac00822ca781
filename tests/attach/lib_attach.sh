# SPDX-License-Identifier: Apache-2.0
# lib_attach.sh - helpers of the `emberprof attach` tests (sourced after
# tests/cli/lib.sh): a target started on a FIFO the test holds open (fd 3),
# so that it runs until the test closes it.
: "${EMBER_ATTACH_WORK:?EMBER_ATTACH_WORK must name the attach_work program}"
FNCPU="$(dirname "$0")/fn_cpu.py"
unset EMBERPROF_ENGINE # attach samples from outside whatever lib.sh chose for run

# start_target MODE: starts attach_work MODE, its stdin the FIFO ctl
# (held open on fd 3); sets TPID once it is ready.
start_target() {
	rm -f ctl state
	mkfifo ctl || exit 1
	"$EMBER_ATTACH_WORK" "$1" state <ctl >target.out 2>&1 &
	TPID=$!
	exec 3>ctl
	wait_for state || { fail "the target did not start"; exit 1; }
}

# stop_target: closes its stdin; it exits 0 unless something went wrong
stop_target() {
	exec 3>&-
	wait "$TPID"
	check_exit "the target after detach" 0 $?
}

# state_of PID: its /proc/PID/stat state letter (empty when gone)
state_of() {
	sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null
}

# fn_seconds FUNCTION FILE...: the CPU seconds of the stacks through FUNCTION
fn_seconds() {
	f=$1
	shift
	python3 "$FNCPU" cpu "$@" | awk -v f="$f" '$1 == f { s = $2 } END { print s + 0 }'
}

# skip (77) where the kernel refuses perf events for attach here
attach_probe() {
	sleep 60 &
	"$EMBERPROF" attach -q --duration 100ms -o probe.out "$!" >/dev/null 2>probe.err
	rc=$?
	kill $! 2>/dev/null
	wait $! 2>/dev/null
	if [ $rc -ne 0 ]; then
		echo "attach cannot sample here: $(cat probe.err)"
		exit 77
	fi
	rm -rf probe.out probe.err
}

# wait_grep FILE TEXT: waits (up to ~30 s) for TEXT in FILE
wait_grep() {
	i=0
	while ! grep -qF -- "$2" "$1" 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -qF -- "$2" "$1" 2>/dev/null
}

# what the process holds that detach must give back: its threads, the
# signals it catches, its descriptors (targets)
holdings() {
	ls "/proc/$1/task" | sort | tr '\n' ' '
	echo
	grep SigCgt "/proc/$1/status"
	for f in /proc/"$1"/fd/*; do printf '%s -> %s\n' "${f##*/}" "$(readlink "$f")"; done
}

# skip (77) where ptrace is refused here
ptrace_probe() {
	if [ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" -ge 3 ]; then
		echo "Yama's ptrace_scope is 3: no ptrace at all here"
		exit 77
	fi
}

# check_wall_threads DIR LOG [any]: the wall profiles in DIR (*.wall.pb.gz,
# read by go tool pprof, which refuses to merge them with a CPU profile:
# one is written beside them when the target's own CPU while it loads the
# library was sampled, as on a slow machine) hold exactly the samples the agent counted ("wall clock: N
# samples" in its log LOG, the target's stderr), spread evenly over the
# blocked mode's threads (blk_read blk_sleep blk_epoll blk_cond main),
# each with the same wall-clock time (each sample weighs the interval).
# With "any": the total is shown, not compared (see test_attach_mntns).
check_wall_threads() {
	exact=1
	[ "${3:-}" = any ] && exact=0
	samples=$(sed -n 's/.*wall clock: \([0-9]*\) samples.*/\1/p' "$2" | tail -1)
	files=$(ls "$1"/*.wall.pb.gz 2>/dev/null)
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
	python3 - "$samples" "$walls" "$counts" "$exact" <<'PY' && ok "each waiting thread sampled at every tick ($counts of the agent's $samples samples), with the same wall time ($walls s)" || fail "wall times $walls s, samples $counts, the agent's samples $samples"
import os
import sys
n = int(sys.argv[1] or 0)
w = list(map(float, sys.argv[2].split()))
c = list(map(float, sys.argv[3].split()))
exact = sys.argv[4] == "1"
# The agent's log line can miss one tick (one sample of each thread) when
# the attach straddles a window's end (docs/design/limits.md).
counted = sum(c) in (n, n + len(c))
total = sum(c)
# The sanitizer build's agent is several times slower: on a loaded
# machine its ticks slip (1.089 s against 1.051 s seen): 10 % there.
sanitized = os.environ.get("EMBER_TEST_SANITIZE", "OFF").upper() in ("ON", "1", "TRUE")
tol = 0.10 if sanitized else 0.02
mean = sum(w) / len(w)
ok = n > 0 and min(w) > 0 and all(abs(x - mean) <= tol * mean for x in w)
ok = ok and (counted or not exact) and all(abs(x - total / len(c)) <= tol * total / len(c) for x in c)
sys.exit(0 if ok else 1)
PY
}

# The sanitizer build skips the tests that load an in-memory copy of the
# library (test_attach_mntns): not run there yet.
skip_sanitized_wall() {
	case "${EMBER_TEST_SANITIZE:-OFF}" in
	ON | on | 1 | TRUE | true)
		echo "skipped in the sanitizer build: the in-memory copy of the sanitized library has not been run there yet"
		exit 77
		;;
	esac
}

# same_holdings WHAT BEFORE: the target's holdings now are those in file
# BEFORE (its threads, caught signals, descriptors), else the difference
same_holdings() {
	holdings "$TPID" >holdings.now
	if cmp -s "$2" holdings.now; then
		ok "$1 left threads, SigCgt and descriptors as they were"
	else
		fail "$1 left something behind:"
		diff "$2" holdings.now >&2
	fi
}

# mapped_files: the files the target maps, one a line, sorted
mapped_files() {
	awk '$6 != "" { print $6 }' "/proc/$TPID/maps" | sort -u
}
