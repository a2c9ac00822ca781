# SPDX-License-Identifier: Apache-2.0
# test_child_bindings.sh - a fork child that execs at once (every command of
# a shell loop) binds none of our library's libc functions: such a lazy
# binding is a symbol lookup over every loaded object and a copied page in
# each child, paid again by every fork (docs/BENCHMARKS.md section 13).
# The dynamic loader tells (LD_DEBUG=bindings): a fork child writes, before
# its exec, into its parent's file, each line prefixed with its own pid; a
# line of our library there whose pid is not the file's own is a binding
# made in a child. Two processes that fork a shell's commands: a shell
# with the library preloaded and no request to profile (its children
# called access(), strchr(), getpid() and syscall() for the first time in
# every exec before this was fixed), and a shell under `emberprof run`.
. "$(dirname "$0")/lib.sh"
need bash
: "${EMBER_TEST_LIB:?EMBER_TEST_LIB must name libemberprof.so}"
not_in_asan "libasan comes first in LD_PRELOAD and binds its own interceptors in children"

LOOP='for i in 1 2 3 4 5; do /bin/true; done'

# child_bindings DIR : prints the lines of DIR's loader logs where a fork
# child (a pid other than the file's) bound a symbol for our library
child_bindings() {
	for f in "$1"/ld.*; do
		owner=${f##*.}
		awk -v owner="$owner" '
			/binding file [^ ]*libemberprof/ {
				pid = $1; sub(/:$/, "", pid)
				if (pid != owner) print FILENAME ": " $0
			}' "$f"
	done
}

# check NAME DIR : DIR holds logs of a run that forked and exec'd
check() {
	if ! ls "$2"/ld.* >/dev/null 2>&1; then
		fail "$1: the loader wrote no LD_DEBUG file"
		return
	fi
	# our library must show in the logs at all (each exec'd command logs
	# its own relocations under its pid), or "no child binding" proves
	# nothing
	if ! grep -q "binding file [^ ]*libemberprof" "$2"/ld.*; then
		fail "$1: no binding of our library logged at all (was it loaded?)"
		return
	fi
	lines=$(child_bindings "$2")
	if [ -z "$lines" ]; then
		ok "$1: no fork child bound a function of our library"
	else
		fail "$1: fork children bound functions of our library before their exec:"
		printf '%s\n' "$lines" | sed 's/^/    /' | head -20 >&2
	fi
}

mkdir -p "$T/idle" "$T/run"
LD_DEBUG=bindings LD_DEBUG_OUTPUT="$T/idle/ld" LD_PRELOAD="$EMBER_TEST_LIB${LD_PRELOAD:+:$LD_PRELOAD}" \
	bash -c "$LOOP" >"$T/idle.out" 2>"$T/idle.err"
check_exit "idle" 0 $?
check "preloaded, no request" "$T/idle"

LD_DEBUG=bindings LD_DEBUG_OUTPUT="$T/run/ld" "$EMBERPROF" run -q -o "$T/p-run" -- \
	bash -c "$LOOP" >"$T/run.out" 2>"$T/run.err"
check_exit "run" 0 $?
check "emberprof run" "$T/run"
done_tests
