# SPDX-License-Identifier: Apache-2.0
# test_cli_asprof.sh - `emberprof run --backend asprof --server URL` runs the
# demo under the (stand-in) async-profiler, preloaded, and the fake Pyroscope
# server receives one JFR recording per window at /ingest?format=jfr; the
# stand-in saw exactly start/stop pairs; bad backend settings are refused
# before the program runs, naming the option or the variable.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_DEMO:?}" "${EMBER_PYTHON3:?}" "${EMBER_FAKE_SERVER:?}" "${EMBER_FAKE_ASPROF:?}"
for v in $(env | sed -n 's/^\(PYROSCOPE_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done

"$EMBER_PYTHON3" "$EMBER_FAKE_SERVER" --dir "$T/recv" --port-file "$T/ports" --lifetime 150 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$T"' EXIT
i=0
while [ ! -s "$T/ports" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
read -r port ctl <"$T/ports" || { echo "FAIL: fake server did not start" >&2; exit 1; }
ctl_get() { "$EMBER_PYTHON3" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "http://127.0.0.1:$ctl$1"; }
show() { ctl_get "/show?n=$1" | awk -F '\t' -v k="$2" '$1 == k { print $2 }'; }

FAKE_ASPROF_LOG=$T/asprof.log EMBERPROF_ASPROF_LIB=$EMBER_FAKE_ASPROF EMBERPROF_ASPROF_CPU_INTERVAL=10ms \
	"$EMBERPROF" run --backend asprof --server "http://127.0.0.1:$port" --interval 500ms \
	-- "$EMBER_DEMO" --threads 1 --seconds 1 >out 2>err
check_exit "run --backend asprof" 0 $?
set -- $(ctl_get /count)
accepted=${1:-0}
if [ "$accepted" -ge 1 ] && [ "${2:-1}" -eq 0 ]; then ok "the server accepted $accepted recording(s)"; else
	fail "the server accepted $accepted, rejected ${2:-?}:"; sed 's/^/    /' err >&2; fi
starts=$(grep -c '^exec start,event=cpu,interval=10000000,wall=1000ms,jfr,cstack=dwarf,file=/proc/self/fd/' "$T/asprof.log")
stops=$(grep -c '^exec stop$' "$T/asprof.log")
dumps=$(grep -c '^exec dump,jfr$' "$T/asprof.log")
# one start and one stop; a dump at every boundary between
[ "$starts" -eq 1 ] && [ "$stops" -eq 1 ] && [ $((dumps + 1)) -eq "$accepted" ] &&
	ok "$starts start, $dumps dumps, $stops stop, $accepted uploads" ||
	fail "$starts starts, $dumps dumps, $stops stops, $accepted uploads"
[ "$(show 0 query.format)" = jfr ] && ok "format=jfr" || fail "format: $(show 0 query.format)"
[ "$(show 0 query.sampleRate)" = 100 ] && ok "sampleRate from the CPU interval" || fail "sampleRate: $(show 0 query.sampleRate)"
[ "$(show 0 label.service_name)" = "$(basename "$EMBER_DEMO")" ] && ok "service_name is the command's name" ||
	fail "service_name: $(show 0 label.service_name)"
last=$((accepted - 1))
grep -q "window $accepted: start," "$(show $last file)" && ok "the last upload is the final window" ||
	fail "the last upload does not hold window $accepted"

# -o DIR: one .jfr file per window, each the recording of its window.
FAKE_ASPROF_LOG=$T/asprof2.log EMBERPROF_ASPROF_LIB=$EMBER_FAKE_ASPROF \
	"$EMBERPROF" run --backend asprof -o "$T/jfr" --interval 500ms \
	-- "$EMBER_DEMO" --threads 1 --seconds 1 >out 2>err
check_exit "run --backend asprof -o" 0 $?
windows=$(grep -c '^\(dumped\|wrote\) window=' "$T/asprof2.log")
files=$(ls "$T/jfr" | grep -c '\.jfr$')
[ "$files" -ge 1 ] && [ "$files" -eq "$windows" ] && ok "$files .jfr files for $windows windows" ||
	fail "$files .jfr files for $windows windows"
k=1
for f in $(ls "$T/jfr" | grep '\.jfr$' | sort -t- -k4,4n); do # <app>-<time>-<pid>-<seq>.jfr
	grep -q "window $k: start," "$T/jfr/$f" || fail "$f is not window $k"
	k=$((k + 1))
done
[ $k -gt 1 ] && ok "the files hold windows 1..$((k - 1)) in order"
check_grep "the summary counts them" err "JFR recording"

bad() { # WHAT EXPECTED-IN-STDERR ARGS...
	what=$1 want=$2
	shift 2
	"$EMBERPROF" run "$@" -- "$EMBER_DEMO" --seconds 0.1 >out 2>err
	check_exit "$what" 2 $?
	check_grep "$what" err "$want"
	check_no_grep "$what: program did not run" out "expected profile"
}
bad "unknown backend" "invalid --backend" --backend jvm --server "http://127.0.0.1:$port"
bad "pprof files from async-profiler" "jfr only" --backend asprof --format pprof -o "$T/x"
EMBERPROF_ASPROF_LIB=libasyncProfiler.so bad "relative library" "EMBERPROF_ASPROF_LIB" --backend asprof --server "http://127.0.0.1:$port"
EMBERPROF_ASPROF_NATIVEMEM=1m,x bad "nativemem with a comma" "EMBERPROF_ASPROF_NATIVEMEM" --backend asprof --server "http://127.0.0.1:$port"
# A missing library: the program runs unprofiled, and says why.
EMBERPROF_ASPROF_LIB=/nonexistent/libasyncProfiler.so "$EMBERPROF" run --backend asprof \
	--server "http://127.0.0.1:$port" -- "$EMBER_DEMO" --seconds 0.1 >out 2>err
check_exit "missing library: the program still runs" 0 $?
check_grep "missing library" err "cannot load async-profiler"
done_tests
