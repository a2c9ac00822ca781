# SPDX-License-Identifier: Apache-2.0
# test_lines.sh - --lines (EMBERPROF_LINES), in the library and in the
# tree engine: by default (app) the program's own code gets file and line
# and system libraries under /lib and /usr/lib (libc) do not; all gives
# libc its lines too where its debug information is installed (libc6-dbg);
# none gives no line anywhere. Read in `go tool pprof -raw`.
. "$(dirname "$0")/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"
need go

# modules_with_lines DIR: the mapped files that have a location with a
# source line (FILE:N, N > 0) in a profile of DIR, one a line
modules_with_lines() {
	for f in "$1"/*.pb.gz; do
		HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$f" 2>/dev/null
	done | awk '
		/^PeriodType:/ { delete lined; sec = "" }
		/^Locations/ { sec = "L"; next }
		/^Mappings/ { sec = "M"; next }
		sec == "L" && / M=[0-9]+ / && / [^ ]*:[1-9][0-9]* s=[0-9]+$/ && match($0, /M=[0-9]+/) {
			lined[substr($0, RSTART + 2, RLENGTH - 2)] = 1
		}
		sec == "M" && $1 ~ /^[0-9]+:$/ {
			m = $1; sub(":", "", m)
			if (m in lined) print $3
		}' | sort -u
}

# libc's separate debug file, by its build-id: without it no setting can
# give libc lines
libc=$(ldd "$EMBER_DEMO" | sed -n 's/.*=> \(\/[^ ]*libc\.so\.6\) .*/\1/p')
id=$(readelf -n "$libc" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
libc_dbg=
if [ -n "$id" ] && [ -e "/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug" ]; then
	libc_dbg=1
fi

engines=auto
if "$EMBERPROF" run -q --engine tree -o probe -- true >/dev/null 2>&1; then
	engines="auto tree"
else
	echo "note: --engine tree cannot run here: the library only"
fi

for engine in $engines; do
	for lines in default none all; do
		name="--engine $engine, --lines $lines"
		set -- --engine "$engine"
		[ "$lines" = default ] || set -- "$@" --lines "$lines"
		"$EMBERPROF" run -q --rate 200 "$@" -o "$engine-$lines" -- \
			"$EMBER_DEMO" --threads 1 --seconds 0.5 >/dev/null 2>err
		rc=$?
		check_exit "$name" 0 $rc
		modules_with_lines "$engine-$lines" >lined
		echo "$name: lines in $(tr '\n' ' ' <lined)"
		case $lines in
		default)
			check_grep "$name: the program's lines" lined "$(basename "$EMBER_DEMO")"
			if grep -E -q '^/(usr/)?lib' lined; then
				fail "$name: a system library has lines: $(grep -E '^/(usr/)?lib' lined | tr '\n' ' ')"
			else
				ok "$name: no system library has lines"
			fi
			;;
		none)
			if [ -s lined ]; then
				fail "$name: lines in $(tr '\n' ' ' <lined)"
			else
				ok "$name: no module has lines"
			fi
			;;
		all)
			check_grep "$name: the program's lines" lined "$(basename "$EMBER_DEMO")"
			if [ -n "$libc_dbg" ]; then
				check_grep "$name: libc's lines" lined "libc.so.6"
			else
				echo "note: no debug file for $libc (libc6-dbg): libc's lines not checked"
			fi
			;;
		esac
	done
done
done_tests
