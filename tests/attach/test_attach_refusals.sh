# SPDX-License-Identifier: Apache-2.0
# test_attach_refusals.sh - what `emberprof attach` refuses, each with one
# line on stderr and exit status 1, the process untouched (still waiting,
# SigCgt and threads as they were, exiting 0 later): no such process,
# another user's process, a process already profiled by an emberprof
# agent, perf events refused (by a seccomp filter, standing in for
# perf_event_paranoid), --wall on a statically linked program (whose CPU
# profile, without --wall, is made) and --alloc there; --alloc on a
# machine other than x86-64 (one line, exit 2). Not tested here: Yama's refusal (a sysctl this shared machine
# keeps; its message names the setting).
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
attach_probe

# refused WHAT EXPECTED_EXIT TEXT CMD...: one line, the exit status, TEXT in it
refused() {
	what=$1 want=$2 text=$3
	shift 3
	"$@" >out.txt 2>err.txt
	check_exit "$what" "$want" $?
	n=$(wc -l <err.txt)
	[ "$n" -eq 1 ] && ok "$what: one line" || { fail "$what: $n lines:"; cat err.txt >&2; }
	check_grep "$what" err.txt "$text"
}

# untouched PID BEFORE_FILE
untouched() {
	st=$(state_of "$1")
	holdings "$1" >now
	if [ "$st" = S ] && cmp -s "$2" now; then ok "process $1 untouched (state $st, same threads, SigCgt, fds)"
	else fail "process $1 touched: state '$st'"; diff "$2" now >&2; fi
}

# no such process: a pid that was reaped
sh -c 'exit 0' &
gone=$!
wait $gone
refused "no such process" 1 "process $gone: no such process" "$EMBERPROF" attach -o none "$gone"
"$EMBERPROF" attach -o none 12ab >out.txt 2>err.txt
check_exit "not a pid" 2 $?
check_grep "not a pid (and the usage)" err.txt "is not a process id"

start_target idle
holdings "$TPID" >before

# another user's process (as nobody, where this test runs as root)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
	refused "another user's process" 1 "belongs to another user" \
		setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$EMBERPROF" attach -o /tmp/none "$TPID"
	untouched "$TPID" before
else
	echo "skip: another user's process (needs root and setpriv)"
fi

# perf events refused (a seccomp filter makes perf_event_open fail with
# EACCES, as a perf_event_paranoid that forbids it does): the line names
# the setting
python3 "$(dirname "$0")/no_perf.py" true >/dev/null 2>&1
if [ $? -eq 0 ]; then
	refused "perf events refused" 1 "kernel.perf_event_paranoid is" \
		python3 "$(dirname "$0")/no_perf.py" "$EMBERPROF" attach -o none "$TPID"
	check_grep "perf events refused: the reason" err.txt "perf events refused"
	untouched "$TPID" before
else
	echo "skip: perf events refused (no seccomp filter here)"
fi

# the loader call fails in the process (a library without our entry
# point: dlsym fails there): one line with the loader's reason, and the
# process runs on as it was (its threads, SigCgt, descriptors; the
# library that was loaded stays mapped)
zlib=$(python3 -c 'import zlib, ctypes.util; print(ctypes.util.find_library("z") or "")')
zpath=$(ldconfig -p 2>/dev/null | awk -v n="$zlib" '$1 == n { print $NF; exit }')
if [ -n "$zpath" ] && [ -r "$zpath" ]; then
	refused "the loader call fails" 1 "undefined symbol: ember__attach_start" \
		env EMBERPROF_LIB="$(readlink -f "$zpath")" "$EMBERPROF" attach --wall -o failed "$TPID"
	untouched "$TPID" before
	grep -q ' rwxp ' "/proc/$TPID/maps" && fail "the loader calls' page is left mapped" ||
		ok "the loader calls' page is unmapped after the failure"
else
	echo "skip: the loader call fails (no libz found)"
fi

if [ "$(uname -m)" != x86_64 ]; then
	refused "--alloc" 2 "--alloc is implemented on x86-64 only" "$EMBERPROF" attach --alloc -o none "$TPID"
	untouched "$TPID" before
fi
stop_target

# a process profiled already: the library preloaded, its agent running
# (after the sanitizer build's libasan, which must come first: cli/lib.sh)
LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$EMBER_TEST_LIB" EMBERPROF_OUTPUT_DIR="$T/pre" sleep 60 &
pre=$!
i=0
while ! grep -qx emberprof /proc/"$pre"/task/*/comm 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
refused "already profiled" 1 "already profiled by an emberprof agent" "$EMBERPROF" attach -o none "$pre"
refused "already profiled, --wall" 1 "not starting a second" "$EMBERPROF" attach --wall -o none "$pre"
[ "$(uname -m)" = x86_64 ] &&
	refused "already profiled, --alloc" 1 "not starting a second" "$EMBERPROF" attach --alloc -o none "$pre"
kill $pre
wait $pre 2>/dev/null

# a statically linked program: --wall refused, CPU profiled
: "${EMBER_ATTACH_WORK_STATIC:?}"
EMBER_ATTACH_WORK=$EMBER_ATTACH_WORK_STATIC
start_target idle
holdings "$TPID" >before
refused "static, --wall" 1 "is statically linked" "$EMBERPROF" attach --wall -o none "$TPID"
untouched "$TPID" before
[ "$(uname -m)" = x86_64 ] &&
	refused "static, --alloc" 1 "is statically linked" "$EMBERPROF" attach --alloc -o none "$TPID"
untouched "$TPID" before
"$EMBERPROF" attach -q --duration 200ms -o static "$TPID" >/dev/null 2>static.err
check_exit "static, CPU" 0 $?
check_grep "static, CPU" static.err "attached to 1 process"
stop_target
check_absent "nothing written for the refusals" none
rm -rf failed
done_tests
