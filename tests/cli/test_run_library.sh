# SPDX-License-Identifier: Apache-2.0
# test_run_library.sh - which library `emberprof run` preloads: the one
# without malloc & co (libemberprof_noalloc.so) unless allocation
# profiling may need emberprof's own malloc; and, where a process holds
# both copies (a program linking libemberprof.so run under the CLI), only
# one agent starts.
. "$(dirname "$0")/lib.sh"

bindir=$(dirname "$EMBER_TEST_LIB")
noalloc=$bindir/libemberprof_noalloc.so
[ -e "$noalloc" ] || { fail "no $noalloc"; done_tests; }

# The emberprof libraries mapped into the profiled shell, one per line.
mapped() {
	name=$1
	shift
	"$EMBERPROF" run -o "$T/prof-$name" "$@" -- sh -c \
		'grep -o "libemberprof[a-z_]*\.so" /proc/$$/maps | sort -u' >"$name.out" 2>"$name.err"
}

# check_lib WHAT NAME: WHAT.out lists exactly NAME
check_lib() {
	if [ "$(cat "$1.out")" = "$2" ]; then
		ok "$1: $2 preloaded"
	else
		fail "$1: expected only $2, mapped: $(tr '\n' ' ' <"$1.out")"
		sed 's/^/    /' "$1.err" >&2
	fi
}

mapped cpu
check_lib cpu libemberprof_noalloc.so
mapped wall --wall 10ms
check_lib wall libemberprof_noalloc.so
mapped alloc --alloc
check_lib alloc libemberprof.so
# jemalloc's own profiler needs no malloc hook; the automatic choice may.
EMBERPROF_ALLOC_BACKEND=jemalloc mapped jemalloc --alloc
check_lib jemalloc libemberprof_noalloc.so
EMBERPROF_ALLOC=1 mapped alloc_env
check_lib alloc_env libemberprof.so
# EMBERPROF_LIB is taken as given.
EMBERPROF_LIB=$EMBER_TEST_LIB mapped forced
check_lib forced libemberprof.so

# Both copies in one process: one agent, started by the first copy.
both=${LD_PRELOAD:+$LD_PRELOAD:}$noalloc:$EMBER_TEST_LIB
EMBERPROF_OUTPUT_DIR=$T/both LD_PRELOAD=$both sh -c \
	'cat /proc/$$/task/*/comm; grep -o "libemberprof[a-z_]*\.so" /proc/$$/maps | sort -u' \
	>both.out 2>both.err
rc=$?
check_exit "both copies" 0 $rc
n=$(grep -c '^emberprof$' both.out)
if [ "$n" -eq 1 ]; then ok "both copies: one agent thread"; else fail "both copies: $n agent threads"; cat both.out both.err >&2; fi
# The second copy stays quiet: it does not try to start (its ember_*
# calls would reach the first copy, which refuses a second agent).
if [ -s both.err ]; then fail "both copies: stderr not empty:"; cat both.err >&2; else ok "both copies: silent"; fi
check_grep "both copies" both.out libemberprof_noalloc.so
check_grep "both copies" both.out libemberprof.so
# ... which profiles.
EMBERPROF_OUTPUT_DIR=$T/both LD_PRELOAD=$both "$EMBER_DEMO" --threads 1 --seconds 1 >demo.out 2>demo.err
rc=$?
check_exit "both copies, demo" 0 $rc
n=$(ls both 2>/dev/null | grep -c '\.pb\.gz$')
if [ "$n" -ge 1 ]; then ok "both copies: $n profile(s)"; else fail "both copies: no profile in both/"; cat demo.err >&2; fi

done_tests
