# SPDX-License-Identifier: Apache-2.0
# test_soak.sh - the soak: tests/realprog/soak.c at 1 kHz with
# the wall clock every 5 ms, for EMBER_SOAK_SECONDS (120 in CI), under a
# bounded watchdog (timeout). 0 crashes, 0 hangs, exit 0, the program's own
# counts right (it checks them itself), every profile valid. Runs in the
# ASan build too.
. "$(dirname "$0")/../cli/lib.sh"
: "${EMBER_SOAK:?EMBER_SOAK must name tests/realprog/soak}"
: "${EMBER_SOAK_MODULE:?EMBER_SOAK_MODULE must name the dlfunc fixture module}"
secs=${EMBER_SOAK_SECONDS:-120}
limit=$((secs * 2 + 120))

timeout -k 10 "$limit" "$EMBERPROF" run -q --rate 1000 --wall=5ms -i 10s -o prof -- \
	"$EMBER_SOAK" "$secs" "$EMBER_SOAK_MODULE" >out 2>err
rc=$?
cat out
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	fail "soak: still running after ${limit}s: a hang (exit $rc)"
else
	check_exit "soak for ${secs}s" 0 "$rc"
fi
check_grep "soak: its own checks passed" out "soak ok"
grep -v '^emberprof: [0-9]* profiles\{0,1\} written to ' err >err.rest
# The thread that calls raise() 2000 times a second is, now and then, seen
# with the signal really blocked on two scans in a row (glibc's raise
# blocks every signal around its tgkill). It was reported as blocking the
# signal until the scan learned to look at its samples (threads.c,
# check_blocked): any such line is a failure now.
# KNOWN LIMIT of the sanitizer build: libasan comes first in LD_PRELOAD, so
# the program's sigaction(SIGPROF) is not virtualized (src/preload/
# signal_wrap.c is never reached) and a child it forks, which has its own
# SIGPROF handler by then, cannot start an agent. The normal build checks it.
# Nor does this libasan handle fork (it has no fork interceptor): a child
# forked while another thread held the ASan allocator's lock inherits it
# held, and its agent's start waits on it for good; the child says so when
# it leaves (fork_child.c), instead of losing its profile silently.
asan_fork='cannot start the profiler: signal 27 (Profiling timer expired) already has a handler'
asan_lock='its agent did not finish starting within 10 s'
if [ -n "${EMBER_TEST_SANITIZE:-}" ] && [ "$EMBER_TEST_SANITIZE" != OFF ]; then
	echo "KNOWN LIMIT (ASan): $(grep -cF "$asan_fork" err.rest) fork children could not start an agent, $(grep -cF "$asan_lock" err.rest) waited on a lock held at the fork"
	grep -vF -e "$asan_fork" -e "$asan_lock" err.rest >err.rest2
	mv err.rest2 err.rest
fi
if grep -q . err.rest; then
	fail "soak: more than the 'profiles written' line on stderr:"
	head -30 err.rest | sed 's/^/    /' >&2
else
	ok "soak: nothing else on stderr"
fi

n=0
for f in prof/*.pb.gz; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	if command -v go >/dev/null 2>&1; then
		go tool pprof -raw "$f" >raw 2>perr || { fail "soak: go tool pprof cannot read $f:"; cat perr >&2; }
		cat raw >>all.raw
	fi
done
if [ "$n" -gt 0 ]; then ok "soak: $n profiles written"; else fail "soak: no profile written"; fi
if command -v go >/dev/null 2>&1; then
	check_grep "soak: the workers' function sampled" all.raw soak_burn
	check_grep "soak: the module's function sampled" all.raw ember_fixture_dl_func
fi
done_tests
