# test_usage.sh - emberprof's commands and usage errors: help on stdout
# with exit 0, usage errors on stderr with exit 2, version.
. "$(dirname "$0")/lib.sh"

"$EMBERPROF" >out 2>err; rc=$?
check_exit "no arguments" 2 $rc
check_grep "no arguments" err "usage: emberprof"

"$EMBERPROF" help >out 2>err; rc=$?
check_exit "help" 0 $rc
check_grep "help" out "usage: emberprof"

"$EMBERPROF" --help >out 2>err; rc=$?
check_exit "--help" 0 $rc
check_grep "--help" out "run [options]"

"$EMBERPROF" help run >out 2>err; rc=$?
check_exit "help run" 0 $rc
check_grep "help run" out "--follow-children"

"$EMBERPROF" run --help >out 2>err; rc=$?
check_exit "run --help" 0 $rc
check_grep "run --help" out "--interval DURATION"

"$EMBERPROF" top --help >out 2>err; rc=$?
check_exit "top --help" 0 $rc
check_grep "top --help" out "--sample-index"

"$EMBERPROF" version >out 2>err; rc=$?
check_exit "version" 0 $rc
version=$(sed -n 's/^#define EMBER_VERSION_STRING "\(.*\)"$/\1/p' "$EMBER_TEST_SRCDIR/include/emberprof.h")
check_grep "version" out "emberprof $version"

"$EMBERPROF" frobnicate >out 2>err; rc=$?
check_exit "unknown command" 2 $rc
check_grep "unknown command" err "unknown command 'frobnicate'"

"$EMBERPROF" run >out 2>err; rc=$?
check_exit "run without command" 2 $rc
check_grep "run without command" err "no command given"

done_tests
