# SPDX-License-Identifier: Apache-2.0
# test_top.sh - `emberprof top` on files written by `emberprof run`: the
# table on stdout, sample-index selection, and its errors.
. "$(dirname "$0")/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"

"$EMBERPROF" run -q -o prof --rate 500 -- "$EMBER_DEMO" --threads 2 --seconds 1 >demo.out 2>err
rc=$?
check_exit "profile the demo" 0 $rc
set -- prof/*.pb.gz
if [ ! -e "$1" ]; then
	fail "no profile written"
	done_tests
fi

"$EMBERPROF" top "$@" >out 2>err; rc=$?
check_exit "top" 0 $rc
check_grep "top" out "Total cpu"
check_grep "top" out "hot_a"
check_grep "top" out "flat%"
if [ -s err ]; then fail "top wrote to stderr:"; cat err >&2; else ok "top: stderr empty"; fi

"$EMBERPROF" top --n 1 "$@" >out 2>err; rc=$?
check_exit "top --n 1" 0 $rc
check_grep "top --n 1" out "hot_a"
check_no_grep "top --n 1" out "hot_b"

"$EMBERPROF" top --sample-index samples "$@" >out 2>err; rc=$?
check_exit "--sample-index samples" 0 $rc
check_grep "--sample-index samples" out "Total samples"

"$EMBERPROF" top --sample-index=0 "$@" >out 2>err; rc=$?
check_exit "--sample-index=0" 0 $rc
check_grep "--sample-index=0" out "Total samples"

"$EMBERPROF" top --sample-index 9 "$@" >out 2>err; rc=$?
check_exit "--sample-index 9" 1 $rc
check_grep "--sample-index 9" err "out of range"

"$EMBERPROF" top --sample-index nope "$@" >out 2>err; rc=$?
check_exit "--sample-index nope" 1 $rc
check_grep "--sample-index nope" err "no sample type 'nope'"

"$EMBERPROF" top missing.pb.gz >out 2>err; rc=$?
check_exit "missing file" 1 $rc
check_grep "missing file" err "missing.pb.gz"

printf 'this is not a profile' >bogus.pb.gz
"$EMBERPROF" top bogus.pb.gz >out 2>err; rc=$?
check_exit "not a profile" 1 $rc
check_grep "not a profile" err "bogus.pb.gz"

"$EMBERPROF" top >out 2>err; rc=$?
check_exit "no files" 2 $rc

"$EMBERPROF" top --n 0 "$@" >out 2>err; rc=$?
check_exit "--n 0" 2 $rc
check_grep "--n 0" err "--n"

done_tests
