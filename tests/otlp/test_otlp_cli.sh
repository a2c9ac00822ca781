# SPDX-License-Identifier: Apache-2.0
# test_otlp_cli.sh - `emberprof run --otlp URL` against the test receiver
# (otlp_receiver.py), which decodes with modules generated from the pinned
# official protos: the same run writes local pprof files, and check_otlp.py
# compares them with what arrived, per stack. Then an outage (503s), a
# restart with the spool, the tree engine. Needs EMBER_OTLP_PROTO_DIR
# (the opentelemetry-proto v1.10.0 checkout's root), protoc and Python's
# protobuf: without them it is skipped (77), saying which is missing.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}" "${EMBER_PYTHON3:?}"
D="$EMBER_TEST_SRCDIR/tests/otlp"
if [ -z "${EMBER_OTLP_PROTO_DIR:-}" ] || [ ! -f "$EMBER_OTLP_PROTO_DIR/opentelemetry/proto/profiles/v1development/profiles.proto" ]; then
	echo "SKIP: EMBER_OTLP_PROTO_DIR does not name an opentelemetry-proto (v1.10.0) checkout's root"
	exit 77
fi
command -v protoc >/dev/null || { echo "SKIP: protoc not installed (protobuf-compiler)"; exit 77; }
"$EMBER_PYTHON3" -c 'import google.protobuf' 2>/dev/null || { echo "SKIP: Python protobuf not installed (python3-protobuf)"; exit 77; }
for v in $(env | sed -n 's/^\(OTEL_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done

servers=""
trap 'for s in $servers; do kill $s 2>/dev/null; done; rm -rf "$T"' EXIT
start() { # DIR ARGS... : starts a receiver, sets $port
	dir=$1
	shift
	rm -f "$T/port"
	"$EMBER_PYTHON3" "$D/otlp_receiver.py" --proto-dir "$EMBER_OTLP_PROTO_DIR" --dir "$dir" \
		--port-file "$T/port" --lifetime 240 "$@" 2>>"$T/receiver.log" &
	servers="$servers $!"
	last=$!
	i=0
	while [ ! -s "$T/port" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	read -r port <"$T/port" || { fail "receiver did not start"; cat "$T/receiver.log" >&2; exit 1; }
}
stop() { kill "$last" 2>/dev/null; wait "$last" 2>/dev/null; }
check() { # NAME ARGS...: check_otlp.py
	name=$1
	shift
	if "$EMBER_PYTHON3" "$D/check_otlp.py" "$@" >"$T/check.out" 2>&1; then
		ok "$name: $(grep -c '^ok' "$T/check.out") checks"
	else
		fail "$name:"
		sed 's/^/    /' "$T/check.out" >&2
	fi
}
windows() { ls "$1" | grep -v -e '\.wall\.' -e '\.memory\.' | grep -c '\.pb\.gz$'; }

# 1. CPU and wall, gzip, generic headers (percent-decoded), resource attributes
start "$T/r1" --expect-gzip --expect-header "x-team=a,b=c" --expect-header "authorization=Bearer t0k"
OTEL_EXPORTER_OTLP_HEADERS='x-team=a%2Cb%3Dc, authorization=Bearer%20t0k' OTEL_EXPORTER_OTLP_COMPRESSION=gzip \
	OTEL_RESOURCE_ATTRIBUTES='deployment.environment=ci,team=ember' \
	"$EMBERPROF" run -q --otlp "http://127.0.0.1:$port" --wall --tag env=ci --thread-labels --interval 1s -o "$T/p1" -- \
	"$EMBER_DEMO" --threads 2 --seconds 2 >"$T/out" 2>"$T/err"
check_exit "run --otlp --wall" 0 $?
stop
check "CPU+wall, gzip, headers" --requests "$T/r1/requests.jsonl" --local "$T/p1" --app "$(basename "$EMBER_DEMO")" \
	--attr deployment.environment=ci --attr team=ember

# 2. allocations (an allocating Python), the signal's endpoint as is, its
# headers replacing the generic ones, OTEL_SERVICE_NAME, no compression
start "$T/r2" --path /custom/profiles --expect-header "x-sig=1" --absent-header x-gen
OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT="http://127.0.0.1:$port/custom/profiles" OTEL_EXPORTER_OTLP_HEADERS='x-gen=1' \
	OTEL_EXPORTER_OTLP_PROFILES_HEADERS='x-sig=1' OTEL_SERVICE_NAME=allocsvc OTEL_EXPORTER_OTLP_COMPRESSION=gzip \
	OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION=none \
	"$EMBERPROF" run -q --alloc=64k --interval 1s -o "$T/p2" -- "$EMBER_PYTHON3" -c '
import time
t = time.time(); keep = []
while time.time() - t < 2.5:
    keep.append(bytearray(3000)); keep = keep[-500:]
' >"$T/out" 2>"$T/err"
check_exit "run with OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT --alloc" 0 $?
stop
ls "$T/p2" | grep -q memory && ok "memory profiles written" || fail "no memory profile"
check "CPU+memory, signal endpoint and headers" --requests "$T/r2/requests.jsonl" --local "$T/p2" --app allocsvc

# 3. an outage: the first requests answered 503, retried in order; the
# generic endpoint with a path (the signal's path appended after it), on
# with EMBERPROF_OTLP=on
start "$T/r3" --fail-first 3 --path /base/v1development/profiles
EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port/base/" "$EMBERPROF" run -q --interval 1s -o "$T/p3" -- "$EMBER_DEMO" --threads 1 --seconds 3 >"$T/out" 2>"$T/err"
check_exit "run through an outage" 0 $?
stop
check "outage: each window once, in order" --requests "$T/r3/requests.jsonl" --local "$T/p3" --app "$(basename "$EMBER_DEMO")" \
	--expect-windows "$(windows "$T/p3")"

# 4. a restart: no receiver during the first run (spooled), then one
start "$T/r4"
stop # its port, now closed
EMBERPROF_OTLP_SPOOL_DIR="$T/spool" "$EMBERPROF" run -q --otlp "http://127.0.0.1:$port" --interval 1s -o "$T/p4" -- \
	"$EMBER_DEMO" --threads 1 --seconds 2 >"$T/out" 2>"$T/err"
check_exit "run with the receiver down" 0 $?
n=$(ls "$T/spool" 2>/dev/null | grep -vc lock)
[ "$n" -ge 1 ] && ok "$n windows spooled" || { fail "nothing spooled"; cat "$T/err" >&2; }
# a spooled window is a request: convert reads it, and gives its body for a replay
ems=$(ls "$T/spool"/*.ems 2>/dev/null | head -1)
"$EMBERPROF" convert --to otlp -o "$T/spooled.otlp" "$ems" && "$EMBERPROF" convert -o "$T/spooled.pb.gz" "$ems" >/dev/null
check_exit "convert a spooled window" 0 $?
"$EMBER_PYTHON3" "$D/otlp_receiver.py" --proto-dir "$EMBER_OTLP_PROTO_DIR" --dir "$T/chk" --check-file "$T/spooled.otlp" >"$T/chk.out" 2>&1 &&
	ok "the spooled body decodes with the pinned protos: $(cat "$T/chk.out")" || { fail "spooled body:"; cat "$T/chk.out" >&2; }
old=$port
start "$T/r4" --port "$old"
EMBERPROF_OTLP_SPOOL_DIR="$T/spool" "$EMBERPROF" run -q --otlp "http://127.0.0.1:$port" --interval 1s -o "$T/p4" -- \
	"$EMBER_DEMO" --threads 1 --seconds 2 >"$T/out" 2>"$T/err"
check_exit "run after the restart" 0 $?
stop
check "restart: spooled then new windows, each once, in order" --requests "$T/r4/requests.jsonl" --local "$T/p4" \
	--app "$(basename "$EMBER_DEMO")" --expect-windows "$(windows "$T/p4")"

# 5. the tree engine (sampled from outside, reporters in emberprof): one
# request per window of each process, with that process's resource
if "$EMBERPROF" run -q --engine tree -o "$T/probe" -- true >/dev/null 2>&1; then
	start "$T/r5"
	"$EMBERPROF" run -q --engine tree --otlp "http://127.0.0.1:$port" --interval 1s -o "$T/p5" -- \
		sh -c "'$EMBER_DEMO' --threads 1 --seconds 1.5 & '$EMBER_DEMO' --threads 1 --seconds 1.5; wait" >"$T/out" 2>"$T/err"
	check_exit "run --engine tree --otlp" 0 $?
	stop
	check "tree engine: per process" --requests "$T/r5/requests.jsonl" --local "$T/p5" --app sh
else
	echo "note: --engine tree cannot run here (perf events): its OTLP check is skipped"
fi

done_tests
