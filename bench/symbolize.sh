#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# symbolize.sh - how fast `emberprof symbolize` names a big unsymbolized
# profile (docs/BENCHMARKS.md section 16): 100,000 samples of depth 8
# over 20,000 distinct addresses of a real program with DWARF (a copy of
# the emberprof command of BUILD_DIR, RelWithDebInfo: ~2 MB of code),
# written by bench/symbolize_gen.c as an EMBERPROF_SYMBOLIZE=0 run writes
# profiles. Three sources of names, each ROUNDS times (wall, CPU = user +
# sys and peak RSS of the whole command, /usr/bin/time; medians):
#
#   debuginfod-warm  the profile names a stripped copy; its debug file is
#                    in the debuginfod client's cache (DEBUGINFOD_CACHE_PATH
#                    laid out as libdebuginfod lays it out) and
#                    DEBUGINFOD_URLS names a port nothing listens on: a
#                    warm cache needs no server
#   debug-dir        the same stripped copy, its debug file under
#                    --debug-dir DIR/.build-id/xx/rest.debug
#   own-dwarf        the profile names the unstripped copy itself
#
# A benchmark: it prints numbers and judges nothing.
#
#     bash bench/symbolize.sh BUILD_DIR [ROUNDS]     (ROUNDS default 5)
set -euo pipefail

B=$(cd "${1:?usage: bench/symbolize.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-5}
E=$B/emberprof
GEN=$B/bench/ember_bench_symbolize_gen
[ -x "$GEN" ] || { echo "build it first: cmake --build $B --target ember_bench_symbolize_gen emberprof_cli" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ember-symbench-XXXXXX")
trap 'rm -rf "$T"' EXIT

cp "$E" "$T/prog"
strip --strip-all -o "$T/prog.stripped" "$T/prog"
objcopy --only-keep-debug "$T/prog" "$T/prog.debug"
id=$(readelf -n "$T/prog.stripped" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
mkdir -p "$T/cache/$id" "$T/dd/.build-id/${id:0:2}"
cp "$T/prog.debug" "$T/cache/$id/debuginfo"
cp "$T/prog.debug" "$T/dd/.build-id/${id:0:2}/${id:2}.debug"
"$GEN" "$T/prog.stripped" "$T/stripped.pb.gz"
"$GEN" "$T/prog" "$T/own.pb.gz"

# run NAME INPUT ARGS...: ROUNDS timed runs; prints the medians
run() {
	local name=$1 in=$2
	shift 2
	: >"$T/times"
	for _ in $(seq "$ROUNDS"); do
		rm -f "$T/out.pb.gz"
		/usr/bin/time -f "%e %U %S %M" -o "$T/t1" "$@" -o "$T/out.pb.gz" "$in" 2>"$T/said"
		cat "$T/t1" >>"$T/times"
	done
	python3 - "$name" "$T/times" "$(tail -1 "$T/said")" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
med = lambda v: statistics.median(v)
print("%-16s  wall %5.2f s   cpu %5.2f s   rss %6.1f MB   (%s)" % (sys.argv[1],
      med([r[0] for r in rows]), med([r[1] + r[2] for r in rows]),
      med([r[3] for r in rows]) / 1024, sys.argv[3]))
PY
}

echo "symbolize: 100000 samples, 20000 addresses, depth 8, of $(basename "$E") ($(stat -c %s "$T/prog") bytes); $ROUNDS rounds, medians"
DEBUGINFOD_CACHE_PATH=$T/cache DEBUGINFOD_URLS=http://127.0.0.1:1 XDG_CACHE_HOME=$T/xdg \
	run debuginfod-warm "$T/stripped.pb.gz" "$E" symbolize
run debug-dir "$T/stripped.pb.gz" env -u DEBUGINFOD_URLS "$E" symbolize --debug-dir "$T/dd"
run own-dwarf "$T/own.pb.gz" env -u DEBUGINFOD_URLS "$E" symbolize
