# SPDX-License-Identifier: Apache-2.0
# test_program_checks.sh - what `emberprof run` refuses to start: a missing
# program (127), a file that is not executable or not a program (126), a
# statically linked binary (126, explained); scripts are fine.
. "$(dirname "$0")/lib.sh"

"$EMBERPROF" run -- no-such-program-xyz >out 2>err; rc=$?
check_exit "missing program" 127 $rc
check_grep "missing program" err "no-such-program-xyz"
check_grep "missing program" err "not found"

"$EMBERPROF" run -- ./no-such-file >out 2>err; rc=$?
check_exit "missing path" 127 $rc
check_grep "missing path" err "./no-such-file"

printf 'hello\n' >notexec
"$EMBERPROF" run -- ./notexec >out 2>err; rc=$?
check_exit "not executable" 126 $rc
check_grep "not executable" err "notexec"

printf 'hello\n' >garbage
chmod +x garbage
"$EMBERPROF" run -- ./garbage >out 2>err; rc=$?
check_exit "not a program" 126 $rc
check_grep "not a program" err "neither an ELF program nor a script"

"$EMBERPROF" run -- "$T" >out 2>err; rc=$?
check_exit "directory" 126 $rc

printf '#!/bin/sh\necho script-ran\n' >script.sh
chmod +x script.sh
"$EMBERPROF" run -q -o prof -- ./script.sh >out 2>err; rc=$?
check_exit "script" 0 $rc
check_grep "script" out "script-ran"

# A statically linked program: only if a static libc is installed.
libc_a=$(${CC:-cc} -print-file-name=libc.a 2>/dev/null)
if [ -n "$libc_a" ] && [ -e "$libc_a" ] &&
	printf 'int main(void){return 0;}\n' >static.c &&
	${CC:-cc} -static -o static static.c 2>/dev/null; then
	rm -f marker
	"$EMBERPROF" run -- ./static >out 2>err; rc=$?
	check_exit "static" 126 $rc
	check_grep "static" err "statically linked"
else
	echo "skip static binary check: no static libc"
fi

done_tests
