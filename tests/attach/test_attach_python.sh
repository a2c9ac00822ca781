# SPDX-License-Identifier: Apache-2.0
# test_attach_python.sh - `emberprof attach` on a real program nobody here
# wrote: python3, with a child it forked before the attach (an existing
# descendant, followed). --wall first (the library loaded into the
# interpreter, its agent started and stopped; the interpreter then runs on
# and exits 0); then CPU: both processes profiled under their pids, each
# with the interpreter's own functions and its CPU within 10 % of what it
# burnt by its own clock; attach ends by itself when the process exits.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
need python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
attach_probe
ptrace_probe
BURN="$(dirname "$0")/burn.py"

start_python() {
	rm -f ctl state state.*
	mkfifo ctl
	python3 "$BURN" state <ctl >py.out 2>&1 &
	PY=$!
	exec 3>ctl
	wait_for state || { fail "python did not start"; exit 1; }
	read -r _ parent child <state
}

# --wall: loaded into the interpreter, stopped again; it runs on
start_python
"$EMBERPROF" attach --wall --duration 500ms -o wall "$parent" >wall.err 2>&1
check_exit "python --wall" 0 $?
check_grep "python --wall" wall.err "library loaded and agent started"
echo go >&3
exec 3>&-
wait $PY
check_exit "python after --wall detached" 0 $?

# CPU: the parent and its child, until they exit
start_python
"$EMBERPROF" attach -o cpu "$parent" >cpu.err 2>&1 &
EP=$!
wait_grep cpu.err "attached to" || fail "attach did not start"
check_grep "the forked child found" cpu.err "attached to 2 processes"
echo go >&3
exec 3>&-
wait $PY
check_exit "python" 0 $?
wait $EP
check_exit "attach ends when the process exits" 0 $?
check_grep "attach ends when the process exits" cpu.err "the process exited: detached"
for p in $parent $child; do
	files=$(ls cpu/*-"$p"-*.pb.gz 2>/dev/null)
	if [ -z "$files" ]; then
		fail "no profile of python $p"
		continue
	fi
	burnt=$(cat "state.$p")
	prof=$(python3 "$(dirname "$0")/../tree/cpu_by_pid.py" cpu | awk -v p="$p" '$1 == p { print $2 }')
	python3 -c "import sys; m, p = map(float, sys.argv[1:]); sys.exit(0 if abs(p - m) <= 0.1 * m else 1)" "$burnt" "$prof" &&
		ok "python $p: $prof s in its profiles of the $burnt s it burnt" ||
		fail "python $p: $prof s in its profiles, it burnt $burnt s (10 %)"
	if python3 "$FNCPU" cpu $files | grep "^_\?PyEval_EvalFrame" >/dev/null; then
		ok "python $p: the interpreter's functions named (PyEval_EvalFrame...)"
	else
		fail "python $p: no PyEval_EvalFrame function in its profiles:"
		python3 "$FNCPU" cpu $files | head >&2
	fi
done
done_tests
