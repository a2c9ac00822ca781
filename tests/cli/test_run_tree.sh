# SPDX-License-Identifier: Apache-2.0
# test_run_tree.sh - `emberprof run --engine tree`: the tree
# sampled from outside. A shell loop's /bin/true processes leave no file of
# their own (their counted CPU goes to the window's shared profile, never
# an empty one) while the shell's own burn is profiled under
# its pid, with its CPU in the profile within 10 % of what the kernel
# counted for it; the library is not loaded into the program; what the
# engine does not make (--wall, --alloc, --format jfr) is refused with a
# message naming it, before the program starts. Skipped (77) where the
# kernel refuses perf events.
. "$(dirname "$0")/lib.sh"
need bash
need python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }

"$EMBERPROF" run -q --engine tree -o probe -- true >/dev/null 2>probe.err ||
	{ echo "--engine tree cannot run here: $(cat probe.err)"; exit 77; }

true_bin=$(command -v true)
case $true_bin in /*) ;; *) true_bin=/bin/true ;; esac
cat >loop.sh <<LOOP
echo "\$\$ \${LD_PRELOAD:-none}" >bash.pid
for i in \$(seq 60); do $true_bin; done
i=0; while [ \$i -lt 300000 ]; do i=\$((i+1)); done
read -r _ _ _ _ _ _ _ _ _ _ _ _ _ ut st _ </proc/\$\$/stat
echo "\$ut \$st" >bash.ticks
LOOP
"$EMBERPROF" run --engine tree --log-level info -o out -- bash loop.sh >stdout 2>err
check_exit "shell loop" 0 $?
read -r bash_pid preload <bash.pid
case $preload in
*libemberprof*) fail "the program got LD_PRELOAD=$preload" ;;
*) ok "emberprof not preloaded into the program (LD_PRELOAD: $preload)" ;;
esac
# In a sanitizer build lib.sh preloads libasan into every program: each
# /bin/true then runs for more than a sample's 10 ms.
sanitized=0
case "${EMBER_TEST_SANITIZE:-OFF}" in ON | on | 1 | TRUE | true) sanitized=1 ;; esac
# The /bin/true processes (~1-3 ms each) take no sample and get no file of
# their own: what their events counted is in the window's shared profile
# (one file, named after emberprof's pid, each sample labelled with its
# process's pid), as [unsampled] time. What must never be there: an empty
# profile, or a file per process.
others=$(ls out | grep -v -e "-$bash_pid-[0-9]*\.")
cpu_all=$(python3 "$(dirname "$0")/../tree/cpu_by_pid.py" out)
n=0 empty=0
for f in $others; do
	n=$((n + 1))
	go tool pprof -raw "out/$f" | sed -n '/^Samples:/,/^Locations/p' |
		awk '/^ +[0-9]+ +[0-9]+:/ { c += $2 } END { exit !(c > 0) }' || empty=$((empty + 1))
done
labelled=$(echo "$cpu_all" | awk -v b="$bash_pid" '$1 != b' | wc -l)
if [ $n -le 2 ] && [ $empty = 0 ] && [ "$labelled" -ge 55 ]; then
	ok "shell loop: the 61 other processes in $n shared file(s) ($labelled pids labelled), none empty"
else fail "shell loop: $n files of other processes than bash ($bash_pid), $empty without CPU, $labelled pids labelled:"; ls out >&2; fi
read -r ut st <bash.ticks
hz=$(getconf CLK_TCK)
cpu=$(python3 -c "import sys; print((int(sys.argv[1]) + int(sys.argv[2])) / int(sys.argv[3]))" "$ut" "$st" "$hz")
profiled=$(echo "$cpu_all" | awk -v p="$bash_pid" '$1 == p { c = $2 } END { print c + 0 }')
if grep -q "sample user mode only" err; then
	# perf_event_paranoid 2: the shell's kernel time is not sampled
	python3 -c "import sys; p, t = map(float, sys.argv[1:]); sys.exit(0 if 0 < p <= t * 1.1 else 1)" "$profiled" "$cpu" &&
		ok "bash: $profiled s of its $cpu s in the profiles (user mode only)" ||
		fail "bash: $profiled s of its $cpu s in the profiles (user mode only)"
else
	python3 -c "import sys; p, t = map(float, sys.argv[1:]); sys.exit(0 if t > 0 and 0.9 <= p / t <= 1.1 else 1)" "$profiled" "$cpu" &&
		ok "bash: $profiled s of its $cpu s in the profiles" ||
		fail "bash: $profiled s of its $cpu s in the profiles, expected within 10 %"
fi
check_grep "the engine's summary" err "tree engine: "

# nothing sampled: what the events counted is still written, as the
# [unsampled] time of the program (no hint about samples or LD_PRELOAD)
env -u LD_PRELOAD "$EMBERPROF" run --engine tree -o none -- sh -c true >/dev/null 2>none.err
check_exit "nothing sampled" 0 $?
check_grep "nothing sampled: its counted CPU is written" none.err "1 profile written"
check_grep "nothing sampled: as [unsampled]" none.err "[unsampled]"
check_no_grep "nothing sampled: no LD_PRELOAD hint" none.err "LD_PRELOAD"

for opt in "--wall" "--alloc" "--format jfr" "--format both"; do
	# shellcheck disable=SC2086 # the option and its value are two words
	"$EMBERPROF" run --engine tree $opt -o refused -- sh -c 'echo ran >ran' >/dev/null 2>refused.err
	rc=$?
	if [ $rc = 2 ] && [ ! -e ran ] && grep -q -- "--engine tree makes CPU profiles in pprof only, not ${opt%% *}" refused.err; then
		ok "$opt with --engine tree: refused before the program ran"
	else
		fail "$opt with --engine tree: exit $rc, ran: $([ -e ran ] && echo yes || echo no):"
		sed 's/^/    /' refused.err >&2
	fi
	rm -f ran
done
done_tests
