#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_no_s3.sh BUILD - a build without the S3 reporter (EMBER_S3=OFF, as
# on a machine without jansson or libzip) profiles as usual, and a request
# for S3 fails with a message naming the missing packages ("Bad
# input"). Run by `make test-release` on its clang build, which is
# configured with -DEMBER_S3=OFF.
set -u
B=${1:?usage: test_no_s3.sh BUILD}
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
grep -q '^EMBER_S3:STRING=OFF$' "$B/CMakeCache.txt" || fail "$B is not configured with EMBER_S3=OFF"
if ldd "$B/libemberprof.so" | grep -q jansson; then
	fail "libemberprof.so links jansson in a build without the S3 reporter"
fi
"$B/emberprof" run --s3-bucket some-bucket -- /bin/true >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 2 ] || fail "run --s3-bucket exited $rc, not 2 (bad configuration)"
grep -q 'built without the S3 reporter' "$T/err" && grep -q 'libjansson-dev libzip-dev' "$T/err" ||
	fail "the message does not name what is missing: $(cat "$T/err")"
"$B/emberprof" version >"$T/v" 2>&1 || fail "emberprof version failed"
grep -q 'libzip (S3 reporter): no: this emberprof was built without the S3 reporter' "$T/v" ||
	fail "emberprof version does not say the S3 reporter is left out: $(cat "$T/v")"
"$B/emberprof" run -q -o "$T/prof" -- "$B/emberprof_demo" >/dev/null 2>"$T/err2" ||
	fail "profiling the demo failed without S3: $(cat "$T/err2")"
ls "$T/prof"/*.pb.gz >/dev/null 2>&1 || fail "no profile written without S3"
echo "ok: without S3: profiles written, --s3-bucket refused naming libjansson-dev and libzip-dev"
