# SPDX-License-Identifier: Apache-2.0
# test_cli_s3.sh - `emberprof run --s3-*`: the options reach the preloaded
# agent, which builds its S3 reporter (libzip and libcurl loaded in the
# profiled program) and runs the program as usual, local profiles and table
# included; bad S3 options are refused before the program starts, naming the
# option. The endpoint refuses connections, so each window's upload is
# retried, then logged as dropped at exit (no spool); it_s3_agent covers a
# real upload.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"
for v in $(env | sed -n 's/^\(AWS_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
export AWS_ACCESS_KEY_ID=AKIDCLI AWS_SECRET_ACCESS_KEY=secret-cli AWS_EC2_METADATA_DISABLED=true

"$EMBERPROF" run --s3-bucket ember-test --s3-profiling-group pg --s3-bucket-owner 123456789012 \
	--s3-endpoint http://127.0.0.1:1 --s3-region us-east-1 --log-level debug -o prof --interval 1s \
	-- "$EMBER_DEMO" --threads 1 --seconds 2 >out 2>err
check_exit "run --s3-bucket" 0 $?
check_no_grep "no agent error" err "emberprof: error"
# the reporter was built inside the profiled program: it loaded libzip there
# (the agent's debug log lists the modules it makes unwind tables for)
check_grep "S3 reporter created in the program" err "libzip.so"
check_grep "the S3 reporter tried to upload" err "s3: upload of window"
check_grep "an undelivered window is logged, not lost silently" err "dropped: undelivered at shutdown"
check_grep "the summary table still comes" err "Total cpu"
n=$(ls prof 2>/dev/null | grep -c '\.pb\.gz$')
[ "$n" -ge 1 ] && ok "$n local profile(s) next to S3" || fail "no local profiles"

bad() { # bad WHAT EXPECTED-TEXT ARGS...
	what=$1 expect=$2
	shift 2
	"$EMBERPROF" run "$@" -- "$EMBER_DEMO" --seconds 1 >out 2>err
	check_exit "$what" 2 $?
	check_grep "$what: message" err "$expect"
}
bad "bad bucket" "invalid --s3-bucket" --s3-bucket Not_A_Bucket
bad "bad owner" "invalid --s3-bucket-owner" --s3-bucket ember-test --s3-bucket-owner 42
bad "bad endpoint" "invalid --s3-endpoint" --s3-bucket ember-test --s3-endpoint ftp://x
bad "bad region" "invalid --s3-region" --s3-bucket ember-test --s3-region 'eu west'
bad "region without bucket" "EMBERPROF_S3_BUCKET is not" --s3-region eu-west-1
done_tests
