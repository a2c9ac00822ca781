# SPDX-License-Identifier: Apache-2.0
# test_windows_aligned.sh - windows on whole multiples of the interval since
# the epoch, in each engine of `emberprof run` (as pyroscope-rs does and as
# Pyroscope's queries by time range expect): with --interval 1s, every
# window of a process after its first (which starts when the process does)
# starts on a whole second (every file of sequence number 1 and up: an
# agent, or the tree engine's process or shared profile, numbers its
# windows from 0), by the profile's own time_nanos as
# `go tool pprof -raw` reads it. The tree engine (--engine tree: skipped
# where perf events are refused) and the preloaded library (--engine auto).
. "$(dirname "$0")/lib.sh"
need python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
unset EMBERPROF_ENGINE

# ~3.3 s of wall time burning CPU: three window boundaries at least
burn='import time
t = time.time() + 3.3
while time.time() < t:
    pass'

check_aligned() { # NAME DIR
	python3 - "$2" <<'PY'
import os, re, subprocess, sys
d = sys.argv[1]
by_pid = {}
for f in sorted(os.listdir(d)):
    m = re.match(r".*-(\d+)-(\d+)\.pb\.gz$", f)
    if not m:
        continue
    raw = subprocess.run(["go", "tool", "pprof", "-raw", os.path.join(d, f)], check=True,
                         capture_output=True, text=True).stdout
    t = re.search(r"^Time: \S+ (\d\d):(\d\d):(\d\d)(\.\d+)? ", raw, re.M)
    frac = int((t.group(4) or ".0")[1:].ljust(9, "0"))
    clock = t.group(1) + ":" + t.group(2) + ":" + t.group(3) + (t.group(4) or "")
    by_pid.setdefault(m.group(1), []).append((int(m.group(2)), clock, frac, f))
later = bad = 0
for pid, ws in by_pid.items():
    for seq, clock, frac, f in ws:
        if seq == 0:
            continue
        later += 1
        if frac != 0:
            bad += 1
            print("    not on a whole second: %s starts at %s" % (f, clock), file=sys.stderr)
print("    %d files of %d processes, %d windows after a first one" % (
    sum(map(len, by_pid.values())), len(by_pid), later))
sys.exit(0 if later >= 2 and bad == 0 else 1)
PY
}

for engine in tree auto; do
	"$EMBERPROF" run -q --engine $engine --interval 1s -o $engine -- python3 -c "$burn" >$engine.out 2>$engine.err
	rc=$?
	if [ $engine = tree ] && [ $rc != 0 ] && grep -q "the kernel refused" $engine.err; then
		echo "--engine tree cannot run here: $(cat $engine.err)"
		continue
	fi
	check_exit "--engine $engine" 0 $rc
	if check_aligned $engine $engine; then
		ok "--engine $engine: every window after a process's first starts on a whole second"
	else
		fail "--engine $engine: windows not aligned on the interval (above)"; ls $engine >&2
	fi
done
done_tests
