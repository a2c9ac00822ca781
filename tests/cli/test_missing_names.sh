# SPDX-License-Identifier: Apache-2.0
# test_missing_names.sh - the run summary and `emberprof top` say what
# share of the samples has no function name, per module, and what would
# name it (debug packages, DEBUGINFOD_URLS, emberprof symbolize); a
# profile with names gets no such word; `emberprof version` says which
# sources of names this machine has.
. "$(dirname "$0")/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"
need gzip readelf
if readelf -SW /usr/bin/gzip | grep -q ' \.symtab '; then
	echo "/usr/bin/gzip is not stripped: nothing to test"
	exit 77
fi
id=$(readelf -nW /usr/bin/gzip | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
if [ -e "/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug" ]; then
	echo "gzip's debug file is installed: its functions have names"
	exit 77
fi

# version: the sources of names, DEBUGINFOD_URLS as set
env -u DEBUGINFOD_URLS "$EMBERPROF" version >ver 2>&1
check_grep "version" ver "names for stripped code:"
check_grep "version" ver "DEBUGINFOD_URLS unset"
check_grep "version" ver "MiniDebugInfo (.gnu_debugdata): liblzma.so.5"
check_grep "version" ver "/usr/lib/debug/.build-id"
DEBUGINFOD_URLS=http://127.0.0.1:9/ "$EMBERPROF" version >ver2 2>&1
check_grep "version, DEBUGINFOD_URLS set" ver2 "DEBUGINFOD_URLS set"
check_no_grep "version, DEBUGINFOD_URLS set: its value is not printed" ver2 "127.0.0.1:9"

awk 'BEGIN { x = 7; for (i = 0; i < 300000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%d %x line\n", x % 1000, x } }' >data
env -u DEBUGINFOD_URLS "$EMBERPROF" run -o gz --rate 1000 -- gzip -9 -c data >/dev/null 2>sum
check_exit "run gzip" 0 $?
# "no function name for 97.3% of cpu, in:" then "  97.3%  gzip  /usr/bin/gzip ..."
check_grep "run summary" sum "no function name for "
share=$(sed -n 's/.*  *\([0-9.]*\)%  gzip  *\/usr\/bin\/gzip.*/\1/p' sum | head -1)
if [ -n "$share" ] && [ "${share%.*}" -ge 50 ]; then
	ok "run summary: gzip's unnamed share is ${share}%"
else
	fail "run summary: no line for gzip with its share (>= 50%):"
	sed 's/^/    /' sum >&2
fi
check_grep "run summary" sum "DEBUGINFOD_URLS="
check_grep "run summary" sum "emberprof symbolize"
if command -v dpkg-query >/dev/null 2>&1 && dpkg-query -S /bin/gzip >/dev/null 2>&1; then
	check_grep "run summary: the package" sum "apt install gzip-dbgsym"
fi

set -- gz/*.pb.gz
"$EMBERPROF" top "$@" >top 2>err
check_exit "top" 0 $?
check_grep "top" top "no function name for "
check_grep "top" top "/usr/bin/gzip"
DEBUGINFOD_URLS=http://127.0.0.1:9/ "$EMBERPROF" top "$@" >top2 2>&1
check_grep "top, DEBUGINFOD_URLS set" top2 "DEBUGINFOD_URLS is set"
check_no_grep "top, DEBUGINFOD_URLS set: its value is not printed" top2 "127.0.0.1:9"

# a program whose functions have names: no word about missing ones
"$EMBERPROF" run -o demo --rate 500 -- "$EMBER_DEMO" --threads 1 --seconds 1 >/dev/null 2>dsum
check_exit "run the demo" 0 $?
check_grep "demo summary" dsum "hot_a"
check_no_grep "demo summary" dsum "no function name"
done_tests
