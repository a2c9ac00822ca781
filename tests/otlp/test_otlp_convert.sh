# SPDX-License-Identifier: Apache-2.0
# test_otlp_convert.sh - `emberprof convert`: a window's pprof files (CPU,
# wall) to one OTLP request and back, equal per stack, value for value;
# a JFR recording the same way; bad input refused. Runs without the
# protos (the files are compared with check_otlp.py's own pprof reader);
# with EMBER_OTLP_PROTO_DIR set, the requests are also decoded with the
# pinned official protos (otlp_receiver.py --check-file).
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_DEMO:?}" "${EMBER_PYTHON3:?}"
D="$EMBER_TEST_SRCDIR/tests/otlp"
same() { if "$EMBER_PYTHON3" "$D/check_otlp.py" --same "$1" "$2" >"$T/same.out" 2>&1; then ok "$(cat "$T/same.out" | cut -c6-)"; else fail "$(cat "$T/same.out")"; fi; }

"$EMBERPROF" run -q --wall --thread-labels --tag env=ci --interval 1s --format both -o "$T/p" -- "$EMBER_DEMO" --threads 2 --seconds 2 >"$T/out" 2>"$T/err"
check_exit "run --wall --format both" 0 $?
# the first window with both a CPU and a wall profile (a short first
# window on a loaded machine may have no CPU sample)
cpu="" wall=""
for w in "$T"/p/*.wall.pb.gz; do
	c="${w%.wall.pb.gz}.pb.gz"
	if [ -f "$c" ]; then cpu=$c wall=$w; break; fi
done
[ -n "$cpu" ] || { fail "no window with CPU and wall profiles"; ls "$T/p" >&2; done_tests; }

"$EMBERPROF" convert --service demo -o "$T/w0.otlp" "$cpu" "$wall"
check_exit "convert pprof -> otlp" 0 $?
"$EMBERPROF" convert --service demo --gzip -o "$T/w0.otlp.gz" "$cpu" "$wall"
check_exit "convert pprof -> otlp --gzip" 0 $?
"$EMBERPROF" convert -o "$T/back.pb.gz" "$T/w0.otlp" >"$T/names"
check_exit "convert otlp -> pprof" 0 $?
same "$cpu" "$T/back.pb.gz"
same "$wall" "$T/back.pb.gz.1"
"$EMBERPROF" convert -o "$T/backz.pb.gz" "$T/w0.otlp.gz" >/dev/null
check_exit "convert gzip'd otlp -> pprof" 0 $?
same "$cpu" "$T/backz.pb.gz"

jfr="${cpu%.pb.gz}.jfr" # the same window's recording
if [ -f "$jfr" ]; then
	"$EMBERPROF" convert --to pprof -o "$T/jfr.pb.gz" "$jfr" &&
		"$EMBERPROF" convert -o "$T/jfr.otlp" "$jfr" &&
		"$EMBERPROF" convert -o "$T/jfr-back.pb.gz" "$T/jfr.otlp" >/dev/null
	check_exit "convert jfr -> otlp -> pprof" 0 $?
	same "$T/jfr.pb.gz" "$T/jfr-back.pb.gz"
else
	fail "no JFR recording written"
fi

if [ -n "${EMBER_OTLP_PROTO_DIR:-}" ]; then
	if "$EMBER_PYTHON3" "$D/otlp_receiver.py" --proto-dir "$EMBER_OTLP_PROTO_DIR" --dir "$T/chk" \
		--check-file "$T/w0.otlp" --check-file "$T/w0.otlp.gz" ${jfr:+--check-file "$T/jfr.otlp"} >"$T/chk.out" 2>&1; then
		ok "converted requests decode with the pinned protos: $(tr '\n' ' ' <"$T/chk.out")"
	else
		fail "converted requests fail the pinned protos:"
		cat "$T/chk.out" >&2
	fi
else
	echo "note: EMBER_OTLP_PROTO_DIR not set: the converted requests were not decoded with the official protos"
fi

"$EMBERPROF" convert -o "$T/x" "$T/err" >"$T/out" 2>"$T/cerr"
check_exit "convert of a text file" 1 $?
check_grep "bad input named" "$T/cerr" "$T/err"
"$EMBERPROF" convert "$cpu" >"$T/out" 2>"$T/cerr"
check_exit "convert without -o" 2 $?
"$EMBERPROF" convert --to jfr -o "$T/x" "$cpu" >"$T/out" 2>"$T/cerr"
check_exit "convert --to jfr" 2 $?
done_tests
