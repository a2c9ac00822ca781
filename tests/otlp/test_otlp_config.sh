# SPDX-License-Identifier: Apache-2.0
# test_otlp_config.sh - the OTLP reporter's configuration through
# `emberprof run`: each bad value is one clear error naming the variable,
# before the program runs. No receiver or protos needed.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_DEMO:?}"
for v in $(env | sed -n 's/^\(OTEL_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
# bad configuration: one clear error naming the variable, the program not run
bad() { # WHAT WANT ENV... -- (ARGS to run)
	what=$1 want=$2
	shift 2
	env "$@" "$EMBERPROF" run -- "$EMBER_DEMO" --seconds 0.1 >"$T/out" 2>"$T/err"
	check_exit "$what" 2 $?
	check_grep "$what" "$T/err" "$want"
	[ "$(grep -c . "$T/err")" -eq 1 ] || fail "$what: more than one line of error"
}
bad "URL without scheme" "EMBERPROF_OTLP_URL" EMBERPROF_OTLP_URL=127.0.0.1:4318
bad "signal URL without scheme" "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT" OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT=localhost:4318/v1development/profiles
bad "unknown compression" 'OTEL_EXPORTER_OTLP_COMPRESSION: "zstd"' EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_COMPRESSION=zstd
bad "unknown signal compression" "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION" EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION=br
bad "header without =" 'OTEL_EXPORTER_OTLP_HEADERS: entry "novalue"' EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_HEADERS=a=1,novalue
bad "header bad escape" "OTEL_EXPORTER_OTLP_PROFILES_HEADERS" EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_PROFILES_HEADERS=a=%zz
bad "header bad name" "is not a header name" EMBERPROF_OTLP=on "OTEL_EXPORTER_OTLP_HEADERS=a b=1"
bad "bad timeout" "OTEL_EXPORTER_OTLP_TIMEOUT" EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_TIMEOUT=10s
bad "bad resource attributes" "OTEL_RESOURCE_ATTRIBUTES" EMBERPROF_OTLP=on OTEL_RESOURCE_ATTRIBUTES=novalue
# a variable set to a good value alongside: no error
env EMBERPROF_OTLP=off OTEL_EXPORTER_OTLP_COMPRESSION=zstd "$EMBERPROF" run -q -o "$T/p" -- "$EMBER_DEMO" --seconds 0.1 >"$T/out" 2>"$T/err"
check_exit "EMBERPROF_OTLP=off: the OTEL_* variables are not read" 0 $?
bad "gRPC asked" "OTEL_EXPORTER_OTLP_PROTOCOL" EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_PROTOCOL=grpc
env EMBERPROF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1 OTEL_EXPORTER_OTLP_PROTOCOL=grpc \
	OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL=http/protobuf "$EMBERPROF" run -q -o "$T/p" -- "$EMBER_DEMO" --seconds 0.1 >"$T/out" 2>"$T/err"
check_exit "the signal's protocol overrides the generic one" 0 $?
bad "EMBERPROF_OTLP not a boolean" "EMBERPROF_OTLP" EMBERPROF_OTLP=maybe
done_tests
