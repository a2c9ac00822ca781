# SPDX-License-Identifier: Apache-2.0
# test_run_tree_hint.sh - the hint `emberprof run --engine tree` gives when
# no profile was written. The tree engine writes a profile for any CPU its
# events counted (even `true`'s), so what leaves the directory empty is its
# reporters failing: here every file write fails for real (RLIMIT_FSIZE 0,
# SIGXFSZ ignored: write() gives EFBIG; stderr goes through a pipe, which
# the limit does not cover). The hint must quote the engine's own numbers:
# the same profiles, processes, CPU in samples and in no sample, and
# reporter failures as the engine's summary line of that run. Skipped (77)
# where the kernel refuses perf events.
. "$(dirname "$0")/lib.sh"
need python3

"$EMBERPROF" run -q --engine tree -o probe -- true >/dev/null 2>probe.err ||
	{ echo "--engine tree cannot run here: $(cat probe.err)"; exit 77; }

# a shell that burns some CPU (samples, not only [unsampled] time)
(
	trap '' XFSZ
	ulimit -f 0 || exit 99
	exec "$EMBERPROF" run --engine tree -o out -- \
		sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'
) 2>&1 >/dev/null | cat >err
[ -s err ] || fail "no output from the run"
check_grep "the write failed, and the log says why" err "File too large"
check_grep "nothing written" err "no profiles were written to"
if ls out/*.pb.gz >/dev/null 2>&1; then
	fail "a profile was written despite RLIMIT_FSIZE 0: $(ls out)"
fi

# the engine's summary line (printed when reporters failed) and the hint
python3 - err <<'PY'
import re, sys
text = open(sys.argv[1]).read()
line = re.search(r"tree engine: (\d+) processes, \d+ profiled, (\d+) profiles, (\d+) samples "
                 r"\(([\d.]+) s of CPU, ([\d.]+) s more in no sample, .*?(\d+) reporter failures",
                 text)
hint = re.search(r"hint: the tree engine made (\d+) profiles? of (\d+) processes "
                 r"\(([\d.]+) s of CPU in samples, ([\d.]+) s more in no sample\), and the "
                 r"reporters failed (\d+) times?: the log says why", text)
if not line or not hint:
    print("FAIL: %s" % ("no engine summary line" if not line else "no hint"), file=sys.stderr)
    sys.exit(1)
processes, profiles, samples, sampled, unsampled, failures = line.groups()
engine = dict(profiles=profiles, processes=processes, sampled=sampled, unsampled=unsampled,
              failures=failures)
said = dict(zip(("profiles", "processes", "sampled", "unsampled", "failures"), hint.groups()))
bad = [k for k in engine if engine[k] != said[k]]
if bad:
    print("FAIL: the hint says %s, the engine %s" % (said, engine), file=sys.stderr)
    sys.exit(1)
if int(failures) < 1 or int(profiles) < 1 or int(processes) < 1:
    print("FAIL: the engine counted %s" % engine, file=sys.stderr)
    sys.exit(1)
print("ok   the hint quotes the engine: %s profile(s) of %s process(es), %s s in %s samples, "
      "%s s in no sample, %s reporter failure(s)"
      % (profiles, processes, sampled, samples, unsampled, failures))
PY
[ $? = 0 ] || { fail "the hint does not quote the engine's numbers:"; sed 's/^/    /' err >&2; }
done_tests
