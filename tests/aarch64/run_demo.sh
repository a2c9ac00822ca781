#!/usr/bin/env bash
# `emberprof run` on aarch64 under qemu-user, read back on the host
# (issue 17): the aarch64 CLI (under qemu-aarch64) runs an aarch64 program
# with its aarch64 libemberprof preloaded and writes pprof files; the
# host's `go tool pprof` must read them with the program's symbols, the
# CPU split of its two leaves must be 75 +- 5 %, and >= 99 % of the leaves'
# samples must carry a complete chain through the thread function down to
# glibc's start_thread. Two programs: the demo (hot_a : hot_b) and the
# benchmark workload (bench/workload.c, 2 threads, 60 % of its default
# work, sampled at 1 kHz: work_a : work_b under stage_one/stage_two and
# main_loop).
#   tests/aarch64/run_demo.sh BUILD_DIR
# qemu-user cannot execve a foreign binary without binfmt_misc, so the
# program given to `emberprof run` is a host shell script that exec's
# qemu-aarch64 with the program: the environment `run` sets (LD_PRELOAD,
# the EMBERPROF_* settings) reaches the emulated program through qemu. The
# host shell's loader ignores the aarch64 LD_PRELOAD with a warning.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
command -v go >/dev/null || { echo "SKIP: go not found (golang-go)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# check NAME LEAF_A LEAF_B ROOT PROGRAM [ARGS...]: run PROGRAM under the
# aarch64 emberprof, then require LEAF_A's share of LEAF_A + LEAF_B and
# chains from the leaves down to ROOT and start_thread.
check() {
	local name=$1 a=$2 b=$3 root=$4
	shift 4
	printf '#!/bin/sh\nexec qemu-aarch64 "%s" "$@"\n' "$1" > "$tmp/$name.sh"
	chmod +x "$tmp/$name.sh"
	shift
	qemu-aarch64 "$B/emberprof" run ${run_opts:-} --output "$tmp/out-$name" -- "$tmp/$name.sh" "$@" \
		> "$tmp/$name.log" 2>&1 ||
		{ grep -v "wrong ELF class" "$tmp/$name.log"; echo "FAIL: $name: emberprof run"; return 1; }
	ls "$tmp/out-$name"/*.pb.gz >/dev/null 2>&1 || { echo "FAIL: $name: no profile written"; return 1; }
	go tool pprof -raw "$tmp/out-$name"/*.pb.gz > "$tmp/$name.raw" 2>"$tmp/pprof.err" ||
		{ cat "$tmp/pprof.err"; echo "FAIL: $name: go tool pprof cannot read the profiles"; return 1; }
	# -raw: samples ("count ns: id id ...") then locations ("id: 0xaddr M=n
	# func file:line"); a sample's stack is listed leaf first.
	python3 - "$tmp/$name.raw" "$name" "$a" "$b" "$root" <<'PY'
import re, sys
path, name, fa, fb, root = sys.argv[1:]
text = open(path).read()
locs = {}
for m in re.finditer(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", text, re.M):
    locs.setdefault(m.group(1), m.group(2))
samples = []
sec = text.split("Locations")[0]
for m in re.finditer(r"^\s+\d+\s+(\d+): ((?:\d+ )*\d+)\s*$", sec, re.M):
    samples.append((int(m.group(1)), [locs.get(i, "?") for i in m.group(2).split()]))
a = sum(w for w, s in samples if s and s[0] == fa)
b = sum(w for w, s in samples if s and s[0] == fb)
hot = [(w, s) for w, s in samples if s and s[0] in (fa, fb)]
complete = sum(w for w, s in hot if root in s and "start_thread" in s[s.index(root):])
total = sum(w for w, s in hot)
if not total:
    sys.exit(f"FAIL: aarch64 {name}: no samples in {fa}/{fb} (symbols not resolved?)")
share, comp = 100.0 * a / (a + b), 100.0 * complete / total
print(f"aarch64 {name}: {fa} {share:.1f} % of {fa} + {fb}, complete chains {comp:.1f} % "
      f"of {len(hot)} stacks")
ok = 70 <= share <= 80 and comp >= 99
sys.exit(0 if ok else f"FAIL: aarch64 {name}: want 75 +- 5 % and >= 99 % complete")
PY
}

status=0
check demo hot_a hot_b worker_main "$B/emberprof_demo" || status=1
# (at 1 kHz, ~3 s of CPU under qemu: sampling noise well inside 5 %)
run_opts="--rate 1000" check workload work_a work_b thread_main "$B/bench/ember_bench_workload" 2 12000 62500 ||
	status=1
exit $status
