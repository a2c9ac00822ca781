#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# attach.sh - how long `emberprof attach` takes to start and to end on a
# process of 100 threads (python3, 99 threads asleep and its main thread
# waiting on stdin): "attached in" (the events open on every thread,
# listings repeated until stable: sampling runs from there), the agent's
# start with --wall ("agent started in": the library loaded and its agent
# running), and the whole command less its --duration (emberprof's own
# start, the attach, the detach, the final profiles and the summary).
# Medians of EMBER_BENCH_ROUNDS (7) runs, lowest and highest beside them.
#
#     bash bench/attach.sh BUILD_DIR
#
# Judges nothing: docs/BENCHMARKS.md holds the figures.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bash bench/attach.sh BUILD_DIR" >&2; exit 2; }
EP=$(cd "$1" && pwd)/emberprof
rounds=${EMBER_BENCH_ROUNDS:-7}
T=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null; rm -rf "$T"' EXIT
mkfifo "$T/ctl"
python3 -c '
import sys, threading, time
for i in range(99):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
' <"$T/ctl" >"$T/ready" &
pid=$!
exec 3>"$T/ctl"
while ! grep -q ready "$T/ready"; do sleep 0.05; done
echo "process $pid: $(ls /proc/$pid/task | wc -l) threads"

stats() { # values... -> "median (lowest-highest)"
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
ms() { echo $(($(date +%s%N) / 1000000)); }

for mode in cpu wall; do
	opt=
	[ $mode = wall ] && opt=--wall
	starts=() totals=()
	for r in $(seq "$rounds"); do
		t0=$(ms)
		"$EP" attach -q $opt --duration 200ms -o "$T/out.$mode.$r" "$pid" 2>"$T/err" >/dev/null
		t1=$(ms)
		if [ $mode = cpu ]; then
			s=$(sed -n 's/.*attached to .* in \([0-9]*\) ms.*/\1/p' "$T/err")
		else
			s=$(sed -n 's/.*agent started in .* in \([0-9]*\) ms.*/\1/p' "$T/err")
		fi
		starts+=("$s")
		totals+=($((t1 - t0 - 200)))
	done
	echo "$mode: start $(stats "${starts[@]}") ms; the command less its 200 ms: $(stats "${totals[@]}") ms"
done
