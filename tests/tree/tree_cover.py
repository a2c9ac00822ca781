#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tree_cover.py - what a run's profiles cover, for the coverage tests.

  tree_cover.py run FILE -- ARGV...
      runs ARGV, writes "TOTAL SELF CHILDREN" to FILE, and exits with its
      status: the CPU seconds (user + system) that os.wait4 gives for it,
      its waited-for descendants included; of them, ARGV's own process
      (all its threads) and what it waited for (the fields utime + stime
      and cutime + cstime of /proc/PID/stat, read while it is a zombie, in
      clock ticks). When ARGV is `emberprof run`, CHILDREN is the profiled
      program's tree in that same run, without emberprof's own work.
  tree_cover.py profiles DIR INTERVAL_S
      prints "TOTAL_S FILES MAX_FILES_PER_WINDOW": the cpu/nanoseconds of
      every pprof CPU profile of DIR (wall-clock and memory ones left out) as `go tool pprof -raw` reads them, how many
      files, and the most whose start (pprof time_nanos) falls in one
      window of INTERVAL_S seconds aligned on the epoch.
  tree_cover.py files DIR INTERVAL_S
      prints "NAME CPU_S PIDS WINDOW" for every pprof CPU profile of DIR:
      its CPU, how many processes (distinct pid labels) its samples come
      from, and the number of the epoch-aligned window its start is in.
"""
import os
import re
import subprocess
import sys


def run(out, argv):
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    # exited, not yet reaped: its /proc/PID/stat still holds its counts
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    hz = os.sysconf("SC_CLK_TCK")
    # fields after "(comm)": state is [0], utime [11], stime [12],
    # cutime [13], cstime [14]
    self_s = (int(fields[11]) + int(fields[12])) / hz
    children_s = (int(fields[13]) + int(fields[14])) / hz
    _, status, ru = os.wait4(pid, 0)
    with open(out, "w") as f:
        f.write("%.6f %.6f %.6f\n" % (ru.ru_utime + ru.ru_stime, self_s, children_s))
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)  # as a shell says it
    return os.waitstatus_to_exitcode(status)


def profile(path, pids=None):
    """(cpu ns, time_nanos) of one pprof file; the pid labels of its
    samples added to the set pids where one is given."""
    raw = subprocess.run(["go", "tool", "pprof", "-raw", path], check=True,
                         capture_output=True, text=True).stdout
    lines = raw.splitlines()
    head = lines.index("Samples:") + 1
    types = lines[head].split()
    cols = [i for i, t in enumerate(types) if t.startswith("cpu/nanoseconds")]
    if not cols:
        return None  # a wall-clock or memory profile
    col = cols[0]
    ns = 0
    for line in lines[head + 1:]:
        if not line.startswith(" "):
            break
        if re.match(r"^\s+[A-Za-z_][\w.]*:\[", line):
            if pids is not None:
                pids.update(re.findall(r"\bpid:\[(\d+)\]", line))
            continue  # a sample's labels
        ns += int(line.split(":")[0].split()[col])
    # time_nanos: `go tool pprof -raw` prints it as a date; -traces too.
    # The file name carries the start in ms (APP-YYYYmmddTHHMMSS.mmmZ-PID-SEQ).
    m = re.search(r"-(\d{8}T\d{6})\.(\d{3})Z-\d+-\d+\.pb\.gz$", path)
    if not m:
        return ns, 0
    import calendar
    import time
    t = calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%S")) * 10**9 + int(m.group(2)) * 10**6
    return ns, t


def profiles(d, interval_s):
    total = 0
    per_window = {}
    files = [f for f in os.listdir(d) if f.endswith(".pb.gz")]
    for f in files:
        got = profile(os.path.join(d, f))
        if got is None:
            continue
        ns, t = got
        total += ns
        w = t // int(float(interval_s) * 1e9)
        per_window[w] = per_window.get(w, 0) + 1
    print("%.6f %d %d" % (total / 1e9, len(files), max(per_window.values(), default=0)))


def files(d, interval_s):
    for f in sorted(os.listdir(d)):
        if not f.endswith(".pb.gz"):
            continue
        pids = set()
        got = profile(os.path.join(d, f), pids)
        if got is not None:
            w = got[1] // int(float(interval_s) * 1e9)
            print("%s %.6f %d %d" % (f, got[0] / 1e9, len(pids), w))


if __name__ == "__main__":
    if sys.argv[1] == "run" and sys.argv[3] == "--":
        sys.exit(run(sys.argv[2], sys.argv[4:]))
    if sys.argv[1] == "profiles":
        profiles(sys.argv[2], sys.argv[3])
        sys.exit(0)
    if sys.argv[1] == "files":
        files(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit("usage: tree_cover.py run FILE -- ARGV... | profiles DIR INTERVAL_S | files DIR INTERVAL_S")
