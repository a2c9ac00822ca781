# SPDX-License-Identifier: Apache-2.0
# test_run_demo.sh - end to end: `emberprof run` on the demo writes
# readable profiles whose CPU split matches the demo's 3:1 design, prints
# the table on stderr only, honors --app, and keeps the library in
# LD_PRELOAD (the whole tree is profiled; --no-follow-children marks a pid).
. "$(dirname "$0")/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"

"$EMBERPROF" run --rate 250 --top 30 --app my-app -o prof -- "$EMBER_DEMO" --threads 2 --seconds 1 >out 2>err
rc=$?
check_exit "demo" 0 $rc
check_grep "demo stdout" out "expected profile"
check_no_grep "demo stdout is clean" out "Total cpu"
check_grep "table on stderr" err "Total cpu"
check_grep "table on stderr" err "profile"
check_grep "where profiles went" err "written to $T/prof"
for f in hot_a hot_b stage_one stage_two worker_main; do
	check_grep "table" err "$f"
done

n=$(ls prof | grep -c '^my-app-.*\.pb\.gz$')
if [ "$n" -ge 1 ]; then ok "$n profile(s) named after --app"; else fail "no my-app-*.pb.gz in prof:"; ls -la prof >&2; fi
if ls -A prof | grep -q '^\.'; then fail "temporary files left in prof"; else ok "no temporary files"; fi

# The split, in samples (flat = first column of the function's row).
"$EMBERPROF" top --sample-index samples prof/*.pb.gz >samples.out 2>&1
flat() { awk -v f="$1" '$5 == f { print $1; exit }' samples.out; }
total=$(sed -n 's/^Total samples: \([0-9]*\).*/\1/p' samples.out)
a=$(flat hot_a)
b=$(flat hot_b)
echo "samples: total ${total:-?}, hot_a ${a:-?}, hot_b ${b:-?} (2 s of CPU at 250 Hz: ~500 expected)"
# Too few samples make the split meaningless; that is a sampler failure.
if [ -n "$total" ] && [ "$total" -ge 100 ]; then
	ok "enough samples ($total)"
	# The demo times its calls itself (nominally 3:1). With >= 100 samples,
	# a hot_a share 15 points away from the measured one is more than 3.5
	# standard deviations off: this fails only if attribution is wrong.
	m=$(sed -n 's/^measured: hot_a \([0-9.]*\)%.*/\1/p' out)
	if [ -n "$a" ] && [ -n "$b" ] && [ -n "$m" ] &&
		awk -v a="$a" -v b="$b" -v m="$m" 'BEGIN { d = 100 * a / (a + b) - m; exit !(d < 15 && d > -15) }'; then
		ok "hot_a share matches the demo's own measurement (${m}%)"
	else
		fail "hot_a:hot_b split wrong (hot_a ${a:-?}, hot_b ${b:-?} samples; measured hot_a ${m:-?}%)"
	fi
else
	fail "only ${total:-no} samples for 2 s of CPU at 250 Hz"
fi

# The same files through `emberprof top` give the same total.
"$EMBERPROF" top prof/*.pb.gz >top.out 2>top.err
rc=$?
check_exit "top on the run's files" 0 $rc
total_run=$(sed -n 's/^Total cpu: \([^ ]*\).*/\1/p' err)
total_top=$(sed -n 's/^Total cpu: \([^ ]*\).*/\1/p' top.out)
if [ -n "$total_run" ] && [ "$total_run" = "$total_top" ]; then ok "same total ($total_run)"; else fail "totals differ: run '$total_run', top '$total_top'"; fi

# A second run into the same directory summarizes only its own files.
before=$(ls prof | wc -l)
"$EMBERPROF" run -o prof -- "$EMBER_DEMO" --threads 2 --seconds 0.5 >out 2>err2
rc=$?
check_exit "second run" 0 $rc
after=$(ls prof | wc -l)
new=$((after - before))
if [ "$new" -ge 1 ]; then
	check_grep "second run counts only its own profiles" err2 "$new profile"
	total2=$(sed -n 's/^Total cpu: .* in \([0-9]*\) profile.*/\1/p' err2)
	if [ "$total2" = "$new" ]; then ok "second table covers $new file(s)"; else fail "second table covers '$total2' files, expected $new"; fi
else
	fail "second run wrote no profile"
fi

# The library stays in LD_PRELOAD (the whole tree is profiled by default) ...
"$EMBERPROF" run -q -o prof -- sh -c 'echo "[$LD_PRELOAD]"' >out 2>err; rc=$?
check_exit "LD_PRELOAD kept" 0 $rc
check_grep "LD_PRELOAD kept" out "libemberprof"
# ... with other preloaded libraries ...
libm=$(${CC:-cc} -print-file-name=libm.so.6)
if [ -e "$libm" ]; then
	LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$libm" "$EMBERPROF" run -q -o prof -- sh -c 'echo "[$LD_PRELOAD]"' >out 2>err
	check_grep "other preloads kept" out "$libm"
fi
# ... also with --no-follow-children, which marks the one pid to profile.
"$EMBERPROF" run -q -o prof --no-follow-children -- sh -c 'echo "[$LD_PRELOAD] [$EMBERPROF_PROFILE_PID] [$$]"' >out 2>err; rc=$?
check_exit "--no-follow-children" 0 $rc
check_grep "--no-follow-children" out "libemberprof"
if grep -q '\] \[\([0-9]*\)\] \[\1\]$' out; then ok "--no-follow-children: EMBERPROF_PROFILE_PID is the shell's pid"; else fail "--no-follow-children: EMBERPROF_PROFILE_PID is not the shell's pid: $(cat out)"; fi
"$EMBERPROF" run -q -o prof --follow-children -- sh -c 'echo "[$LD_PRELOAD]"' >out 2>err; rc=$?
check_exit "--follow-children" 0 $rc
check_grep "--follow-children" out "libemberprof"

# The default output directory is new, in the current directory.
mkdir cwd && cd cwd || exit 1
"$EMBERPROF" run -- "$EMBER_DEMO" --threads 1 --seconds 0.1 >out 2>err
rc=$?
check_exit "default output directory" 0 $rc
d=$(ls -d emberprof-emberprof_demo-* 2>/dev/null | head -n 1)
if [ -n "$d" ] && [ -d "$d" ]; then ok "default directory $d"; else fail "no emberprof-emberprof_demo-* directory"; ls -la >&2; fi
check_grep "default output directory" err "written to $T/cwd/$d"

# The CPU in no sample is measured over the program's threads (the demo's
# workers are called emberprof_demo, which is not one of emberprof's own
# threads): 2 workers of 0.5 s, so at least 0.9 s used.
"$EMBERPROF" run --log-level info -o info -- "$EMBER_DEMO" --threads 2 --seconds 0.5 >out 2>err
rc=$?
check_exit "log level info" 0 $rc
used=$(sed -n 's/.*CPU in no sample: .* the sampled threads used \([0-9.]*\) ms.*/\1/p' err)
if [ -n "$used" ] && awk -v u="$used" 'BEGIN { exit !(u >= 900) }'; then
	ok "CPU in no sample: measured over $used ms of the threads' CPU"
else
	fail "CPU in no sample: the threads' CPU measured is '${used}' ms, expected >= 900:"
	sed 's/^/    /' err >&2
fi

done_tests
