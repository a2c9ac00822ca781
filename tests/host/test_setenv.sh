# test_setenv.sh - a program of the profiled tree that calls setenv all
# the while (host_setenv.c): the agent of a lazily started image reads its
# configuration from the copy of the environment taken before main(), never
# from the live one on its helper thread (CI: git commit crashed in that
# getenv). The program must end as it does unprofiled, every time.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"

# KNOWN DEFECT (issue 15, open): in the sanitizer build, where every image
# starts its agent at once (no lazy start, so not the path this test is
# about), host_setenv died of SIGSEGV once in CI (1 of 8 runs; no core,
# cause not identified). Ruled out since, in the normal build: getenv on
# the agent's threads (an interposer saw none while profiling a stripped
# program), libraries the agent loads calling it (libdw, libelf, zlib,
# liblzma and libbz2 import no getenv; libdebuginfod, which does through
# libcurl, was never loaded). Skipped there until it is found.
if [ -n "${EMBER_TEST_SANITIZE:-}" ] && [ "$EMBER_TEST_SANITIZE" != OFF ]; then
	echo "skipped in the sanitizer build: KNOWN DEFECT, a SIGSEGV seen once there (issue 15), cause not identified" >&2
	exit 77
fi

"$H/host_setenv" >plain.out 2>plain.err
check_grep "unprofiled" plain.out "setenv ok"
# Through sh, so that host_setenv is an image exec'd inside the tree
# (started lazily), not the command itself; `; true` keeps sh from
# exec'ing it in place.
for i in 1 2 3 4 5 6 7 8; do
	"$EMBERPROF" run -q -o "prof$i" -- sh -c "\"$H/host_setenv\"; echo \"status \$?\"" >out 2>err
	check_exit "run $i: emberprof's status" 0 $?
	check_grep "run $i: host_setenv ended normally" out "status 0"
done
done_tests
