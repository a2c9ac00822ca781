# SPDX-License-Identifier: Apache-2.0
# test_bad_env.sh - a bad EMBERPROF_* variable inherited from the
# environment is reported naming it, exits with 2, and the program never
# starts.
. "$(dirname "$0")/lib.sh"

# try VAR VALUE : runs emberprof run -- sh -c 'touch marker' with VAR=VALUE
try() {
	rm -f marker
	env "$1=$2" "$EMBERPROF" run -- sh -c 'touch marker' >out 2>err
	rc=$?
	check_exit "$1=$2" 2 $rc
	check_grep "$1=$2" err "$1"
	check_absent "$1=$2: program not started" marker
}

try EMBERPROF_SAMPLE_RATE abc
try EMBERPROF_SAMPLE_RATE 0
try EMBERPROF_INTERVAL 1y
try EMBERPROF_MAX_DEPTH -3
try EMBERPROF_UNWIND dwarf-please
try EMBERPROF_THREAD_LABELS maybe
try EMBERPROF_LOG_LEVEL chatty
try EMBERPROF_TAGS "=x"
try EMBERPROF_FOLLOW_CHILDREN sometimes
try EMBERPROF_AUTOSTART perhaps
try EMBERPROF_LIB /nonexistent/libemberprof.so

mkdir real && ln -s real link
try EMBERPROF_OUTPUT_DIR "$T/link"

# An option overrides the bad inherited variable: the option's value is used.
rm -f marker
EMBERPROF_SAMPLE_RATE=abc "$EMBERPROF" run -q --rate 50 -o out.d -- sh -c 'touch marker' >out 2>err
rc=$?
check_exit "option overrides variable" 0 $rc
if [ -e marker ]; then ok "option overrides variable: program ran"; else fail "option overrides variable: program did not run"; fi

# An unknown variable is only a warning.
rm -f marker
EMBERPROF_SAMPEL_RATE=5 "$EMBERPROF" run -q -o out.d -- sh -c 'touch marker' >out 2>err
rc=$?
check_exit "unknown variable" 0 $rc
check_grep "unknown variable" err "EMBERPROF_SAMPEL_RATE"

done_tests
