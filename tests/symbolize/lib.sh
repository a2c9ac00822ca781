# SPDX-License-Identifier: Apache-2.0
# lib.sh - helpers of the symbolize tests, sourced after ../cli/lib.sh's
# set-up (scratch directory $T, fail/ok/done_tests, need); the debuginfod
# server of the tests (start_server, below).
#
#   build_programs          bin/sym_c, bin/sym_cxx: -O2 -g; stripped/NAME:
#                           the same file stripped (--strip-all keeps the
#                           build id); debug/NAME.debug: objcopy
#                           --only-keep-debug of it; ids/NAME its build id
#   frames FILE...          frames.py: "BUILDID+0xOFF<TAB>frames" lines
#   same_frames WHAT A B N  the frames of A and B agree on every key both
#                           have, and they share at least N keys
#   has_frame WHAT FILE PATTERN  a line of frames FILE matches (grep -E)
. "$(dirname "$0")/../cli/lib.sh"

need go python3 objcopy strip readelf
SYM_SRC=$(cd "$(dirname "$0")" && pwd)

build_programs() {
	mkdir -p bin stripped debug ids
	${CC:-cc} -O2 -g -Wl,--build-id=sha1 -o bin/sym_c "$SYM_SRC/sym_c.c" ||
		{ echo "cannot build sym_c.c"; exit 1; }
	${CXX:-c++} -O2 -g -Wl,--build-id=sha1 -o bin/sym_cxx "$SYM_SRC/sym_cxx.cpp" ||
		{ echo "cannot build sym_cxx.cpp"; exit 1; }
	for p in sym_c sym_cxx; do
		cp "bin/$p" "stripped/$p" && strip --strip-all "stripped/$p" &&
			objcopy --only-keep-debug "bin/$p" "debug/$p.debug" || exit 1
		readelf -n "stripped/$p" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' >"ids/$p"
		[ -s "ids/$p" ] || { echo "stripped/$p has no build id"; exit 1; }
	done
}

frames() {
	HOME=$T GOCACHE=$T/gocache python3 "$SYM_SRC/frames.py" "$@"
}

same_frames() {
	join -t "$(printf '\t')" "$2" "$3" >"$T/joined"
	n=$(wc -l <"$T/joined")
	bad=$(awk -F '\t' '$2 != $3' "$T/joined" | head -5)
	if [ -n "$bad" ]; then
		fail "$1: frames differ at the same address: $bad"
	elif [ "$n" -lt "$4" ]; then
		fail "$1: only $n addresses in common (expected >= $4)"
	else
		ok "$1: the same frames at all $n addresses in common"
	fi
}

has_frame() {
	if grep -E -q "$3" "$2"; then
		ok "$1"
	else
		fail "$1: no frame matches /$3/ in $2"
		head -20 "$2" | sed 's/^/    /' >&2
	fi
}

# The debuginfod server of the tests (Debian's `debuginfod`):
#   start_server   serves $T/srv on a free port once it serves ids/sym_c's
#                  debug file; sets URL and DPID
#   stop_server    stops it (if running)
#   free_port      a TCP port nobody listens on (now)
DPID=
stop_server() {
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
		DPID=
	fi
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# (0.188 has no listen-address option; it is only ever asked at 127.0.0.1)
start_server() {
	port=$(free_port)
	debuginfod -p "$port" -F "$T/srv" -d "$T/db.sqlite" -t 0 -g 0 >>"$T/debuginfod.log" 2>&1 &
	DPID=$!
	URL=http://127.0.0.1:$port
	# ready once it serves a debug file it indexed (a wait, not a check)
	python3 - "$URL" "$(cat ids/sym_c)" <<'PY' || { fail "debuginfod never served"; cat "$T/debuginfod.log" >&2; done_tests; }
import sys, time, urllib.request
for _ in range(1200):
    try:
        with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (sys.argv[1], sys.argv[2]), timeout=5) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.1)
sys.exit(1)
PY
	ok "debuginfod serving at $URL"
}
