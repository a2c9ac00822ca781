# SPDX-License-Identifier: Apache-2.0
# test_run_jfr.sh - `emberprof run --format`: jfr writes one JFR recording
# per window and no pprof file, and prints the top table from it (as
# `emberprof top` does for a recording); the JDK's `jfr` tool reads it (through
# tests/tools/jfr_check.py: CPU events whose stacks hold the demo's
# functions, each frame Native or C++); both writes both; a bad value is
# refused naming the option, as is a bad EMBERPROF_OUTPUT_FORMAT.
. "$(dirname "$0")/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"
: "${EMBER_TEST_SRCDIR:?}"

# One window (unless the run crosses an hour boundary).
"$EMBERPROF" run --rate 250 --interval 60m --format jfr -o prof -- "$EMBER_DEMO" --threads 2 --seconds 0.5 >out 2>err
rc=$?
check_exit "jfr only" 0 $rc
check_grep "summary names the recordings" err "JFR recording"
check_no_grep "no empty-directory complaint" err "no profiles were written"
n=$(ls prof | grep -c '\.jfr$')
p=$(ls prof | grep -c '\.pb\.gz$')
if [ "$n" -ge 1 ] && [ "$p" -eq 0 ]; then ok "$n .jfr, no .pb.gz"; else fail "expected .jfr only:"; ls -la prof >&2; fi
cat >expect.json <<'X'
{"frame_types": ["Native", "C++"], "methods": {"jdk.ExecutionSample": ["hot_a", "hot_b", "worker_main"]}}
X
# The summary's table comes from the recording: the demo's 3:1 split.
check_grep "table from the JFR recording" err "Total cpu"
check_grep "table from the JFR recording" err "hot_a"
check_grep "table from the JFR recording" err "hot_b"
f=$(ls -S prof/*.jfr | head -1)
# `emberprof top` reads JFR too, by content (not by name).
cp "$f" recording.bin
"$EMBERPROF" top -n 5 recording.bin >top.out 2>&1
check_exit "top on a JFR recording" 0 $?
check_grep "top on a JFR recording" top.out "hot_a"
"$EMBERPROF" top --sample-index wall recording.bin >top.out 2>&1
check_exit "top --sample-index wall on a recording without wall samples" 1 $?
check_grep "top names the missing type" top.out "wall"
if python3 "$EMBER_TEST_SRCDIR/tests/tools/jfr_check.py" "$f" expect.json >check.out 2>&1; then
	ok "the JDK's jfr tool reads $f"
else
	fail "jfr_check on $f:"
	sed 's/^/    /' check.out >&2
fi

"$EMBERPROF" run --format both -o both -q -- "$EMBER_DEMO" --threads 1 --seconds 0.2 >out 2>err
check_exit "both" 0 $?
if ls both | grep -q '\.jfr$' && ls both | grep -q '\.pb\.gz$'; then ok "both formats"; else fail "both: not both formats:"; ls -la both >&2; fi

rm -f marker
"$EMBERPROF" run --format xml -- sh -c 'touch marker' >out 2>err
check_exit "bad --format" 2 $?
check_grep "bad --format named" err "--format"
check_absent "bad --format: program not started" marker
EMBERPROF_OUTPUT_FORMAT=protobuf "$EMBERPROF" run -- sh -c 'touch marker' >out 2>err
check_exit "bad EMBERPROF_OUTPUT_FORMAT" 2 $?
check_grep "bad variable named" err "EMBERPROF_OUTPUT_FORMAT"
done_tests
