# SPDX-License-Identifier: Apache-2.0
# test_attach_cpu.sh - `emberprof attach PID`: CPU profiles of a running
# process with nothing loaded into it. Its busy threads' functions are
# named, threads and a child started after the attach are followed, each
# function's CPU in the profiles within 10 % of what its thread's own CPU
# clock counted (never a wall clock); Ctrl-C detaches, the target runs on
# and exits normally; --no-follow-children leaves the child out; --pid-of
# finds the process by name. Skipped (77) where perf events are refused.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
need python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
attach_probe

# within10 MEASURED PROFILED
within10() {
	python3 -c "import sys; m, p = map(float, sys.argv[1:]); sys.exit(0 if m > 0 and abs(p - m) <= 0.1 * m else 1)" "$1" "$2"
}

for follow in yes no; do
	start_target busy
	opt=
	[ $follow = no ] && opt=--no-follow-children
	"$EMBERPROF" attach $opt -o out.$follow "$TPID" >err.$follow 2>&1 &
	EP=$!
	i=0
	while ! grep -q "attached to" err.$follow && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	check_grep "attach ($follow)" err.$follow "emberprof: attached to 1 process (3 threads)"
	echo go >&3
	i=0
	while ! grep -q done state && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	kill -INT $EP
	wait $EP
	check_exit "attach ($follow) after SIGINT" 0 $?
	check_grep "SIGINT said ($follow)" err.$follow "interrupted (SIGINT): detached"
	st=$(state_of "$TPID")
	case $st in
	S | R) ok "the target runs on after detach (state $st)" ;;
	*) fail "the target's state after detach: '$st'" ;;
	esac
	read -r _ parent_ns child_ns <state
	files=$(ls out.$follow/*-"$TPID"-*.pb.gz 2>/dev/null)
	if [ -z "$files" ]; then
		fail "no profile of $TPID in out.$follow:"; ls out.$follow >&2; cat err.$follow >&2
		stop_target
		continue
	fi
	a=$(fn_seconds attach_spin_a $files)
	b=$(fn_seconds attach_spin_b $files)
	l=$(fn_seconds attach_late_spin $files)
	m=$(python3 -c "import sys; print(int(sys.argv[1]) / 1e9)" "$parent_ns")
	p=$(python3 -c "import sys; print(sum(map(float, sys.argv[1:])))" "$a" "$b" "$l")
	if within10 "$m" "$p"; then
		ok "($follow) attach_spin_a $a s, attach_spin_b $b s, attach_late_spin (a thread started after attach) $l s: $p s of the $m s they burnt"
	else
		fail "($follow) attach_spin_a $a s, attach_spin_b $b s, attach_late_spin $l s: $p s, burnt $m s (10 %); emberprof said:"
		sed 's/^/    /' err.$follow >&2
	fi
	python3 -c "import sys; sys.exit(0 if min(map(float, sys.argv[1:])) > 0 else 1)" "$a" "$b" "$l" ||
		fail "($follow) a busy function is missing from the profiles"
	others=$(ls out.$follow | grep -v -e "-$TPID-[0-9]*\.")
	cm=$(python3 -c "import sys; print(int(sys.argv[1]) / 1e9)" "$child_ns")
	if [ $follow = yes ]; then
		c=0
		[ -n "$others" ] && c=$(cd out.$follow && fn_seconds attach_child_spin $others)
		# the child's CPU that no sample stands for (its copy-on-write
		# faults after fork, its exit) is spread over its stacks, which
		# are this one function: up to a quarter more (0.45 s of 0.40 s
		# seen under load). Under: 20 % at most. 0.33 and 0.36 s of
		# 0.40 s were seen, once each, in a parallel ctest run and under
		# two CPU hogs (not in 8 more runs under hogs): the cause is not
		# known yet, so a failure prints what emberprof said and the
		# child's profile.
		if python3 -c "import sys; m, p = map(float, sys.argv[1:]); sys.exit(0 if m > 0 and 0.8 * m <= p <= 1.25 * m else 1)" "$cm" "$c"; then
			ok "the child forked after attach: attach_child_spin $c s of $cm s"
		else
			fail "the child forked after attach: attach_child_spin $c s, burnt $cm s; emberprof said:"
			sed 's/^/    /' err.$follow >&2
			(cd out.$follow && python3 "$FNCPU" cpu $others | head -8 | sed 's/^/    /') >&2
		fi
		check_grep "the top table" err.$follow "attach_spin_a"
	elif [ -n "$others" ]; then
		fail "--no-follow-children: profiles of other processes: $others"
	else
		ok "--no-follow-children: only $TPID profiled"
	fi
	stop_target
done

# --pid-of NAME, as pgrep -x: the name as /proc/PID/comm has it. Started
# through a link of its own name (comm is the name exec'd): another run of
# this test on the machine (a second build's) has a target of the same
# binary, and both would be found.
ln -s "$EMBER_ATTACH_WORK" "$T/eaw$$" || exit 1
EMBER_ATTACH_WORK=$T/eaw$$
start_target idle
comm=$(cat /proc/$TPID/comm)
[ "$comm" = "eaw$$" ] || fail "the target's name is '$comm', not eaw$$"
"$EMBERPROF" attach -q --duration 200ms --pid-of "$comm" -o byname >/dev/null 2>byname.err
check_exit "--pid-of $comm" 0 $?
check_grep "--pid-of $comm" byname.err "attached to 1 process"
other="x${comm#?}"
"$EMBERPROF" attach -q --duration 200ms --pid-of "$other" -o byname2 >/dev/null 2>byname2.err
check_exit "--pid-of $other (no such name)" 1 $?
check_grep "--pid-of $other" byname2.err "no process is named"
stop_target
done_tests
