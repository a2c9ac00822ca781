# SPDX-License-Identifier: Apache-2.0
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

# Every command `emberprof help` lists (cli/main.c's table) has its usage
# through `help CMD` and `CMD --help`, the same text.
"$EMBERPROF" help >list 2>err
cmds=$(sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' list)
[ -n "$cmds" ] && ok "help lists commands" || fail "help lists no commands"
for c in $cmds; do
	[ "$c" = help ] && continue
	"$EMBERPROF" help "$c" >h1 2>err; rc=$?
	check_exit "help $c" 0 $rc
	check_grep "help $c" h1 "usage: emberprof $c"
	"$EMBERPROF" "$c" --help >h2 2>err; rc=$?
	check_exit "$c --help" 0 $rc
	if cmp -s h1 h2; then ok "$c --help is help $c"; else fail "$c --help differs from help $c"; fi
done

"$EMBERPROF" frobnicate >out 2>err; rc=$?
check_exit "unknown command" 2 $rc
check_grep "unknown command" err "unknown command 'frobnicate'"

"$EMBERPROF" run >out 2>err; rc=$?
check_exit "run without command" 2 $rc
check_grep "run without command" err "no command given"

done_tests
