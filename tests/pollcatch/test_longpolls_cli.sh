# SPDX-License-Identifier: Apache-2.0
# test_longpolls_cli.sh - `emberprof longpolls` as a command: its output on
# the async-profiler-shaped seed recording (tests/fuzz/corpus_jfr), --min,
# --depth, help, and its usage and file errors.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
seed=$EMBER_TEST_SRCDIR/tests/fuzz/corpus_jfr/asprof_like.jfr

"$EMBERPROF" longpolls "$seed" >out 2>err
check_exit "longpolls" 0 $?
check_grep "longpolls" out "poll 1: 50.000 ms, 5 samples, thread 4242 (main)"
check_grep "longpolls" out "poll 2: 2.000 ms"
check_grep "longpolls" out "slow_callback"
check_grep "longpolls: a sample without stack" out "(no stack)"
check_no_grep "longpolls: another thread's sample" out "busy_other"

"$EMBERPROF" longpolls --min 10 --depth 1 "$seed" >out 2>err
check_exit "--min 10 --depth 1" 0 $?
check_no_grep "--min 10" out "poll 2:"
check_grep "--depth 1" out "... 2 more"

"$EMBERPROF" longpolls --min 100 "$seed" >out 2>err
check_exit "--min 100" 0 $?
check_grep "--min 100" out "no long polls over --min"

"$EMBERPROF" help longpolls >out 2>err
check_exit "help longpolls" 0 $?
check_grep "help longpolls" out "usage: emberprof longpolls"

"$EMBERPROF" longpolls >out 2>err
check_exit "no FILE" 2 $?
check_grep "no FILE" err "needs at least one FILE"

"$EMBERPROF" longpolls --min soon "$seed" >out 2>err
check_exit "--min soon" 2 $?
check_grep "--min soon" err "not a number of milliseconds"

"$EMBERPROF" longpolls --frobnicate "$seed" >out 2>err
check_exit "unknown option" 2 $?
check_grep "unknown option" err "unknown option '--frobnicate'"

"$EMBERPROF" longpolls missing.jfr "$seed" >out 2>err
check_exit "a missing file" 1 $?
check_grep "a missing file" err "cannot open missing.jfr"
check_grep "a missing file: the others still listed" out "poll 1: 50.000 ms"

printf 'FLR\0garbage' >bad.jfr
"$EMBERPROF" longpolls bad.jfr >out 2>err
check_exit "a malformed recording" 1 $?
check_grep "a malformed recording" err "bad.jfr: JFR:"
done_tests
