#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# check_needed.sh LIB... - the libraries libemberprof.so makes the dynamic
# loader load into every program it is preloaded into (its DT_NEEDED) are
# libc's alone: elfutils, zlib and jansson are loaded at first use
# (src/util/lazydep.h), libcurl and libzip when a reporter needs them, and
# libm is not used. A sanitizer build adds its runtimes (allowed with
# --sanitized). A shell loop's /bin/true must not pay for them.
sanitized=0
if [ "$1" = --sanitized ]; then sanitized=1; shift; fi
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf (binutils) not installed"; exit 77; }
rc=0
for lib in "$@"; do
	needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	[ -n "$needed" ] || { echo "FAIL: no NEEDED entries read from $lib"; rc=1; continue; }
	for n in $needed; do
		case $n in
		libc.so.*|ld-linux*.so.*) ;;
		libasan.so.*|libubsan.so.*|libtsan.so.*) [ $sanitized = 1 ] || { echo "FAIL: $lib needs $n"; rc=1; } ;;
		*) echo "FAIL: $(basename "$lib") needs $n, which every profiled process would load at start"; rc=1 ;;
		esac
	done
	[ $rc = 0 ] && echo "ok   $(basename "$lib") needs only: $(echo $needed)"
done
exit $rc
