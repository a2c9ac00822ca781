# SPDX-License-Identifier: Apache-2.0
# test_exit_status.sh - `emberprof run` exits with the program's status
# (128+N when signal N killed it) and leaves the program's stdout alone.
. "$(dirname "$0")/lib.sh"

"$EMBERPROF" run -q -o prof -- sh -c 'exit 7' >out 2>err; rc=$?
check_exit "exit 7" 7 $rc

"$EMBERPROF" run -q -o prof -- sh -c 'exit 0' >out 2>err; rc=$?
check_exit "exit 0" 0 $rc

"$EMBERPROF" run -q -o prof -- sh -c 'kill -9 $$' >out 2>err; rc=$?
check_exit "SIGKILL" 137 $rc
check_grep "SIGKILL" err "killed by signal 9"

"$EMBERPROF" run -q -o prof -- sh -c 'kill -TERM $$' >out 2>err; rc=$?
check_exit "SIGTERM" 143 $rc

# The program's stdout is exactly its own; arguments pass through intact.
"$EMBERPROF" run -o prof -- sh -c 'printf "%s|" "$@"; echo' argv0 "a b" "" 'c"d' >out 2>err
rc=$?
check_exit "stdout" 0 $rc
printf 'a b||c"d|\n' >expected
if cmp -s out expected; then ok "stdout untouched"; else fail "stdout differs:"; cat out >&2; fi

# The program's stdin is its own too.
echo "from stdin" | "$EMBERPROF" run -q -o prof -- cat >out 2>err
check_grep "stdin" out "from stdin"

done_tests
