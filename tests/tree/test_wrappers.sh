# SPDX-License-Identifier: Apache-2.0
# test_wrappers.sh - commands that run the real program through a wrapper
# are profiled with no flag: `sh -c` that forks python3 or execs it, and a
# pyenv-style shim (a bash script exec'ing a bash script that looks python
# up in a subshell and execs it). The python process's CPU (its own
# getrusage(RUSAGE_THREAD)) is in the profiles under its pid, within 10 %.
# Then a wrapper exec'ing a statically linked program (which LD_PRELOAD
# cannot reach): no profile, and `emberprof run` says why.
. "$(dirname "$0")/lib.sh"
need bash
: "${EMBER_TREE_WORK_STATIC:?EMBER_TREE_WORK_STATIC must name tree_work_static}"
# the real interpreter (python3 on PATH may be a wrapper itself: pyenv's)
PY=$(python3 -c 'import sys; print(sys.executable)')
BURN=$TREE_DIR/burn.py

# a pyenv-style shim: shims/python3 -> libexec/pyenv exec -> python3
mkdir -p "$T/shims" "$T/libexec"
cat >"$T/shims/python3" <<SEOF
#!/usr/bin/env bash
set -e
program="\${0##*/}"
exec "$T/libexec/pyenv" exec "\$program" "\$@"
SEOF
cat >"$T/libexec/pyenv" <<SEOF
#!/usr/bin/env bash
set -e
[ "\$1" = exec ] || exit 2
shift
program=\$1
shift
real=\$(PATH=$(dirname "$PY") command -v "\$program")
exec "\$real" "\$@"
SEOF
chmod +x "$T/shims/python3" "$T/libexec/pyenv"

run_case() { # NAME CMD... : runs CMD under emberprof run, checks python's CPU
	name=$1
	shift
	"$EMBERPROF" run -q -o "$T/p-$name" -- "$@" >"$T/$name.out" 2>"$T/$name.err"
	check_exit "$name" 0 $?
	if [ ! -s "$T/$name.cpu" ]; then
		fail "$name: python did not report its CPU"
		sed 's/^/    /' "$T/$name.err" >&2
		return
	fi
	read -r pid cpu <"$T/$name.cpu"
	check_cover "$name: python3 (pid $pid)" "$(profiled_cpu "$T/p-$name" "$pid")" "$cpu" 0.9 1.1
}

run_case sh-fork sh -c "\"$PY\" \"$BURN\" 1.0 \"$T/sh-fork.cpu\"; true"
run_case sh-exec sh -c "exec \"$PY\" \"$BURN\" 1.0 \"$T/sh-exec.cpu\""
run_case shim "$T/shims/python3" "$BURN" 1.0 "$T/shim.cpu"
read -r pid cpu <"$T/shim.cpu"
if ls "$T/p-shim" | grep -q "^python3-.*-$pid-"; then ok "shim: python3's files are named after it"; else fail "shim: no python3-*-$pid-* file in $(ls "$T/p-shim")"; fi

# a script whose interpreter LD_PRELOAD cannot reach (statically linked):
# no profile, and `emberprof run` says why (--engine tree: profiled)
printf '#!%s\n' "$EMBER_TREE_WORK_STATIC" >"$T/static-script"
chmod +x "$T/static-script"
"$EMBERPROF" run -q -o "$T/p-static" -- "$T/static-script" burn 0.3 "$T/static.cpu" >"$T/static.out" 2>"$T/static.err"
check_exit "static" 0 $?
if [ "${EMBERPROF_ENGINE:-}" = tree ]; then
	# sampled from outside: nothing needs to be loaded into it
	read -r pid cpu <"$T/static.cpu"
	check_cover "static (--engine tree): pid $pid" "$(profiled_cpu "$T/p-static" "$pid")" "$cpu" 0.9 1.1
	done_tests
fi
check_grep "static" "$T/static.err" "no profiles were written"
# the CPU it names is the script's own 0.3 s burn, as /proc counted it
# (0.29 s once): 0.2 s or more
if grep -qE 'hint: static-script used (0\.[2-9][0-9]*|[1-9][0-9.]*) s of CPU' "$T/static.err"; then
	ok "static: a hint naming the script's CPU"
else
	fail "static: no hint naming the script's CPU (0.2 s or more) in $T/static.err:"
	sed 's/^/    /' "$T/static.err" >&2
fi
check_grep "static: the hint says why" "$T/static.err" "statically linked"
done_tests
