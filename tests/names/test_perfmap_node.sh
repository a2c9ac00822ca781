# SPDX-License-Identifier: Apache-2.0
# test_perfmap_node.sh - node --perf-basic-prof writes /tmp/perf-PID.map,
# as perf expects: a hot JS function is named from it (V8's "JS:*hotLoop
# FILE:LINE:COL") in a mapping named after the map. Without the flag the
# same run has no such name (the control: the names come from the map).
. "$(dirname "$0")/lib.sh"
command -v node >/dev/null 2>&1 || { echo "node not installed (scripts/setup-deps.sh installs it): skipped"; exit 77; }
cat >"$T/hot.js" <<'JSEOF'
function hotLoop(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + i * i) % 1000003;
  return s;
}
let t = 0;
const end = process.cpuUsage().user + 1.5e6;
while (process.cpuUsage().user < end) t += hotLoop(1e6);
console.log(t > 0);
JSEOF

# the perf maps node leaves behind, by the pids in our profiles' names
cleanup_maps() {
	for f in "$1"/*.pb.gz; do
		[ -e "$f" ] || continue
		pid=$(basename "$f" | sed -n 's/.*-\([0-9][0-9]*\)-[0-9]*\.pb\.gz$/\1/p')
		[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
	done
}

profile "$T/n" --rate 1000 --log-level info -- node --perf-basic-prof "$T/hot.js"
cleanup_maps "$T/n"
check_grep "node" "$T/n.out" "true"
if grep -q "M=[0-9]* JS:[*~^]*hotLoop $T/hot.js:" "$T/n.raw"; then
	ok "node: hotLoop named from the perf map"
else
	fail "node: no JS:hotLoop location:"
	grep -i "hotloop\|perf map" "$T/n.raw" "$T/n.err" | head -5 | sed 's/^/    /' >&2
fi
check_grep "node: JIT mapping" "$T/n.raw" "/tmp/perf-"
check_grep "node: map read" "$T/n.err" "JIT symbols from"
check_first_mapping "node" "$T/n" "$(readlink -f "$(command -v node)")"

profile "$T/c" --rate 1000 -- node "$T/hot.js"
cleanup_maps "$T/c"
check_no_grep "node without --perf-basic-prof" "$T/c.raw" "hotLoop"
done_tests
