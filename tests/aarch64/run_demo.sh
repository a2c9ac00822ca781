#!/usr/bin/env bash
# `emberprof run` on aarch64 under qemu-user, read back on the host
# (issue 17): the aarch64 CLI (under qemu-aarch64) runs the aarch64 demo
# with its aarch64 libemberprof preloaded and writes pprof files; the
# host's `go tool pprof` must read them with the demo's symbols, the CPU
# split hot_a : hot_b must be 75 +- 5 %, and >= 99 % of the hot samples
# must carry a complete chain down to the thread's start.
#   tests/aarch64/run_demo.sh BUILD_DIR
# qemu-user cannot execve a foreign binary without binfmt_misc, so the
# program given to `emberprof run` is a host shell script that exec's
# qemu-aarch64 with the demo: the environment `run` sets (LD_PRELOAD, the
# EMBERPROF_* settings) reaches the emulated demo through qemu. The host
# shell's loader ignores the aarch64 LD_PRELOAD with a warning.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
command -v go >/dev/null || { echo "SKIP: go not found (golang-go)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/demo.sh" <<WRAP
#!/bin/sh
exec qemu-aarch64 "$B/emberprof_demo" "\$@"
WRAP
chmod +x "$tmp/demo.sh"
qemu-aarch64 "$B/emberprof" run --output "$tmp/out" -- "$tmp/demo.sh" \
  > "$tmp/run.log" 2>&1 || { grep -v "wrong ELF class" "$tmp/run.log"; echo "FAIL: emberprof run"; exit 1; }
ls "$tmp"/out/*.pb.gz >/dev/null 2>&1 || { echo "FAIL: no profile written"; exit 1; }
go tool pprof -raw "$tmp"/out/*.pb.gz > "$tmp/raw.txt" 2>"$tmp/pprof.err" ||
  { cat "$tmp/pprof.err"; echo "FAIL: go tool pprof cannot read the profiles"; exit 1; }
# -raw: samples ("count ns: id id ...") then locations ("id: 0xaddr M=n func file:line");
# a sample's stack is listed leaf first.
python3 - "$tmp/raw.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
locs = {}
for m in re.finditer(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", text, re.M):
    locs.setdefault(m.group(1), m.group(2))
samples = []
sec = text.split("Locations")[0]
for m in re.finditer(r"^\s+\d+\s+(\d+): ((?:\d+ )*\d+)\s*$", sec, re.M):
    samples.append((int(m.group(1)), [locs.get(i, "?") for i in m.group(2).split()]))
a = sum(w for w, s in samples if s and s[0] == "hot_a")
b = sum(w for w, s in samples if s and s[0] == "hot_b")
hot = [(w, s) for w, s in samples if s and s[0] in ("hot_a", "hot_b")]
complete = sum(w for w, s in hot if s[-1] == "thread_start" and "start_thread" in s)
total = sum(w for w, s in hot)
if not total:
    sys.exit("FAIL: no samples in hot_a/hot_b (symbols not resolved?)")
share, comp = 100.0 * a / (a + b), 100.0 * complete / total
print(f"aarch64 demo: hot_a {share:.1f} % of hot_a + hot_b, complete chains {comp:.1f} % "
      f"of {len(hot)} hot stacks")
ok = 70 <= share <= 80 and comp >= 99
sys.exit(0 if ok else "FAIL: want 75 +- 5 % and >= 99 % complete")
PY
