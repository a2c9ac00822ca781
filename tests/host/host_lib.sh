# SPDX-License-Identifier: Apache-2.0
# host_lib.sh - helpers of the tests/host scripts, on top of tests/cli/lib.sh
# (scratch directory, ok/fail, check_exit, check_grep, done_tests).
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_HOST_BINDIR:?EMBER_HOST_BINDIR must name the tests/host build directory}"
H=$EMBER_HOST_BINDIR


# alive PID : the process exists and is not a zombie (a container's init
# may be slow to reap an orphan).
alive() {
	[ -r "/proc/$1/stat" ] || return 1
	state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# profiles DIR : number of CPU pprof files in DIR.
profiles() {
	ls "$1" 2>/dev/null | grep -c '\.pb\.gz$'
}

# cpu_of FUNCTION FILE... : FUNCTION's flat CPU in ms per `emberprof top`
# (empty if absent).
cpu_of() {
	f=$1
	shift
	"$EMBERPROF" top --n 50 "$@" 2>/dev/null | awk -v f="$f" '
		$5 == f { v = $1; if (v ~ /ms$/) { sub(/ms$/, "", v); print int(v) }
			  else if (v ~ /s$/) { sub(/s$/, "", v); print int(v * 1000) }
			  else if (v ~ /us$/) print 0; exit }'
}

# refused_port : a TCP port on 127.0.0.1 that nothing listens on (bound,
# then closed: connections to it are refused at once).
refused_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
