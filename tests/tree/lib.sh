# SPDX-License-Identifier: Apache-2.0
# lib.sh - helpers of the process-tree tests, sourced by test_*.sh
# after ../cli/lib.sh's (scratch directory, ok/fail, no EMBERPROF_*).
. "$(dirname "$0")/../cli/lib.sh"

command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }
TREE_DIR=$(cd "$(dirname "$0")" && pwd)


# not_in_asan WHY : the sanitizer build runs the big programs' tests only
# with EMBER_REALPROG_ASAN=1 (as tests/realprog does).
not_in_asan() {
	case "${EMBER_TEST_SANITIZE:-OFF}" in
	ON | on | 1 | TRUE | true)
		if [ "${EMBER_REALPROG_ASAN:-0}" != 1 ]; then
			echo "sanitizer build: $1 runs in the normal build (EMBER_REALPROG_ASAN=1 forces it)"
			exit 77
		fi
		;;
	esac
}

# profiled_cpu DIR PID : the CPU seconds the pprof files of DIR hold for PID
# (read by go tool pprof), 0 if none.
profiled_cpu() {
	python3 "$TREE_DIR/cpu_by_pid.py" "$1" | awk -v p="$2" '$1 == p { c = $2 } END { print c + 0 }'
}

# sanitized : 0 in a sanitizer build. There libasan comes first in
# LD_PRELOAD (so our libc wrappers are not the program's) and the
# instrumented agent starts several times slower: the children's CPU shares
# are checked in the normal build; here only that each has a profile.
sanitized() {
	case "${EMBER_TEST_SANITIZE:-OFF}" in
	ON | on | 1 | TRUE | true) return 0 ;;
	esac
	return 1
}

# check_cover WHAT PROFILED TRUE LOW HIGH [LOG] : PROFILED / TRUE in
# [LOW, HIGH] (in a sanitizer build: PROFILED > 0); on a failure the
# run's stderr LOG is printed (records lost, CPU in no sample).
check_cover() {
	if sanitized; then
		if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$2"; then
			ok "$1: $2 s of $3 s in the profiles (sanitizer build: the share is checked in the normal build)"
		else
			fail "$1: nothing of $3 s in the profiles"
		fi
		return
	fi
	if python3 -c "import sys; p, t, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if t > 0 and lo <= p / t <= hi else 1)" "$2" "$3" "$4" "$5"; then
		ok "$1: $2 s of $3 s in the profiles ($(python3 -c "import sys; print('%.1f' % (100 * float(sys.argv[1]) / float(sys.argv[2])))" "$2" "$3") %)"
	else
		fail "$1: $2 s of $3 s of CPU in the profiles, expected a share in [$4, $5]"
		[ -n "${6:-}" ] && [ -r "$6" ] && sed 's/^/    /' "$6" >&2
	fi
}

# wait_gone PID : waits (up to ~60 s) until process PID has ended.
wait_gone() {
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	! kill -0 "$1" 2>/dev/null
}
