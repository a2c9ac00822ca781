#!/usr/bin/env bash
# check_compile.sh CC INCLUDE_DIR FILE EXPECT
# EXPECT=ok: FILE must compile. EXPECT=fail: it must fail, and the error
# must be reported on the line marked EXPECT-ERROR (so that an unrelated
# error cannot make the test pass).
set -u
cc=$1 inc=$2 file=$3 expect=$4
# No -Werror: misuse must fail with default flags.
out=$("$cc" -std=c11 -fsyntax-only -I "$inc" "$file" 2>&1)
rc=$?
if [ "$expect" = ok ]; then
  [ $rc -eq 0 ] && { echo "compiles, as it should"; exit 0; }
  echo "expected to compile:"; echo "$out"; exit 1
fi
line=$(grep -n 'EXPECT-ERROR' "$file" | cut -d: -f1)
if [ $rc -ne 0 ] && echo "$out" | grep -q "$(basename "$file"):$line:.*error"; then
  echo "rejected at line $line, as it should be:"; echo "$out" | grep error | head -3; exit 0
fi
echo "expected a compile error at line $line of $file, got (rc=$rc):"; echo "$out"; exit 1
