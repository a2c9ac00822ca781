# SPDX-License-Identifier: Apache-2.0
# lib.sh - shared helpers for the CLI tests (sourced by each test_*.sh).
#
# CTest passes EMBERPROF (the emberprof executable), EMBER_TEST_LIB
# (libemberprof.so), EMBER_DEMO (the demo workload), EMBER_TEST_BINDIR,
# EMBER_TEST_SRCDIR and EMBER_TEST_SANITIZE.
# Each test gets a fresh scratch directory, removed on exit, and runs with
# no EMBERPROF_* variables inherited from the caller.

set -u

: "${EMBERPROF:?EMBERPROF must name the emberprof executable}"
T=$(mktemp -d "${TMPDIR:-/tmp}/ember-cli-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

for v in $(env | sed -n 's/^\(EMBERPROF_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
export EMBERPROF_UNWIND_CACHE=off # no unwind-table cache in the home directory (tests/table_cache/ctest_env.cmake)

# Which engine `emberprof run` uses. Without --engine it picks the tree
# engine where perf events count kernel time (as root, which CI is), else
# the preloaded library; the tests check the library unless told:
# EMBER_TEST_ENGINE=tree: the same checks of `emberprof run --engine tree`
# (the tree sampled from outside, tools/tree/), which needs perf events:
# where the kernel refuses them the test is skipped (77), saying why.
# EMBER_TEST_ENGINE=default: no --engine, as a user runs it.
case "${EMBER_TEST_ENGINE:-library}" in
tree)
	"$EMBERPROF" run -q --engine tree -o "$T/engine-probe" -- true >/dev/null 2>"$T/engine-probe.err" ||
		{ echo "--engine tree cannot run here: $(cat "$T/engine-probe.err")"; exit 77; }
	rm -rf "$T/engine-probe" "$T/engine-probe.err"
	export EMBERPROF_ENGINE=tree
	;;
default)
	# said, so that the log shows which engine the checks ran on
	"$EMBERPROF" run -q --log-level info -o "$T/engine-probe" -- true 2>&1 >/dev/null |
		grep "emberprof: engine:"
	rm -rf "$T/engine-probe"
	;;
*) export EMBERPROF_ENGINE=auto ;;
esac

# In a sanitizer build libemberprof.so needs the ASan runtime, which must be
# the first library loaded into the (uninstrumented) program.
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	asan=$(${CC:-cc} -print-file-name=libasan.so 2>/dev/null)
	if [ -n "$asan" ] && [ -e "$asan" ]; then
		LD_PRELOAD=$asan
		export LD_PRELOAD
		# Uninstrumented programs (sh, the demo) are not leak-checked.
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
		export ASAN_OPTIONS
	fi
	;;
esac

failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

ok() {
	echo "ok   $*"
}

# check_exit WHAT EXPECTED ACTUAL
check_exit() {
	if [ "$3" -eq "$2" ]; then
		ok "$1: exit $3"
	else
		fail "$1: exit $3, expected $2"
	fi
}

# check_grep WHAT FILE PATTERN (fixed string)
check_grep() {
	if grep -qF -- "$3" "$2"; then
		ok "$1: found '$3'"
	else
		fail "$1: '$3' not in $2:"
		sed 's/^/    /' "$2" >&2
	fi
}

# check_no_grep WHAT FILE PATTERN (fixed string)
check_no_grep() {
	if grep -qF -- "$3" "$2"; then
		fail "$1: unexpected '$3' in $2:"
		sed 's/^/    /' "$2" >&2
	else
		ok "$1: no '$3'"
	fi
}

# check_profiles WHAT DIR ERRFILE: at least one profile (.pb.gz) under
# DIR, else the run's stderr (ERRFILE) is shown
check_profiles() {
	n=$(find "$2" -name '*.pb.gz' 2>/dev/null | wc -l)
	if [ "$n" -ge 1 ]; then
		ok "$1: $n profile(s) written"
	else
		fail "$1: no profile written; stderr:"
		sed 's/^/    /' "$3" >&2
	fi
}

# check_absent WHAT PATH
check_absent() {
	if [ -e "$2" ]; then
		fail "$1: $2 exists"
	else
		ok "$1: $2 absent"
	fi
}

# wait_for FILE : waits (up to ~30 s) for FILE to be non-empty.
wait_for() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s "$1" ]
}

# need PROGRAM... : skip (77) when a program is missing.
need() {
	for p in "$@"; do
		if ! command -v "$p" >/dev/null 2>&1; then
			echo "$p not installed (scripts/setup-deps.sh installs it): skipped"
			exit 77
		fi
	done
}

done_tests() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed" >&2
		exit 1
	fi
	exit 0
}
